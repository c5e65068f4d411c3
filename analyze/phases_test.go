package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
	recorder "github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// schedule is a random phase schedule of one simulated engine: idle
// spells, steady levels, stalls (requests running, no token out),
// sometimes a restart inside a steady level, and slow or stale scrapes.
func schedule(rng *rand.Rand, llama bool, name string) (sim.EngineSpec, time.Duration) {
	es := sim.EngineSpec{Name: name, Format: sim.FormatVLLM}
	if llama {
		es.Format, es.Slots = sim.FormatLlamaCpp, 4
	}
	var steadies [][2]time.Duration
	t := time.Duration(0)
	prevBusy := false
	for t < 50*time.Second {
		p := sim.Phase{At: t, KVUsage: -1}
		var d time.Duration
		switch r := rng.Float64(); {
		case r < 0.3:
			p.Idle = true
			d = time.Duration(8+rng.IntN(10)) * time.Second
			prevBusy = false
		case r < 0.4 && prevBusy:
			// A stall: the batch holds requests and nothing comes out.
			p.Running, p.Waiting = 1+rng.IntN(4), rng.IntN(3)
			d = time.Duration(4+rng.IntN(6)) * time.Second
			prevBusy = false
		default:
			p.Running, p.Waiting = 1+rng.IntN(32), rng.IntN(5)
			p.DecodeTPS = float64(500 + rng.IntN(2500))
			p.OutputLen = 100 + rng.IntN(200)
			if llama {
				// Its decode counter moves when a request completes: short
				// requests keep the figure's granularity under 1 %.
				p.Running = 1 + rng.IntN(4)
				p.DecodeTPS, p.OutputLen = float64(300+rng.IntN(500)), 8+rng.IntN(9)
			}
			p.PromptTPS = math.Round(p.DecodeTPS * (1 + 3*rng.Float64()))
			p.CachedFraction = math.Round(50*rng.Float64()) / 100
			d = time.Duration(24+rng.IntN(20)) * time.Second
			steadies = append(steadies, [2]time.Duration{t, t + d})
			prevBusy = true
		}
		es.Phases = append(es.Phases, p)
		t += d
	}
	dur := t + 8*time.Second
	es.Phases = append(es.Phases, sim.Phase{At: t, Idle: true})
	if rng.Float64() < 0.3 && len(steadies) > 0 {
		s := steadies[rng.IntN(len(steadies))]
		es.Events = append(es.Events, sim.Event{At: s[0] + (s[1]-s[0])/2, Kind: sim.EventRestart})
	}
	if rng.Float64() < 0.4 {
		at := time.Duration(rng.IntN(int(dur/time.Second)-10)) * time.Second
		es.Events = append(es.Events, sim.Event{At: at, Kind: sim.EventSlow, Delay: 500 * time.Millisecond, For: 6 * time.Second})
	}
	if rng.Float64() < 0.4 {
		at := time.Duration(rng.IntN(int(dur/time.Second)-10)) * time.Second
		es.Events = append(es.Events, sim.Event{At: at, Kind: sim.EventStale, Delay: 900 * time.Millisecond, For: 5 * time.Second})
	}
	return es, dur
}

// truthRate integrates the simulator's true rate of one quantity over
// [a, b] (Unix seconds): the phases in force, piecewise constant.
func truthRate(sc *sim.Scenario, e int, a, b float64, of func(p *sim.Phase) float64) float64 {
	ps := sc.Engines[e].Phases
	t0 := float64(sc.Start.UnixNano()) / 1e9
	sum := 0.0
	for i := range ps {
		s := t0 + ps[i].At.Seconds()
		e := math.Inf(1)
		if i+1 < len(ps) {
			e = t0 + ps[i+1].At.Seconds()
		}
		lo, hi := max(s, a), min(e, b)
		if hi > lo {
			sum += of(&ps[i]) * (hi - lo)
		}
	}
	return sum
}

// truthAt is the simulator's true value of one quantity at offset at:
// the phase in force.
func truthAt(sc *sim.Scenario, e int, at time.Duration, of func(p *sim.Phase) float64) float64 {
	ps := sc.Engines[e].Phases
	i := slices.IndexFunc(ps, func(p sim.Phase) bool { return p.At > at })
	if i < 0 {
		i = len(ps)
	}
	return of(&ps[max(i-1, 0)])
}

