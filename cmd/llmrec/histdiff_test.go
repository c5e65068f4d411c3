package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// abScenario serves two vLLM engines with real requests: "base", and
// "cand" whose decode steps are 20 % slower (12 ms + 1.2 ms per further
// request against 10 ms + 1 ms). With 32 output tokens at concurrency 8
// (a step of 17 ms against 20.4 ms) both engines' ITL and TPOT fall in
// vLLM's (10, 25] ms bucket and their e2e (about 0.6 s and 0.7 s) in
// (0.5, 0.8] s.
const abScenario = `
name = "ab"
[[engine]]
name = "base"
format = "vllm"
  [engine.serve]
  batch = 8
  step = "10ms"
  step_per_request = "1ms"
[[engine]]
name = "cand"
format = "vllm"
  [engine.serve]
  batch = 8
  step = "12ms"
  step_per_request = "1.2ms"
`

// The A/B: the simulator serves a baseline and a candidate whose
// decode steps are 20 % slower; llmrec record scrapes each every 50 ms
// while llmrec load drives it at concurrency 8 for 8 s, marking the stage;
// llmrec diff compares the two run folders by the marked phase, the
// phase's blocks as samples. The ITL, TPOT and e2e p50 of both sides fall
// in one bucket: those rows are insufficient, "inside (a, b]", never ~;
// their exact means (Δsum/Δcount) are above the baseline's, worse where the
// blocks are steady enough (the simulator runs in real time: a loaded
// machine spreads them), and --fail-on worse then fails. The same A/B in
// simulated time, where the verdicts are exact, is package diff's
// TestSlowerStepsInsideOneBucket.
func TestDiffSlowerStepsInsideOneBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("9 s end-to-end A/B")
	}
	srv := serveScenario(t, abScenario, "ab.toml", sim.Options{NoMemoryLog: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dirs, urls := map[string]string{}, map[string]string{}
	recErr := make(chan error, 2)
	for _, tg := range srv.Targets() {
		urls[tg.Name] = tg.URL
		cfg := &record.Config{Targets: []record.Target{{Name: "vllm", URL: tg.MetricsURL,
			Interval: record.Duration(50 * time.Millisecond)}}}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		dirs[tg.Name] = t.TempDir()
		m, err := record.ListenMarks("127.0.0.1:0", dirs[tg.Name], false)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		urls[tg.Name+"/mark"] = "http://" + m.Addr() + "/mark"
		go func() {
			_, err := record.Run(ctx, cfg, record.Options{Dir: dirs[tg.Name]})
			recErr <- err
		}()
	}
	time.Sleep(300 * time.Millisecond) // a few polls before the load
	var wg sync.WaitGroup
	for _, name := range []string{"base", "cand"} {
		wg.Go(func() {
			_, stderr, err := runCLI("load", "--url", urls[name], "--stages", "8:8s", "--prompt-tokens", "50", "--output-tokens", "32",
				"--format", "jsonl", "-o", filepath.Join(t.TempDir(), "requests.jsonl"), "--mark", urls[name+"/mark"])
			if err != nil {
				t.Errorf("load %s: %v\n%s", name, err, stderr)
			}
		})
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond)
	cancel()
	for range 2 {
		if err := <-recErr; err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	js := filepath.Join(t.TempDir(), "diff.json")
	if _, stderr, err := runCLI("diff", dirs["base"], "--", dirs["cand"], "--json", js); err != nil {
		t.Fatalf("diff: %v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep diff.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	rows := map[string]diff.Row{}
	for _, r := range rep.Rows {
		// The marked stage (the other phase is the load's warmup).
		if r.Phase != "warmup" && r.Origin == diff.OriginServer {
			rows[r.Quantity] = r
		}
	}
	worse := 0
	for _, base := range []string{"itl", "tpot", "e2e"} {
		p50, ok := rows[base+"_p50"]
		if !ok {
			t.Fatalf("no %s_p50 row; rows %v", base, rep.Rows)
		}
		t.Logf("%s p50: %v → %v %s: %s", base, p50.Baseline.Figure, p50.Candidate.Figure, p50.Verdict, p50.Why)
		one := p50.Baseline.Bucket.Same(p50.Candidate.Bucket)
		if one && (p50.Verdict != diff.Insufficient || !strings.HasPrefix(p50.Why, "inside (")) {
			t.Errorf("%s p50 in one bucket: %s (%s), want insufficient: inside (a, b]", base, p50.Verdict, p50.Why)
		}
		// ITL and TPOT are in (10, 25] ms on both sides whatever the load
		// (17 ms and 20.4 ms steps; a loaded machine stretches both).
		if base != "e2e" && !one {
			t.Errorf("%s p50 buckets %+v and %+v: the scenario puts both in (10, 25] ms", base, p50.Baseline.Bucket, p50.Candidate.Bucket)
		}
		// The exact means across the phase see the slower steps. Their
		// verdict rests on the blocks, whose spread grows with the
		// machine's load: worse on a quiet machine, never better.
		mean := rows[base+"_mean"]
		t.Logf("%s mean: %v → %v %s: %s", base, mean.Baseline.Figure, mean.Candidate.Figure, mean.Verdict, mean.Why)
		if r := mean.Candidate.Figure.V / mean.Baseline.Figure.V; !mean.Baseline.Figure.Valid || !mean.Candidate.Figure.Valid || !(r > 1.08) {
			t.Errorf("%s mean %v → %v: want the candidate's 8 %% or more above", base, mean.Baseline.Figure, mean.Candidate.Figure)
		}
		switch mean.Verdict {
		case diff.Worse:
			worse++
		case diff.Better, diff.Unlike, diff.Insufficient:
			t.Errorf("%s mean: %s (%s)", base, mean.Verdict, mean.Why)
		}
	}
	if worse == 0 {
		t.Logf("no mean row worse: the blocks spread too wide on this machine now (see the intervals above)")
		return
	}
	// The gate fails on the means.
	_, _, err = runCLI("diff", dirs["base"], "--", dirs["cand"], "--fail-on", "worse")
	if exitCode(err) != 1 {
		t.Errorf("--fail-on worse: exit %d, %v", exitCode(err), err)
	}
}
