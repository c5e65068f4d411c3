package stat_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/diff/stat"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/phases"
	recorder "github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// The calibration scenario: a vLLM and a llama.cpp engine, idle, then a
// steady load for steadyFor, then idle. The simulator's counters are exact
// (rate × time), so the load itself carries the noise: its level moves
// every wobbleEvery as an AR(1) process on the log scale (lag-1
// correlation wobblePhi from one step to the next, spread wobbleSigma),
// drawn from the seed. Polls are then autocorrelated as real ones are, and
// blocks, not polls, must be the sample.
const (
	calInterval = time.Second
	calLead     = 12 * time.Second
	steadyFor   = 160 * time.Second
	wobbleEvery = 4 * time.Second
	wobblePhi   = 0.7
	wobbleSigma = 0.05
)

// scale multiplies a side's levels: decode rate (both engines) and TTFT
// (vLLM); sigma, when set, replaces wobbleSigma.
type scale struct{ decode, ttft, sigma float64 }

// calScenario is one side: pair k's engines "vllm-k" and "llama-k" for
// each k in ks, their wobble drawn from seed(k).
func calScenario(ks []int, seed func(k int) uint64, s scale) *sim.Scenario {
	sc := &sim.Scenario{Name: "aa", Start: sim.DefaultStart, Duration: calLead + steadyFor + 4*time.Second}
	for _, k := range ks {
		rng := rand.New(rand.NewPCG(seed(k), 0xa1a))
		sigma := cmp.Or(s.sigma, wobbleSigma)
		for _, llama := range []bool{false, true} {
			es := sim.EngineSpec{Name: fmt.Sprintf("vllm-%d", k), Format: sim.FormatVLLM}
			if llama {
				es = sim.EngineSpec{Name: fmt.Sprintf("llama-%d", k), Format: sim.FormatLlamaCpp, Slots: 4}
			}
			es.Phases = append(es.Phases, sim.Phase{At: 0, Idle: true, KVUsage: -1})
			x := rng.NormFloat64() * sigma
			for t := calLead; t < calLead+steadyFor; t += wobbleEvery {
				f := math.Exp(x)
				p := sim.Phase{At: t, KVUsage: -1, Running: 32, Waiting: 2, OutputLen: 200,
					DecodeTPS: math.Round(2000 * f * s.decode), TTFT: time.Duration(float64(200*time.Millisecond) * f * s.ttft)}
				if llama {
					p.Running, p.Waiting, p.OutputLen = 4, 0, 12
					p.DecodeTPS, p.TTFT = math.Round(400*f*s.decode), 0
				}
				p.PromptTPS = 2 * p.DecodeTPS
				es.Phases = append(es.Phases, p)
				x = wobblePhi*x + math.Sqrt(1-wobblePhi*wobblePhi)*sigma*rng.NormFloat64()
			}
			es.Phases = append(es.Phases, sim.Phase{At: calLead + steadyFor, Idle: true, KVUsage: -1})
			sc.Engines = append(sc.Engines, es)
		}
	}
	return sc
}

// blocksOf records the scenario, analyses it with the steady stretch as a
// named phase (settled: from 10 s in), and returns the blocks of each
// engine's figures by "target/figure".
func blocksOf(t *testing.T, sc *sim.Scenario, seed int64) map[string]*phases.Blocks {
	t.Helper()
	dir := t.TempDir()
	if _, err := recorder.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: calInterval, Seed: seed}, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	t0 := float64(sc.Start.Unix())
	ph := phases.Phase{Name: "steady", Kind: phases.KindNamed, Source: phases.SourceFile,
		Start: t0 + (calLead + 8*time.Second).Seconds(), End: t0 + (calLead + steadyFor).Seconds()}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}, SkipPolls: true, Phases: []phases.Phase{ph}, Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*phases.Blocks{}
	for _, m := range res.Output.Phases {
		if m.Name != "steady" {
			continue
		}
		for _, tf := range m.Targets {
			for _, f := range tf.Figures {
				out[tf.Target+"/"+f.Name] = f.Blocks
			}
		}
	}
	return out
}

func values(b *phases.Blocks) []float64 {
	if b == nil {
		return nil
	}
	out := make([]float64, len(b.Values))
	for i, v := range b.Values {
		out[i] = math.NaN()
		if v.Valid {
			out[i] = v.V
		}
	}
	return out
}

// The quantities calibrated: decode tokens/s on both engines, TTFT p99 on
// vLLM (llama.cpp publishes no latency histogram).
var calQuantities = []struct{ engine, figure string }{
	{"vllm", engine.DecodeTokensPerSecond},
	{"llama", engine.DecodeTokensPerSecond},
	{"vllm", engine.TTFT + "__p99"},
}

func key(k int, q struct{ engine, figure string }) string {
	return fmt.Sprintf("%s-%d/%s", q.engine, k, q.figure)
}

func pairs(n int) []int {
	ks := make([]int, n)
	for k := range ks {
		ks[k] = k
	}
	return ks
}

// Threshold is the default noise threshold a verdict needs the change's
// interval to clear.
const threshold = 0.05

