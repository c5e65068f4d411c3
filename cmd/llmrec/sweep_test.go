package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/analyze/sweep"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
)

// kneeScenario is one idle vLLM engine whose batch holds 16 requests:
// more wait in its queue. A step takes 15 ms + 1 ms per further request
// in the batch, so decode grows with the load up to 16 clients and not
// beyond.
const kneeScenario = `
name = "knee"
[[engine]]
name = "vllm"
format = "vllm"
  [engine.serve]
  batch = 16
  step = "15ms"
  step_per_request = "1ms"
`

// kneeBatch is kneeScenario's batch: the capacity.
const kneeBatch = 16

// sweepRun is a recorded sweep of kneeScenario at 2, 4, 8, 16 and 32
// clients, with the load generator's records.
type sweepRun struct {
	dir, client string
}

// recordSweep records the sweep: about 20 s.
func recordSweep(t *testing.T) sweepRun {
	t.Helper()
	srv := serveScenario(t, kneeScenario, "knee.toml", sim.Options{})
	dir, out := recordLoad(t, srv.Targets()[0], 200*time.Millisecond, 400*time.Millisecond,
		"--stages", "2:3s,4:3s,8:3s,16:3s,32:4s", "--warmup", "500ms", "--prompt-tokens", "40", "--output-tokens", "32")
	return sweepRun{dir: dir, client: out}
}

