package diff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// clientLoad is how a made-up client saw the load of engine("e", …, 12):
// 9 requests/s of 200 output tokens from 4 s to 64 s after the start,
// each TTFT about 0.2 s and e2e about 1.33 s (lognormal), plus queue
// seconds before the engine saw it; every errEvery-th request failed.
type clientLoad struct {
	queue    float64
	errEvery int
	seed     uint64
	power    float64 // W of one GPU through the run (0: no telemetry)
	// straggler, when set, is the end (Unix seconds) of one more request
	// started mid-run.
	straggler float64
}

// writeClient writes the client's generic JSONL (and an AIPerf GPU
// telemetry file when l.power) into dir; it returns the files.
func writeClient(t *testing.T, dir string, l clientLoad) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(l.seed, 99))
	t0 := float64(sim.DefaultStart.UnixNano())/1e9 + 4
	var b strings.Builder
	for i := 0; float64(i)/9 < 60-2; i++ {
		start := t0 + 0.05 + float64(i)/9
		ttft := 0.2*math.Exp(0.3*rng.NormFloat64()) + l.queue
		e2e := max(1.33*math.Exp(0.2*rng.NormFloat64())+l.queue, ttft+0.2)
		status := "ok"
		if l.errEvery > 0 && i%l.errEvery == 0 {
			status = "error"
		}
		fmt.Fprintf(&b, `{"start":%.6f,"end":%.6f,"ttft_s":%.6f,"input_tokens":533,"output_tokens":200,"status":%q,"phase":"profiling"}`+"\n",
			start, start+e2e, ttft, status)
	}
	if l.straggler > 0 {
		fmt.Fprintf(&b, `{"start":%.6f,"end":%.6f,"ttft_s":0.2,"input_tokens":533,"output_tokens":200,"status":"ok","phase":"profiling"}`+"\n",
			t0+30, l.straggler)
	}
	files := []string{filepath.Join(dir, "client.jsonl")}
	if err := os.WriteFile(files[0], []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if l.power > 0 {
		var p strings.Builder
		for s := t0 - 2; s < t0+64; s += 0.5 {
			fmt.Fprintf(&p, `{"timestamp_ns":%d,"gpu_uuid":"GPU-1","dcgm_url":"http://127.0.0.1:9400/metrics","telemetry_data":{"gpu_power_usage":%g}}`+"\n",
				int64(s*1e9), l.power)
		}
		files = append(files, filepath.Join(dir, "gpu_telemetry_export.jsonl"))
		if err := os.WriteFile(files[1], []byte(p.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// withClient records sc once and analyses it with the client files of l.
func withClient(t *testing.T, sc *sim.Scenario, seed int64, l clientLoad) Side {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second, Seed: seed, Info: true}, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	var runs []*client.Run
	for _, f := range writeClient(t, t.TempDir(), l) {
		run, err := client.ReadFile(f, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}, SkipPolls: true, Blocks: true, Clients: runs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return Side{Dirs: []string{dir}, Runs: []*analyze.Result{res}}
}

// The client's own figures are diff rows: same engine, but the
// candidate's requests waited 0.3 s before the engine and one in ten
// failed. The client's TTFT and e2e are worse (the per-request samples'
// interval holds the true change), its error rate worse, its throughput
// lower by the failed requests' tokens; the engine's TTFT is the same;
// and the client/server disagreement on one side only is a seam naming
// the queue. Energy per token is a row when both sides have telemetry:
// 300 W against 200 W.
func TestClientRows(t *testing.T) {
	t.Parallel()
	sc := scenario(engine("e", sim.Speed{}, "", 12))
	base := withClient(t, sc, 1, clientLoad{seed: 1, errEvery: 50, power: 200})
	cand := withClient(t, sc, 2, clientLoad{seed: 2, queue: 0.3, errEvery: 10, power: 300})
	rep, err := Compare(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(key string) Row { return row(t, rep, "profiling", ClientTarget, key) }
	tt := get("client_ttft_p50")
	// The median TTFT goes from 0.2 s to 0.5 s: +150 %.
	if tt.Verdict != Worse || tt.Origin != OriginClient || tt.Samples != SamplesRequests || !contains(tt, 1.5, 0.1) || tt.Baseline.N < 400 {
		t.Errorf("client TTFT p50: %s %s [%v, %v] n=%d (%s)", tt.Verdict, tt.Samples, tt.ChangeLo, tt.ChangeHi, tt.Baseline.N, tt.Why)
	}
	if p := get("client_ttft_p90"); p.Verdict != Worse || p.Method != "quantile test (pooled q-quantile, counts above it by side, two-proportion z); change: ratio of the sample quantiles, interval from each side's order-statistic interval at √conf" {
		t.Errorf("client TTFT p90: %s (%s) %s", p.Verdict, p.Why, p.Method)
	}
	// 500 requests a side are too few for a p99's interval: said, not guessed.
	if p := get("client_ttft_p99"); p.Verdict != Insufficient || !strings.Contains(p.Why, "too few for an interval") {
		t.Errorf("client TTFT p99: %s (%s)", p.Verdict, p.Why)
	}
	if e := get("client_e2e_p50"); e.Verdict != Worse {
		t.Errorf("client e2e p50: %s (%s)", e.Verdict, e.Why)
	}
	// One in ten failed against one in fifty: +400 %.
	if e := get("client_error_rate"); e.Verdict != Worse || !contains(e, 4, 0.01) {
		t.Errorf("client error rate: %s [%v, %v] (%s)", e.Verdict, e.ChangeLo, e.ChangeHi, e.Why)
	}
	// Tokens of the requests that ended ok: 90 % of the candidate's, 98 %
	// of the baseline's, over blocks of the phase.
	want := 0.9/0.98 - 1
	if o := get("client_output"); o.Verdict == Better || o.Samples != "blocks" || o.Baseline.N < 5 || !contains(o, want, 0.01) {
		t.Errorf("client output tokens/s: %s %s n=%d [%v, %v], want %.3f (%s)", o.Verdict, o.Samples, o.Baseline.N, o.ChangeLo, o.ChangeHi, want, o.Why)
	}
	// Joules per token: 1.5 × the power over those tokens.
	want = 1.5/(0.9/0.98) - 1
	if e := get("client_energy"); e.Verdict != Worse || !contains(e, want, 0.02) || !strings.Contains(e.Baseline.Source, "power integrated") {
		t.Errorf("client energy per token: %s [%v, %v] (%s) %s", e.Verdict, e.ChangeLo, e.ChangeHi, e.Why, e.Baseline.Source)
	}
	// The engine saw no queue: its TTFT is the same on both sides.
	if s := row(t, rep, "profiling", "e", "ttft_p50"); s.Verdict == Worse || s.Origin != OriginServer {
		t.Errorf("server TTFT p50: %s %s (%s)", s.Verdict, s.Origin, s.Why)
	}
	i := slices.IndexFunc(rep.Seams, func(s Seam) bool {
		return s.Kind == SeamClientServer && strings.HasPrefix(s.Detail, "profiling, ttft_p50_s")
	})
	if i < 0 {
		t.Fatalf("no client/server seam on TTFT p50: %+v", rep.Seams)
	}
	if s := rep.Seams[i]; s.Baseline != "agree" || s.Candidate != "disagree" || s.Blocks || !strings.Contains(s.Detail, "queue_before_engine") {
		t.Errorf("seam %+v", s)
	}
	if !slices.ContainsFunc(tt.Notes, func(n string) bool { return strings.Contains(n, "queue_before_engine") }) {
		t.Errorf("TTFT p50 row's notes %q", tt.Notes)
	}
	// Client rows are named by --threshold and --fail-on like the server's.
	if err := CheckFailOn([]string{"client_ttft_p50"}); err != nil {
		t.Error(err)
	}
	if got := rep.FailOn([]string{"client_error_rate"}); len(got) != 1 {
		t.Errorf("--fail-on client_error_rate: %q", got)
	}
}

// One straggler request of the candidate's, ending an hour after the run
// (or in 2262), is left out: the same load on both sides compares as the
// same (it made the candidate's output tokens/s about 0, "worse", and
// failed --fail-on worse).
func TestClientStragglerLeftOut(t *testing.T) {
	t.Parallel()
	sc := scenario(engine("e", sim.Speed{}, "", 12))
	base := withClient(t, sc, 1, clientLoad{seed: 1})
	t0 := float64(sim.DefaultStart.UnixNano()) / 1e9
	for name, end := range map[string]float64{"an hour late": t0 + 64 + 3600, "in 2262": 9.2e9} {
		cand := withClient(t, sc, 1, clientLoad{seed: 1, straggler: end})
		rep, err := Compare(base, cand, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if o := row(t, rep, "profiling", ClientTarget, "client_output"); o.Verdict == Worse || o.Verdict == Better || !contains(o, 0, 0.01) {
			t.Errorf("%s: client output tokens/s %s [%v, %v] (%s)", name, o.Verdict, o.ChangeLo, o.ChangeHi, o.Why)
		}
		if got := rep.FailOn([]string{Worse}); len(got) != 0 {
			t.Errorf("%s: --fail-on worse: %q", name, got)
		}
	}
}
