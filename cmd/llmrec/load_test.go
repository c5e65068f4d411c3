package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// loadScenario has two idle vLLM engines that serve real requests into a
// batch of 4: "clean" and "front", whose HTTP server handles two
// completion requests at a time (a queue before the engine, as in
// llama.cpp's HTTP threads); and "llama", a llama.cpp engine of 4 slots
// behind the same 2-thread front.
const loadScenario = `
name = "load"
[[engine]]
name = "llama"
format = "llamacpp"
  [engine.serve]
  batch = 4
  step = "15ms"
  step_per_request = "1ms"
  front_threads = 2
[[engine]]
name = "clean"
format = "vllm"
  [engine.serve]
  batch = 4
  step = "15ms"
  step_per_request = "1ms"
[[engine]]
name = "front"
format = "vllm"
  [engine.serve]
  batch = 4
  step = "15ms"
  step_per_request = "1ms"
  front_threads = 2
`

// Agreement tolerance of the client's output tokens/s and the engine's
// decode figure over the same phase: the figure is Δcounter/Δt between the
// phase's first and last good polls (100 ms apart), the client's the
// tokens of the requests that ended in the phase over its whole length.
const loadTokensTolerance = 0.05

// End to end, about 9 s: the simulator serves two engines, llmrec record
// scrapes both every 100 ms, and llmrec load drives each for a warmup and
// two stages (concurrency 1, then 4), one writing AIPerf records and
// posting marks, the other generic JSONL. analyze/client reads both files;
// their phases, given to the analysis, are measured on the engines'
// counters. On both engines the client's output tokens/s of each stage is
// within 5 % of the engine's decode figure. On the clean one the client's
// TTFT p50 lies within the bucket the engine's p50 fell in; behind the
// front queue at concurrency 4 it is far above the engine's while the
// engine's waiting gauge never left 0: the queue is invisible to the
// engine.
func TestLoadAgainstSimAndRecorder(t *testing.T) {
	if testing.Short() {
		t.Skip("9 s end-to-end load run")
	}
	sc, err := sim.ParseScenario([]byte(loadScenario), "load.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Serve(ctx, sc, sim.Options{NoMemoryLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// One recorder per engine, so that each client file has the recording
	// of the one engine it drove (a client is compared with the fleet of
	// the recorded targets).
	urls, dirs := map[string]string{}, map[string]string{}
	rctx, stopRec := context.WithCancel(ctx)
	recErr := make(chan error, 2)
	for _, tg := range srv.Targets() {
		urls[tg.Name] = tg.URL
		cfg := &record.Config{Targets: []record.Target{{Name: tg.Name, URL: tg.MetricsURL,
			Interval: record.Duration(100 * time.Millisecond)}}}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		dirs[tg.Name] = t.TempDir()
		go func() {
			_, err := record.Run(rctx, cfg, record.Options{Dir: dirs[tg.Name]})
			recErr <- err
		}()
	}
	dir := dirs["clean"]
	marks, err := record.ListenMarks("127.0.0.1:0", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer marks.Close()
	time.Sleep(300 * time.Millisecond) // a few polls before the load

	files := map[string]string{"clean": filepath.Join(t.TempDir(), "profile_export.jsonl"), "front": filepath.Join(t.TempDir(), "requests.jsonl"),
		"llama": filepath.Join(t.TempDir(), "llama.jsonl")}
	args := map[string][]string{
		"clean": {"--format", "aiperf", "--mark", "http://" + marks.Addr() + "/mark"},
		"front": {"--format", "jsonl"},
		"llama": {"--format", "jsonl"},
	}
	var wg sync.WaitGroup
	for name := range files {
		wg.Go(func() {
			a := append([]string{"load", "--url", urls[name], "--stages", "1:3s,4:3s", "--warmup", "1s",
				"--prompt-tokens", "50", "--output-tokens", "32", "-o", files[name]}, args[name]...)
			out, stderr, err := runCLI(a...)
			if err != nil {
				t.Errorf("%s: %v\n%s", name, err, stderr)
			}
			if !strings.Contains(out, "written to") || !strings.Contains(stderr, "concurrency 4: ") {
				t.Errorf("%s: stdout %q, stderr %q", name, out, stderr)
			}
		})
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond)
	stopRec()
	for range dirs {
		if err := <-recErr; err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The marks the clean driver posted.
	ms, bad, err := capture.ReadMarks(dir)
	var names []string
	for _, m := range ms {
		names = append(names, fmt.Sprintf("%s/%v", m.Name, m.End))
	}
	if err != nil || len(bad) != 0 || strings.Join(names, " ") !=
		"warmup/false warmup/true concurrency 1/false concurrency 1/true concurrency 4/false concurrency 4/true" {
		t.Errorf("marks %v, bad %v, %v", names, bad, err)
	}

	for _, target := range []string{"clean", "front"} {
		run, err := client.ReadFile(files[target], client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantFormat := map[string]string{"clean": client.FormatAIPerf, "front": client.FormatGenericJSONL}[target]
		if run.Meta.Format != wantFormat || (target == "clean" && run.Meta.Schema != client.AIPerf03) {
			t.Errorf("%s: read as %s, %s", target, run.Meta.Format, run.Meta.Schema)
		}
		cps, how := client.Phases(run)
		if how != client.FromField || len(cps) != 3 || cps[0].Name != "warmup" || cps[1].Name != "concurrency 1" || cps[2].Name != "concurrency 4" {
			t.Fatalf("%s: client phases %v (%s)", target, cps, how)
		}
		figs := client.Measure(run, cps)
		res, err := analyze.Analyze(analyze.Options{Dirs: []string{dirs[target]}, SkipPolls: true, Phases: client.AsPhases(cps)})
		if err != nil {
			t.Fatal(err)
		}
		for i, cp := range cps[1:] {
			cf := figs[i+1]
			sf := serverFigures(t, res, cp.Name, target)
			// Every request ended ok.
			if cf.Started[client.StatusOK] == 0 || len(cf.Started) != 1 {
				t.Errorf("%s %s: started %v", target, cp.Name, cf.Started)
			}
			ctok := clientFig(t, &cf, client.FOutputTokensPS)
			stok := serverFig(t, sf, "decode_tokens_per_second")
			rel := math.Abs(ctok-stok) / stok
			t.Logf("%s %s: output tokens/s client %.1f, engine %.1f (%.1f %%)", target, cp.Name, ctok, stok, 100*rel)
			if rel > loadTokensTolerance {
				t.Errorf("%s %s: client %.1f tokens/s, engine %.1f: %.1f %% apart, tolerance %.0f %%",
					target, cp.Name, ctok, stok, 100*rel, 100*loadTokensTolerance)
			}
			cttft := clientFig(t, &cf, "ttft_p50_s")
			sttft, bucket := serverQuantile(t, sf, "time_to_first_token_seconds__p50")
			waiting := serverFig(t, sf, "requests_waiting__max")
			t.Logf("%s %s: TTFT p50 client %.1f ms, engine %.1f ms (bucket %v); engine waiting max %v",
				target, cp.Name, 1e3*cttft, 1e3*sttft, bucket, waiting)
			if waiting != 0 {
				t.Errorf("%s %s: the engine's waiting reached %v with a batch of 4", target, cp.Name, waiting)
			}
			if target == "front" && cp.Name == "concurrency 4" {
				// Two of four requests wait a whole request before the engine.
				if cttft < 5*sttft || cttft < bucket[1] {
					t.Errorf("front queue: client TTFT p50 %.1f ms is not far above the engine's %.1f ms (bucket %v)", 1e3*cttft, 1e3*sttft, bucket)
				}
				continue
			}
			// The histogram resolves TTFT to its bucket: the client's p50
			// (the engine's plus the HTTP round trip) falls in the bucket
			// of the engine's, with 2 ms for the round trip.
			if cttft < bucket[0] || cttft > bucket[1]+0.002 {
				t.Errorf("%s %s: client TTFT p50 %.1f ms outside the engine's p50 bucket %v", target, cp.Name, 1e3*cttft, bucket)
			}
		}
		checkClientSide(t, target, dirs[target], files[target])
	}
	// llama.cpp publishes no TTFT histogram: the queue before it shows in
	// the requests in flight (the client's 4 against the engine's 2
	// running and 0 waiting).
	checkClientSide(t, "llama", dirs["llama"], files["llama"])
}

// checkClientSide runs llmrec analyze DIR --client FILE and reads its
// client section: in every stage the client's output tokens/s and request
// rate agree with the engine's; on the clean engine no queue before the
// engine, no unrecorded engine and no clock offset is found; behind the
// front queue at concurrency 4 the TTFT disagreement (vLLM) or the
// requests in flight (llama.cpp, which publishes no TTFT) is named
// queue_before_engine. No rule names a seam on the clean run (the request
// and prompt rates are compared over the counters' span, the ITL tails
// not at all: see package clientcmp).
func checkClientSide(t *testing.T, target, dir, file string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "analysis.json")
	if _, stderr, err := runCLI("analyze", dir, "--client", file, "--json", js); err != nil {
		t.Fatalf("%s: analyze --client: %v\n%s", target, err, stderr)
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Client *clientcmp.Output `json:"client"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Client == nil || len(res.Client.Files) != 1 {
		t.Fatalf("%s: no client section in %s", target, js)
	}
	var seams []string
	for _, f := range res.Client.Findings {
		seams = append(seams, f.Phase+": "+f.Seam)
		t.Logf("%s finding %s %s: %s", target, f.Phase, f.Seam, f.Detail)
	}
	for _, sd := range res.Client.Files[0].Sides {
		for _, r := range sd.Rows {
			if strings.HasSuffix(sd.Phase, "warmup") {
				continue
			}
			// Output tokens agree; requests agree where the engine counts
			// them (llama.cpp does not: not comparable there).
			bad := (r.Quantity == client.FOutputTokensPS && r.Agreement != clientcmp.Agree) ||
				(r.Quantity == client.FRequestsPS && r.Agreement == clientcmp.Disagree)
			if bad {
				t.Errorf("%s %s: %s %s: %s", target, sd.Phase, r.Quantity, r.Agreement, r.Why)
			}
		}
	}
	switch target {
	case "clean":
		// Every rule that names a seam stays quiet on a clean run.
		for _, f := range res.Client.Findings {
			if f.Seam != clientcmp.SeamUnexplained {
				t.Errorf("clean run: %s in %s: %s", f.Seam, f.Phase, f.Detail)
			}
		}
	case "front", "llama":
		for _, f := range res.Client.Findings {
			if f.Seam != clientcmp.SeamUnexplained && f.Seam != clientcmp.SeamQueueBeforeEngine {
				t.Errorf("front queue: %s in %s: %s", f.Seam, f.Phase, f.Detail)
			}
		}
		if !slices.Contains(seams, "concurrency 4: "+clientcmp.SeamQueueBeforeEngine) {
			t.Errorf("front queue: findings %v, want concurrency 4: %s", seams, clientcmp.SeamQueueBeforeEngine)
		}
	}
}

// serverFigures are target's figures over the client phase named name.
func serverFigures(t *testing.T, res *analyze.Result, name, target string) *phases.Figures {
	t.Helper()
	for i := range res.Output.Phases {
		p := &res.Output.Phases[i]
		if p.Name != name || p.Source != client.Source {
			continue
		}
		for j := range p.Targets {
			if p.Targets[j].Target == target {
				return &p.Targets[j]
			}
		}
	}
	t.Fatalf("no phase %q from the client on %s", name, target)
	return nil
}

func serverFig(t *testing.T, f *phases.Figures, name string) float64 {
	t.Helper()
	g, ok := f.Get(name)
	if !ok || !g.Value.Valid {
		t.Fatalf("%s: engine figure %s absent (%s)", f.Target, name, g.Reason)
	}
	return g.Value.V
}

// serverQuantile is a quantile figure and the bucket it fell in.
func serverQuantile(t *testing.T, f *phases.Figures, name string) (float64, [2]float64) {
	t.Helper()
	v := serverFig(t, f, name)
	g, _ := f.Get(name)
	if !g.Bucket.Lo.Valid || !g.Bucket.Hi.Valid {
		t.Fatalf("%s: %s has no finite bucket", f.Target, name)
	}
	return v, [2]float64{g.Bucket.Lo.V, g.Bucket.Hi.V}
}

func clientFig(t *testing.T, f *client.Figures, name string) float64 {
	t.Helper()
	g, ok := f.Get(name)
	if !ok || !g.Value.Valid {
		var have []string
		for _, x := range f.Figures {
			have = append(have, x.Name)
		}
		t.Fatalf("client figure %s absent (%s); have %v", name, g.Why, have)
	}
	return g.Value.V
}

// llmrec load -h teaches: usage, examples, every flag.
func TestLoadHelp(t *testing.T) {
	help, _, err := runCLI("load", "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(help, "Usage: llmrec load") || !strings.Contains(help, "Examples:") ||
		!strings.Contains(help, "-stages") || !strings.Contains(help, "-mark") || !strings.Contains(help, "-allow-remote") {
		t.Errorf("load -h: %v\n%s", err, help)
	}
}

// --allow-remote takes the URL as given, and an engine that answers no
// request is named by its host in the error.
func TestLoadAllowRemoteNamesHost(t *testing.T) {
	host := freeAddr(t) // nothing listens: every request fails to connect
	out := filepath.Join(t.TempDir(), "r.jsonl")
	_, _, err := runCLI("load", "--allow-remote", "--url", "http://"+host, "--duration", "200ms", "--warmup", "0", "--grace", "100ms", "-o", out)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "none of") || !strings.Contains(err.Error(), "requests to "+host+" succeeded") {
		t.Errorf("load of a closed port: exit %d, %v; want exit 1 naming %s", exitCode(err), err, host)
	}
}