// A/A: 40 pairs of the same scenario, the load's wobble and the scrapes'
// timing from different seeds. Fed block by block through Compare, the
// test says p < 0.05 in about 5 % of the comparisons (measured and logged),
// and the verdict rule the diff applies — worse or better only when
// p < 0.05 and the change's interval lies wholly beyond ±5 % — fires in at
// most 5 % of them. Per-poll values would not: the polls of one run are
// correlated (see docs/diff-method.md).
func TestAACalibration(t *testing.T) {
	// 40 pairs take some 20 s of CPU (the simulated vLLM bodies are
	// compressed as the recorder writes them); -short runs 12.
	npairs := 40
	if testing.Short() {
		npairs = 12
	}
	ks := pairs(npairs)
	// Both sides are one recording each, every pair's engines side by side.
	a := blocksOf(t, calScenario(ks, func(k int) uint64 { return uint64(2*k + 1) }, scale{1, 1, 0}), 1)
	b := blocksOf(t, calScenario(ks, func(k int) uint64 { return uint64(2*k + 2) }, scale{1, 1, 0}), 2)
	n, sig, excl0, verdict := 0, 0, 0, 0
	worst := 0.0
	for _, k := range ks {
		for _, q := range calQuantities {
			r := stat.Compare(values(a[key(k, q)]), values(b[key(k, q)]), 0.95)
			if r.Insufficient != "" {
				t.Fatalf("pair %d %s: %s (%v)", k, key(k, q), r.Insufficient, a[key(k, q)])
			}
			n++
			if r.P < 0.05 {
				sig++
			}
			if r.ChangeLo > 0 || r.ChangeHi < 0 {
				excl0++
			}
			if r.Significant(0.05) && r.Beyond(threshold) != 0 {
				verdict++
			}
			worst = max(worst, math.Abs(r.Change))
		}
	}
	rate := func(x int) float64 { return float64(x) / float64(n) }
	t.Logf("A/A: %d comparisons (%d pairs × %d quantities): p < 0.05 in %.1f %%, interval excludes 0 in %.1f %%, verdict (p < 0.05 and interval beyond ±%.0f %%) in %.1f %%; largest |change| %.2f %%",
		n, npairs, len(calQuantities), 100*rate(sig), 100*rate(excl0), 100*threshold, 100*rate(verdict), 100*worst)
	if rate(verdict) > 0.05 {
		t.Errorf("A/A verdicts in %.1f %% of comparisons, want ≤ 5 %%", 100*rate(verdict))
	}
	// The test itself holds its level: blocks are independent enough. (With
	// 120 comparisons a true 5 % rate exceeds 12.5 % with probability
	// below 0.3 %.)
	if rate(sig) > 0.125 {
		t.Errorf("A/A p < 0.05 in %.1f %% of comparisons, want about 5 %% (≤ 12.5 %%)", 100*rate(sig))
	}
}

// Known effects, on a steadier load (the level wobbles by 2 %): decode
// 10 % slower (both engines) reads as a change whose interval holds −10 %
// and lies beyond −5 %; a 2 % change does not clear the 5 % threshold; TTFT
// 30 % longer is worse (its p99 is read from the histogram's buckets,
// interpolated inside one, so it moves by less than 30 %: logged).
func TestKnownEffects(t *testing.T) {
	const steady = 0.02
	cases := []struct {
		name   string
		s      scale
		q      int // calQuantities from
		want   float64
		verdit bool // the interval lies beyond the threshold and p < 0.05
	}{
		{"decode −10 %", scale{0.9, 1, steady}, 0, -0.10, true},
		{"decode −2 %", scale{0.98, 1, steady}, 0, -0.02, false},
		// The p99 is read from histogram buckets (interpolated linearly
		// inside one): it moves by about, not exactly, +30 %.
		{"TTFT +30 %", scale{1, 1.3, steady}, 2, math.NaN(), true},
	}
	ks := pairs(5)
	a := blocksOf(t, calScenario(ks, func(k int) uint64 { return uint64(100 + 2*k) }, scale{1, 1, steady}), 3)
	for _, c := range cases {
		b := blocksOf(t, calScenario(ks, func(k int) uint64 { return uint64(101 + 2*k) }, c.s), 4)
		held, runs := 0, 0
		for _, k := range ks {
			qs := calQuantities[c.q:]
			if c.q == 0 {
				qs = calQuantities[:2]
			}
			for _, q := range qs {
				r := stat.Compare(values(a[key(k, q)]), values(b[key(k, q)]), 0.95)
				runs++
				if r.ChangeLo <= c.want && c.want <= r.ChangeHi {
					held++
				}
				if got := r.Significant(0.05) && r.Beyond(threshold) != 0; got != c.verdit {
					t.Errorf("%s, pair %d, %s: change %+.2f %% [%+.2f, %+.2f] p=%.3g: verdict %v, want %v",
						c.name, k, key(k, q), 100*r.Change, 100*r.ChangeLo, 100*r.ChangeHi, r.P, got, c.verdit)
				}
				if math.IsNaN(c.want) {
					t.Logf("%s, pair %d: %+.1f %% [%+.1f, %+.1f]", c.name, k, 100*r.Change, 100*r.ChangeLo, 100*r.ChangeHi)
				}
			}
		}
		if math.IsNaN(c.want) {
			continue
		}
		t.Logf("%s: the interval held the true change in %d of %d comparisons", c.name, held, runs)
		// A 95 % interval misses now and then; most must hold it.
		if held < runs*8/10 {
			t.Errorf("%s: the interval held %+.0f %% in only %d of %d comparisons", c.name, 100*c.want, held, runs)
		}
	}
}

func Example() {
	r := stat.Compare([]float64{100, 102, 98, 101, 99, 100}, []float64{90, 91.8, 88.2, 90.9, 89.1, 90}, 0.95)
	fmt.Printf("%+.1f %% [%+.1f, %+.1f] p=%.3f\n", 100*r.Change, 100*r.ChangeLo, 100*r.ChangeHi, r.P)
	// Output: -10.0 % [-11.8, -8.2] p=0.002
}
