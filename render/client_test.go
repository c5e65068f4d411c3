package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/render/browsertest"
)

// clientReport records a vLLM engine busy from 10 s to 70 s (10
// requests/s), reads a client file of the same load whose requests waited
// 300 ms before the engine and of which every 50th failed, and lays out
// the report as llmrec render does (polls streamed to the report).
func clientReport(t *testing.T) render.Report {
	t.Helper()
	dir := t.TempDir()
	sc := &sim.Scenario{Name: "client", Start: sim.DefaultStart, Duration: 80 * time.Second, Engines: []sim.EngineSpec{{
		Name: "vllm-0", Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, Idle: true},
			{At: 10 * time.Second, DecodeTPS: 2000, PromptTPS: 4000, Running: 16, OutputLen: 200, TTFT: 100 * time.Millisecond, KVUsage: -1},
			{At: 70 * time.Second, Idle: true},
		}}}}
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	t0 := float64(sim.DefaultStart.Unix()) + 10
	var b strings.Builder
	for i := range 580 {
		start := t0 + float64(i)/10
		status, ttft, end := "ok", 400.0, start+1.992
		if i%50 == 49 {
			status, end = "error", start+0.05
		}
		fmt.Fprintf(&b, `{"start":%.3f,"end":%.3f,"ttft_ms":%g,"input_tokens":400,"output_tokens":200,"status":%q,"phase":"profiling"}`+"\n",
			start, end, ttft, status)
	}
	file := filepath.Join(t.TempDir(), "requests.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := client.ReadFile(file, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	polls := render.NewPolls()
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}, Clients: []*client.Run{run}, Polls: polls.Add})
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.FromAnalysis(render.Input{Result: res, Polls: polls})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The Client section: the side-by-side table and the seams in the page
// and, folded, in the summary.
func TestClientSection(t *testing.T) {
	r := clientReport(t)
	var sec *render.Section
	for i := range r.Sections {
		if r.Sections[i].ID == "client" {
			sec = &r.Sections[i]
		}
	}
	if sec == nil {
		t.Fatal("no client section")
	}
	if len(sec.Sections) != 1 || len(sec.Sections[0].Tables) != 1 || len(sec.Sections[0].Charts) != 3 {
		t.Fatalf("client file section: %+v", sec.Sections)
	}
	verdict := ""
	for _, v := range r.Verdicts {
		if v.Topic == "client" {
			verdict = v.Text
		}
	}
	contains(t, "client verdict", verdict, "disagree", "queue before the engine")
	md := markdownOf(t, r)
	i := strings.Index(md, "<summary>Client</summary>")
	if i < 0 {
		t.Fatalf("no folded Client section in the summary:\n%s", md)
	}
	contains(t, "summary", md[i:], "requests.jsonl, profiling: client beside the fleet (1 target: vllm-0)",
		"| TTFT p50 | 400.0 ms |", "| requests/s (ended ok) |", "queue before the engine", "</details>")
	page := htmlOf(t, r)
	contains(t, "page", page, "requests by start, latency (errors marked)", "client output tokens/s beside the fleet", "TTFT, client (each request) vs server")
}

// The client's charts draw in Chromium: the requests' latency by start
// with the errors as a series of their own, the client's throughput beside
// the fleet's decode, the client's TTFT beside the engine's; each chart
// holds to what every chart of the report does.
func TestClientChartsInBrowser(t *testing.T) {
	path := writeReport(t, clientReport(t))
	b := browsertest.Start(t)
	p := loadAndDraw(t, b, path)
	defer checkClean(t, p)
	facts := readCharts(t, p)
	checkCharts(t, facts)
	byID := map[string]chartFacts{}
	for _, f := range facts {
		byID[f.ID] = f
	}
	for id, want := range map[string][]string{
		"client-1-latency":    {"request latency (ok)", "request latency (error, cancelled, incomplete)"},
		"client-1-throughput": {"client output tokens/s", "fleet decode (Σ engines)"},
		"client-1-ttft":       {"client TTFT (each request)", "vllm-0 TTFT p50"},
	} {
		f, ok := byID[id]
		if !ok {
			t.Errorf("no chart %s", id)
			continue
		}
		for _, s := range want {
			if !contains1(f.Series, s) {
				t.Errorf("%s: no series %q drawn: %q", id, s, f.Series)
			}
		}
	}
	if f := byID["client-1-latency"]; f.Values < 580 {
		t.Errorf("latency scatter: %d points drawn, want every one of 580 requests", f.Values)
	}
	tip, err := p.HoverChart("client-1-latency", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "error point tooltip", tip, "status error")
}
