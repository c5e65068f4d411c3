package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/internal/sharedtest"
	"github.com/llmrec/llmrec/record/capture"
)

// b4748Run is the real llama.cpp b4748 baseline run (phased load of 4, 1
// and 8 clients, no fault), or a skip (a failure under CI=true).
func b4748Run(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "real-runs", "llamacpp-b4748", "a-baseline")
	sharedtest.Need(t, dir, "real run llamacpp-b4748/a-baseline")
	return dir
}

// realPoll is one recorded /metrics answer of the real run.
type realPoll = capture.Scrape

func realPolls(t *testing.T, run string) (metrics, slots []realPoll) {
	t.Helper()
	r, err := capture.Open(filepath.Join(run, "rec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range r.Segments {
		if err := capture.ReadScrapes(seg, capture.OmitSamples, func(c *realPoll) error {
			if c.Endpoint == capture.EndpointMetrics {
				metrics = append(metrics, *c)
			} else {
				slots = append(slots, *c)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(metrics, func(a, b realPoll) int { return int(a.Seq - b.Seq) })
	return metrics, slots
}

// realPhase is a phase of the run's phases.csv, in Unix ns.
func realPhase(t *testing.T, run, name string) (start, end int64) {
	t.Helper()
	f, err := os.Open(filepath.Join(run, "phases.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows[1:] {
		if r[0] == name {
			s, err1 := time.Parse(time.RFC3339Nano, r[1])
			e, err2 := time.Parse(time.RFC3339Nano, r[2])
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			return s.UnixNano(), e.UnixNano()
		}
	}
	t.Fatalf("no phase %s", name)
	return 0, 0
}

// series reads the value of an unlabelled llama.cpp series from a body.
func series(t testing.TB, body []byte, name string) float64 {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in\n%s", name, body)
	return 0
}

// metaLines are a body's HELP and TYPE lines, in order.
func metaLines(body []byte) []string {
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "# ") {
			out = append(out, l)
		}
	}
	return out
}

// b4748Engine is a simulated b4748 server on the real run's schedule:
// idle 20 s, 4 busy slots 60 s, idle 20 s, 1 busy slot 40 s, at the real
// run's client truth (truth.csv) and its 128-token answers.
func b4748Engine(t *testing.T) *Engine {
	t.Helper()
	e, err := NewEngine(EngineSpec{
		Name: "llama", Format: FormatLlamaCpp, Version: "b4748-c392e5094", Slots: 4, MaxModelLen: 4096,
		Phases: []Phase{
			{At: 0, Idle: true, KVUsage: -1},
			{At: 20 * time.Second, DecodeTPS: 994.5, PromptTPS: 357.1, Running: 4, OutputLen: 128, KVUsage: -1},
			{At: 80 * time.Second, Idle: true, KVUsage: -1},
			{At: 100 * time.Second, DecodeTPS: 512.6, PromptTPS: 183.7, Running: 1, OutputLen: 128, KVUsage: -1},
		},
	}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestB4748Page: a simulated b4748 server's /metrics has the real page's
// families, types (n_busy_slots_per_decode typed counter), help texts and
// order, line for line; the mainline page keeps it a gauge.
func TestB4748Page(t *testing.T) {
	metrics, _ := realPolls(t, b4748Run(t))
	e := b4748Engine(t)
	for _, at := range []time.Duration{0, 50 * time.Second, 120 * time.Second} {
		got, want := metaLines(e.Render(at)), metaLines(metrics[len(metrics)/2].Body)
		if !slices.Equal(got, want) {
			t.Errorf("at %s the page's HELP/TYPE lines differ from the real b4748 page:\ngot  %q\nwant %q", at, got, want)
		}
	}
	if !slices.Contains(metaLines(metrics[0].Body), "# TYPE llamacpp:n_busy_slots_per_decode counter") {
		t.Error("the real page no longer types n_busy_slots_per_decode counter: the quirk's evidence moved")
	}
	main := metaLines(buildOne(t, strings.ReplaceAll(strings.Split(handScenario, "[[engine.event]]")[0], `"vllm"`, `"llamacpp"`)).Render(time.Second))
	if !slices.Contains(main, "# TYPE llamacpp:n_busy_slots_per_decode gauge") {
		t.Errorf("the mainline page types n_busy_slots_per_decode otherwise: %q", main)
	}
}

// TestB4748BusyFalls: n_busy_slots_per_decode is a lifetime average typed
// counter, so it falls when fewer slots are busy per decode. In the real
// run it falls at most polls of the 1-client phase after the 4-client one;
// the simulated build's does too.
func TestB4748BusyFalls(t *testing.T) {
	run := b4748Run(t)
	metrics, _ := realPolls(t, run)
	start, end := realPhase(t, run, "load-1client")
	falls, n := 0, 0
	for i := 1; i < len(metrics); i++ {
		if metrics[i].StartNs < start || metrics[i].StartNs > end {
			continue
		}
		n++
		if series(t, metrics[i].Body, "llamacpp:n_busy_slots_per_decode") < series(t, metrics[i-1].Body, "llamacpp:n_busy_slots_per_decode") {
			falls++
		}
	}
	if n < 30 || falls < n*8/10 {
		t.Fatalf("real run: n_busy_slots_per_decode fell at %d of %d polls of load-1client; the quirk's evidence moved", falls, n)
	}
	e := b4748Engine(t)
	simFalls, simN := 0, 0
	prev := series(t, e.Render(100*time.Second), "llamacpp:n_busy_slots_per_decode")
	for at := 101 * time.Second; at < 140*time.Second; at += time.Second {
		v := series(t, e.Render(at), "llamacpp:n_busy_slots_per_decode")
		simN++
		if v < prev {
			simFalls++
		}
		prev = v
	}
	if simFalls < simN*8/10 {
		t.Errorf("sim b4748: n_busy_slots_per_decode fell at %d of %d polls of the 1-slot phase (real: %d of %d)", simFalls, simN, falls, n)
	}
	if v := series(t, e.Render(79*time.Second), "llamacpp:n_busy_slots_per_decode"); v < 3.99 || v > 4.01 {
		t.Errorf("sim b4748 after 60 s of 4 busy slots: %v busy per decode, want 4", v)
	}
}

// TestB4748RequestSizedSteps: the token counters move once per request —
// the prompt counter by whole prompts when a prompt is done, the predicted
// counter by whole answers at completion. In the real run at 1 client
// every poll's prompt_tokens_total (from the phase's start) is a sum of
// the phase's first requests' prompts (timings.csv prompt_n, in order) and
// every tokens_predicted_total step a multiple of the 128-token answers;
// the simulated build's steps are whole prompts and whole answers too.
func TestB4748RequestSizedSteps(t *testing.T) {
	run := b4748Run(t)
	metrics, _ := realPolls(t, run)
	start, end := realPhase(t, run, "load-1client")
	prompts := phasePrompts(t, run, "load-1client")
	sums := map[float64]bool{0: true}
	acc := 0.0
	for _, p := range prompts {
		acc += p
		sums[acc] = true
	}
	var base float64
	moved, n := 0, 0
	for i := 1; i < len(metrics); i++ {
		if metrics[i].StartNs < start {
			base = series(t, metrics[i].Body, "llamacpp:prompt_tokens_total")
			continue
		}
		if metrics[i].StartNs > end {
			break
		}
		n++
		v := series(t, metrics[i].Body, "llamacpp:prompt_tokens_total") - base
		if !sums[v] {
			t.Errorf("real run poll %d: prompt_tokens_total moved by %v since load-1client began, not a sum of whole prompts", metrics[i].Seq, v)
		}
		d := series(t, metrics[i].Body, "llamacpp:tokens_predicted_total") - series(t, metrics[i-1].Body, "llamacpp:tokens_predicted_total")
		if int(d)%128 != 0 {
			t.Errorf("real run poll %d: tokens_predicted_total moved by %v, not whole 128-token answers", metrics[i].Seq, d)
		}
		if d > 0 {
			moved++
		}
	}
	if n < 30 || moved == 0 {
		t.Fatalf("real run: %d polls in load-1client, %d with completions", n, moved)
	}

	e := b4748Engine(t)
	promptLen := e.phases[3].promptLen // the 1-slot phase
	if e.phases[3].Running != 1 || promptLen < 2 {
		t.Fatalf("phase 3: %+v", e.phases[3].Phase)
	}
	prevP := series(t, e.Render(100*time.Second), "llamacpp:prompt_tokens_total")
	prevG := series(t, e.Render(100*time.Second), "llamacpp:tokens_predicted_total")
	steps := 0
	for at := 100*time.Second + 100*time.Millisecond; at < 140*time.Second; at += 100 * time.Millisecond {
		b := e.Render(at)
		p, g := series(t, b, "llamacpp:prompt_tokens_total"), series(t, b, "llamacpp:tokens_predicted_total")
		if d := p - prevP; d != 0 {
			steps++
			if r := d / promptLen; r != float64(int(r)) {
				t.Errorf("sim at %s: prompt_tokens_total moved by %v, not whole prompts of %v", at, d, promptLen)
			}
		}
		if d := g - prevG; int(d)%128 != 0 {
			t.Errorf("sim at %s: tokens_predicted_total moved by %v, not whole 128-token answers", at, d)
		}
		prevP, prevG = p, g
	}
	if steps == 0 {
		t.Error("sim: the prompt counter never moved")
	}
	// The served prompt seconds follow the prompts done.
	tr := e.Truth(130 * time.Second)
	if c := tr.Sets[0].Counters; c.EvaluatedPromptTokens/e.spec.PrefillSpeed != c.PromptSeconds {
		t.Errorf("prompt seconds %v for %v prompt tokens done at %v/s", c.PromptSeconds, c.EvaluatedPromptTokens, e.spec.PrefillSpeed)
	}
}

// phasePrompts are the prompt_n of a phase's requests in start order.
func phasePrompts(t *testing.T, run, phase string) []float64 {
	t.Helper()
	read := func(name string) [][]string {
		f, err := os.Open(filepath.Join(run, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return rows[1:]
	}
	promptN := map[string]float64{}
	for _, r := range read("timings.csv") {
		v, err := strconv.ParseFloat(r[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		promptN[r[0]] = v
	}
	type req struct {
		start int64
		n     float64
	}
	var reqs []req
	for _, r := range read("requests.csv") {
		if r[1] != phase {
			continue
		}
		n, ok := promptN[r[0]]
		if !ok {
			continue
		}
		s, _ := strconv.ParseInt(r[2], 10, 64)
		reqs = append(reqs, req{s, n})
	}
	slices.SortFunc(reqs, func(a, b req) int { return int(a.start - b.start) })
	out := make([]float64, len(reqs))
	for i, r := range reqs {
		out[i] = r.n
	}
	return out
}

// TestB4748StartHeader: a b4748 server sends Process-Start-Time-Unix on
// every /metrics answer (and on no other path), one value per process
// that changes when the process restarts — as the real run's rows carry
// it: every /metrics row, one stored digest over the run, no /slots row.
func TestB4748StartHeader(t *testing.T) {
	metrics, slots := realPolls(t, b4748Run(t))
	values := map[string]bool{}
	for _, p := range metrics {
		var h map[string]string
		if p.Headers == nil || json.Unmarshal([]byte(*p.Headers), &h) != nil || h["Process-Start-Time-Unix"] == "" {
			t.Fatalf("real /metrics seq %d without the header: %v", p.Seq, p.Headers)
		}
		values[h["Process-Start-Time-Unix"]] = true
	}
	for _, p := range slots {
		if p.Headers != nil && strings.Contains(*p.Headers, "Process-Start-Time-Unix") {
			t.Fatalf("real /slots seq %d carries the header", p.Seq)
		}
	}
	if len(values) != 1 {
		t.Fatalf("real run: %d header values in one process", len(values))
	}

	sc, err := ParseScenario([]byte(`name = "b4748"
duration = "1m"
[[engine]]
name = "llama"
format = "llamacpp"
version = "b4748-c392e5094"
[[engine.phase]]
at = "0s"
decode_tps = 400
prompt_tps = 100
running = 2
[[engine.event]]
at = "600ms"
kind = "restart"
`), "b4748.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(context.Background(), sc, Options{NoMemoryLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u := srv.Targets()[0].URL
	get := func(path string) http.Header {
		resp, err := http.Get(u + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header
	}
	h1, h2 := get("/metrics").Get("Process-Start-Time-Unix"), get("/metrics").Get("Process-Start-Time-Unix")
	if h1 == "" || h1 != h2 {
		t.Fatalf("one process: headers %q and %q, want one value", h1, h2)
	}
	if _, err := strconv.ParseInt(h1, 10, 64); err != nil {
		t.Errorf("header %q: want integer microseconds (ggml_time_us)", h1)
	}
	if s := get("/slots").Get("Process-Start-Time-Unix"); s != "" {
		t.Errorf("/slots carries the header %q; the real server sends it on /metrics only", s)
	}
	time.Sleep(time.Until(srv.Start().Add(700 * time.Millisecond)))
	if h3 := get("/metrics").Get("Process-Start-Time-Unix"); h3 == h1 || h3 == "" {
		t.Errorf("after the restart the header is %q (before %q), want a new value", h3, h1)
	}
}