// recordLoad records target tg every interval while llmrec load runs
// with args (its phases marked through the recording's mark endpoint),
// idle for settle before and after; it returns the recording and the
// load's client record.
func recordLoad(t *testing.T, tg sim.Target, interval, settle time.Duration, args ...string) (dir, client string) {
	t.Helper()
	dir = t.TempDir()
	cfg := &record.Config{Targets: []record.Target{{Name: tg.Name, URL: tg.MetricsURL,
		Interval: record.Duration(interval)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	marks, err := record.ListenMarks("127.0.0.1:0", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer marks.Close()
	rctx, stopRec := context.WithCancel(context.Background())
	recErr := make(chan error, 1)
	go func() {
		_, err := record.Run(rctx, cfg, record.Options{Dir: dir})
		recErr <- err
	}()
	time.Sleep(settle) // idle polls before the load
	client = filepath.Join(t.TempDir(), "load.jsonl")
	args = append([]string{"load", "--url", tg.URL, "--mark", "http://" + marks.Addr() + "/mark", "-o", client}, args...)
	if _, stderr, err := runCLI(args...); err != nil {
		t.Fatalf("load: %v\n%s", err, stderr)
	}
	time.Sleep(settle)
	stopRec()
	if err := <-recErr; err != nil {
		t.Fatal(err)
	}
	return dir, client
}

// clientP99 is the client's own p99 of a latency over the requests of
// phase name: the truth an SLO's verdict is checked against.
func clientP99(run *client.Run, name string, of func(*client.Request) float64) float64 {
	var xs []float64
	for i := range run.Requests {
		if q := &run.Requests[i]; q.Phase == name {
			if x := of(q); !math.IsNaN(x) {
				xs = append(xs, x)
			}
		}
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		return math.NaN()
	}
	return xs[min(len(xs)-1, int(math.Ceil(0.99*float64(len(xs))))-1)]
}

// End to end, about 20 s, as a user sweeps 2, 4, 8, 16 and 32 clients
// against an engine whose batch holds 16: the sweep has a point per
// level in order of offered load, the knee between 16 and 32 clients
// (the 32 clients' level saturated: requests queued on capacity while
// the batch held 16), and no saturation below. The SLOs' boundaries fall
// where the client's own latencies put them: TTFT p99 ≤ 500 ms passes
// while every request finds a place in the batch and fails once half of
// them wait a whole request's time; each level's verdict agrees with
// the client's p99 over the same phase where that is clear of the
// threshold by 20 %.
func TestSweepKneeAtCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s end-to-end load run")
	}
	run := recordSweep(t)
	slos, err := sweep.ParseSLOs("ttft_p99=500ms,itl_p50=25ms")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.ReadFile(run.client, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{run.dir}, SkipPolls: true, SLOs: slos, GPUs: 1, GPUHourUSD: 2,
		Clients: []*client.Run{cl}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := res.WriteSummary(&text); err != nil {
		t.Fatal(err)
	}
	t.Log(text.String())
	if len(res.Sweep.Curves) != 1 {
		t.Fatalf("%d curves, want 1 (one target): %s", len(res.Sweep.Curves), res.Sweep.Reason)
	}
	c := &res.Sweep.Curves[0]
	var names []string
	for _, p := range c.Points {
		names = append(names, p.Phase)
	}
	want := []string{"concurrency 2", "concurrency 4", "concurrency 8", "concurrency 16", "concurrency 32"}
	if !slices.Equal(names, want) {
		t.Fatalf("points %q, want %q", names, want)
	}
	for i, p := range c.Points {
		clients := []float64{2, 4, 8, 16, 32}[i]
		if !p.Offered.Value.Valid || math.Abs(p.Offered.Value.V-clients) > 0.25*clients {
			t.Errorf("%s: offered %v (%s), want about %v", p.Phase, p.Offered.Value, p.Offered.Source, clients)
		}
		if want := clients > kneeBatch; p.Saturated != want {
			t.Errorf("%s: saturated %v, want %v: %v", p.Phase, p.Saturated, want, p.Saturation)
		}
		if !p.CostPerMTokens.Value.Valid || !p.PerGPU.Value.Valid {
			t.Errorf("%s: cost %v, per GPU %v", p.Phase, p.CostPerMTokens, p.PerGPU)
		}
	}
	top := &c.Points[4]
	if r := top.Running.Value; !r.Valid || math.Abs(r.V-kneeBatch) > 1.5 {
		t.Errorf("at 32 clients %v running, want about the batch, %d", r, kneeBatch)
	}
	if c.Knee.Last != "concurrency 16" || c.Knee.First != "concurrency 32" {
		t.Errorf("knee %q → %q, want concurrency 16 → 32: %s", c.Knee.Last, c.Knee.First, c.Knee.Text)
	}
	kinds := map[string]bool{}
	for _, e := range c.Knee.Evidence {
		kinds[e.Kind] = true
	}
	// The queue is the server's evidence; how far decode still rose
	// depends on how much the loaded test machine slowed the simulator.
	if !kinds[sweep.EvQueued] || !kinds[sweep.EvCapacity] || c.Knee.Fact == "" {
		t.Errorf("knee evidence %v, fact %q: want queued and capacity queueing, tied to the engine's ceiling fact", c.Knee.Evidence, c.Knee.Fact)
	}

	// Each level's verdict agrees with the client's own p99 where that is
	// clear of the threshold.
	ttft := func(q *client.Request) float64 {
		if !q.TTFT.Valid {
			return math.NaN()
		}
		return q.TTFT.V
	}
	for i, p := range c.Points {
		truth := clientP99(cl, p.Phase, ttft)
		a := p.SLOs[0]
		if !a.Exact {
			t.Errorf("%s: %s at a bucket bound is not exact: %+v", p.Phase, a.SLO, a)
		}
		switch {
		case truth < 0.8*slos[0].Threshold && a.Verdict != sweep.Pass,
			truth > 1.2*slos[0].Threshold && a.Verdict != sweep.Fail:
			t.Errorf("%s: %s %s, the client's p99 %.0f ms", p.Phase, a.SLO, a.Verdict, 1000*truth)
		}
		if i == 4 && truth < 1.2*slos[0].Threshold {
			t.Errorf("at 32 clients the client's TTFT p99 is %.0f ms: no queue to fail the SLO", 1000*truth)
		}
	}
	b := c.Boundaries[0]
	if b.Pass != "concurrency 16" || b.Fail != "concurrency 32" {
		t.Errorf("%s boundary %q → %q, want concurrency 16 → 32: %s", b.SLO, b.Pass, b.Fail, b.Text)
	}
	if !b.At.Valid || b.At.V <= b.PassOffered.V || b.At.V >= b.FailOffered.V || b.Shape == "" {
		t.Errorf("%s boundary fit %v, shape %q, outside (%v, %v): %s", b.SLO, b.At, b.Shape, b.PassOffered, b.FailOffered, b.How)
	}
	if g := top.Goodput; g == nil || g.Requests == 0 || g.Good >= g.Requests {
		t.Errorf("at 32 clients goodput %+v: want some requests to miss the SLOs", g)
	}

	// The report lays the sweep out as the analysis has it: the knee and
	// the boundary in words, three charts, a row per level.
	page, err := render.FromAnalysis(render.Input{Result: res})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(page.Sections, func(s render.Section) bool { return s.ID == "sweep" })
	if i < 0 || len(page.Sections[i].Sections) != 1 {
		t.Fatalf("no sweep section of one curve in the report")
	}
	sub := page.Sections[i].Sections[0]
	notes := strings.Join(sub.Notes, "\n")
	if !strings.Contains(notes, "knee between concurrency 16") || !strings.Contains(notes, "SLO ttft_p99: passes up to concurrency 16") ||
		len(sub.Charts) != 3 || len(sub.Tables) != 1 || len(sub.Tables[0].Rows) != 5 {
		t.Errorf("sweep section: %d charts, %d tables, notes:\n%s", len(sub.Charts), len(sub.Tables), notes)
	}

	// The run against itself: every level matched with no change, the
	// boundary not lower, so --fail-on boundary passes.
	js, diffPage := filepath.Join(t.TempDir(), "diff.json"), filepath.Join(t.TempDir(), "diff.html")
	stdout, stderr, err := runCLI("diff", run.dir, "--", run.dir, "--slo", "ttft_p99=500ms", "--fail-on", "boundary", "--json", js, "-o", diffPage, "--quiet")
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "sweep on vllm") || !strings.Contains(stdout, "SLO ttft_p99: baseline passes to concurrency 16") {
		t.Errorf("the diff's table lacks the sweep:\n%s", stdout)
	}
	html, err := os.ReadFile(diffPage)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "Sweeps: both sides&#39; curves") || !strings.Contains(string(html), "sweeps-vllm-throughput") {
		t.Errorf("the diff page lacks the sweeps section and its overlaid chart")
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sweeps []diff.SweepDiff `json:"sweeps"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Sweeps) != 1 || len(doc.Sweeps[0].Levels) != 5 {
		t.Fatalf("diff sweeps %+v: want one with 5 levels", doc.Sweeps)
	}
	for _, l := range doc.Sweeps[0].Levels {
		if l.Baseline != l.Candidate || !l.Decode.Valid || l.Decode.V != 0 {
			t.Errorf("level %s ↔ %s: decode change %v, want 0", l.Baseline, l.Candidate, l.Decode)
		}
	}
	if _, _, err := runCLI("diff", run.dir, "--", run.dir, "--fail-on", "boundary", "--quiet"); !errors.Is(err, errUsage) {
		t.Errorf("--fail-on boundary without --slo: %v, want a usage error", err)
	}
}

// A marked run diffed with its client files: the client's cut of each
// marked phase covers the same polls, so its engine rows are compared once,
// under the mark's name (the recipe's verdict counted 53 worse rows, half
// of them the same rows again as "client: concurrency 2"), and the cut is
// said in not_compared.
func TestDiffClientCutsCountedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("two short marked load runs")
	}
	srv := serveScenario(t, kneeScenario, "knee.toml", sim.Options{})
	var dirs, clients [2]string
	for i := range dirs {
		dirs[i], clients[i] = recordLoad(t, srv.Targets()[0], 200*time.Millisecond, 300*time.Millisecond,
			"--stages", "2:3s,4:3s", "--prompt-tokens", "40", "--output-tokens", "16")
	}
	js := filepath.Join(t.TempDir(), "diff.json")
	if _, stderr, err := runCLI("diff", "--quiet", "--json", js, "--client-base", clients[0], "--client-cand", clients[1], dirs[0], "--", dirs[1]); err != nil {
		t.Fatalf("diff: %v\n%s", err, stderr)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep diff.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	marked, client := 0, 0
	for _, r := range rep.Rows {
		switch {
		case r.Target == "client":
			client++
		case strings.HasPrefix(r.Phase, "client: "):
			t.Errorf("row %s · %s %s: the client's cut compared again", r.Phase, r.Target, r.Quantity)
		case r.Phase == "concurrency 2":
			marked++
		}
	}
	if marked == 0 || client == 0 {
		t.Errorf("%d rows of the marked phase, %d client rows: want both", marked, client)
	}
	if !slices.ContainsFunc(rep.NotCompared, func(s string) bool { return strings.HasPrefix(s, "client: concurrency 2 on ") }) {
		t.Errorf("not_compared %q: want the client's cut of concurrency 2", rep.NotCompared)
	}
}