// Phase figures are the engines' own counters across each phase: over
// random schedules of a simulated vLLM and llama.cpp (idle spells, steady
// levels, stalls, restarts, slow and stale scrapes), every steady phase of
// 20 s or more reads the simulator's true decode, prompt and finished
// request rates and mean running requests within 2 %, the signed errors
// average within ±1 % (no bias), and every idle phase reads exactly 0.
func TestPhaseFiguresTruth(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 40
	}
	type cmp struct {
		cell  string
		truth func(p *sim.Phase) float64
		llama bool // compared on llama.cpp too
	}
	cmps := []cmp{
		{engine.DecodeTokensPerSecond, func(p *sim.Phase) float64 { return p.DecodeTPS }, true},
		{engine.PromptTokensPerSecond, func(p *sim.Phase) float64 { return p.PromptTPS }, false},
		{engine.PromptTokensComputedPerSecond, func(p *sim.Phase) float64 { return p.PromptTPS * (1 - p.CachedFraction) }, true},
		{engine.RequestsFinishedPerSecond, func(p *sim.Phase) float64 {
			if p.DecodeTPS == 0 {
				return 0
			}
			return p.DecodeTPS / float64(p.OutputLen)
		}, false},
		{"requests_running__mean", func(p *sim.Phase) float64 { return float64(p.Running) }, true},
	}
	var errs []float64
	steady, idle := 0, 0
	worst, worstAt := 0.0, ""
	// Runs are recorded ten engines at a time: each engine is a target
	// of its own, with its own schedule.
	const perRecording = 10
	const interval = 2 * time.Second
	for first := 0; first < runs; first += perRecording {
		sc := &sim.Scenario{Name: "phases", Start: sim.DefaultStart}
		for run := first; run < min(first+perRecording, runs); run++ {
			rng := rand.New(rand.NewPCG(uint64(run), 0x9a5e))
			es, dur := schedule(rng, run%2 == 1, fmt.Sprintf("e%03d", run))
			sc.Engines = append(sc.Engines, es)
			sc.Duration = max(sc.Duration, dur)
		}
		dir := t.TempDir()
		generateIn(t, sc, dir, sim.GenerateOptions{Interval: interval, Seed: int64(first)})
		res, err := Analyze(Options{Dirs: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		engineOf := map[string]int{}
		for e, es := range sc.Engines {
			engineOf[es.Name] = e
		}
		pollsOf := map[string][]Poll{}
		for _, tg := range res.Targets {
			pollsOf[tg.Name] = tg.Polls
		}
		for _, m := range res.Output.Phases {
			tf := m.Targets[0]
			e := engineOf[tf.Target]
			run, llama := first+e, sc.Engines[e].Format == sim.FormatLlamaCpp
			polls := pollsOf[tf.Target]
			b := &tf.Bounds
			switch {
			case m.Kind == phases.KindIdle:
				f, _ := tf.Get(engine.DecodeTokensPerSecond)
				// An idle phase without two good polls measures nothing.
				if b.Reason != "" {
					continue
				}
				idle++
				if !f.Value.Valid || f.Value.V != 0 {
					t.Errorf("run %d (%s): %s %v-%v: decode %v %s, want exactly 0", run, sc.Engines[e].Format, m.Name, m.Start, m.End, f.Value, f.Reason)
				}
			case m.Kind == phases.KindSteady && m.Duration() >= 20:
				steady++
				for _, c := range cmps {
					if llama && !c.llama {
						continue
					}
					f, _ := tf.Get(c.cell)
					var truth, secs float64
					if c.cell == "requests_running__mean" {
						// A gauge's mean is over the polls inside the phase.
						n := 0
						for _, p := range polls {
							if p.T >= m.Start && p.T < m.End {
								// The body describes the moment it was rendered, after
								// its tick and before its first byte (much before, when
								// it is held stale).
								at := time.Duration(p.Seq)*interval + time.Duration(e)*interval/time.Duration(len(sc.Engines)) + time.Millisecond
								truth += truthAt(sc, e, at, c.truth)
								n++
							}
						}
						truth, secs = truth/float64(n), 1
					} else {
						for _, sp := range b.Spans {
							truth += truthRate(sc, e, sp[0], sp[1], c.truth)
							secs += sp[1] - sp[0]
						}
						truth /= secs
					}
					if !f.Value.Valid {
						t.Errorf("run %d: %s %s: null (%s)", run, m.Name, c.cell, f.Reason)
						continue
					}
					// A level of 0 (a stall inside the phase only) has no relative error.
					if truth == 0 {
						continue
					}
					rel := (f.Value.V - truth) / truth
					if c.cell == engine.DecodeTokensPerSecond {
						errs = append(errs, rel)
					}
					if math.Abs(rel) > math.Abs(worst) {
						worst, worstAt = rel, fmt.Sprintf("run %d %s %s", run, m.Name, c.cell)
					}
					if math.Abs(rel) > 0.02 {
						t.Errorf("run %d (%s): %s %.0f-%.0f s: %s = %.6g, truth %.6g (%+.2f %%)", run, sc.Engines[e].Format,
							m.Name, m.Start-float64(sc.Start.Unix()), m.End-float64(sc.Start.Unix()), c.cell, f.Value.V, truth, 100*rel)
					}
				}
			}
		}
	}
	mean := 0.0
	for _, e := range errs {
		mean += e
	}
	mean /= float64(len(errs))
	t.Logf("%d runs: %d steady phases ≥ 20 s, %d idle phases; decode: mean signed error %+.4f %%, worst %+.3f %% (%s)",
		runs, steady, idle, 100*mean, 100*worst, worstAt)
	if math.Abs(mean) > 0.01 {
		t.Errorf("mean signed error of decode figures %+.3f %%, want within ±1 %%", 100*mean)
	}
	// Too few phases measured would make the test say little.
	if steady < runs*3/4 || idle < runs/2 {
		t.Errorf("only %d steady and %d idle phases over %d runs", steady, idle, runs)
	}
}

// generateIn writes a simulated recording into one segment (no
// compaction): the cheapest real recording.
func generateIn(t *testing.T, sc *sim.Scenario, dir string, opts sim.GenerateOptions) {
	if _, err := recorder.WriteGenerated(dir, sc, opts, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
}

// The idle engine keeps advertising its last speed: after a load ends, a
// 10 s window (--span 10s) publishes decode for 10 polls. A 15 s idle
// phase's figure from the counters is 0, its published median is not, and
// that is a finding naming the phase and the cell; the busy headline is the
// steady level, while the whole recording's median is diluted by the idle
// time. With the default spans (every-step counters over the interval) the
// idle phase publishes 0 and there is nothing to say.
func TestIdleDisagreement(t *testing.T) {
	sc := &sim.Scenario{Name: "idle-after", Start: sim.DefaultStart, Duration: 120 * time.Second, Engines: []sim.EngineSpec{{
		Name: "v", Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, DecodeTPS: 2000, PromptTPS: 4000, Running: 16, OutputLen: 200, KVUsage: -1},
			{At: 20 * time.Second, Idle: true},
			{At: 35 * time.Second, DecodeTPS: 2000, PromptTPS: 4000, Running: 16, OutputLen: 200, KVUsage: -1},
			{At: 45 * time.Second, Idle: true},
		}}}}
	dir := t.TempDir()
	generateIn(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	idleDecode := func(res *Result) bool {
		for _, d := range res.Output.Disagreements {
			if d.Kind == phases.KindIdle && d.Figure == engine.DecodeTokensPerSecond && d.Value.V == 0 && d.Median.V > 0 {
				return true
			}
		}
		return false
	}
	def, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	if idleDecode(def) {
		t.Errorf("default spans: the idle phase's published decode disagrees: %+v", def.Output.Disagreements)
	}
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true, Gates: rate.Config{Span: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if !idleDecode(res) {
		t.Errorf("--span 10s: no disagreement on the idle phase's decode: %+v", res.Output.Disagreements)
	}
	s := &res.Targets[0].Summary
	busy, _ := s.Busy.Get(engine.DecodeTokensPerSecond)
	if !busy.Value.Valid || math.Abs(busy.Value.V-2000) > 20 {
		t.Errorf("busy decode %v, want 2000", busy.Value)
	}
	if h := s.Headlines[0]; !h.Median.Valid || h.Median.V > 1000 {
		t.Errorf("the whole recording's median %v should be diluted by the idle half", h.Median)
	}
}
