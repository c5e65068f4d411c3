package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/record/goldentest"
	"github.com/llmrec/llmrec/record/sim"
)

// One recording serves every client test: a vLLM engine idle for 10 s,
// then 60 s at 2000 decode tokens/s (16 running, 200 output and 400
// prompt tokens a request: 10 requests/s; TTFT 100 ms, 8 ms a token, so
// e2e 1.692 s), then idle.
const (
	clientLoadAt  = 10.0 // seconds after sim.DefaultStart
	clientLoadEnd = 70.0
)

func clientRecording(t *testing.T) string {
	t.Helper()
	sc := &sim.Scenario{Name: "client", Start: sim.DefaultStart, Duration: 90 * time.Second, Engines: []sim.EngineSpec{{
		Name: "v", Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, Idle: true},
			{At: time.Duration(clientLoadAt * float64(time.Second)), DecodeTPS: 2000, PromptTPS: 4000, Running: 16, OutputLen: 200,
				TTFT: 100 * time.Millisecond, KVUsage: -1},
			{At: time.Duration(clientLoadEnd * float64(time.Second)), Idle: true},
		}}}}
	dir := t.TempDir()
	generateIn(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	return dir
}

// load is how the made-up client saw the run.
type load struct {
	rate     float64 // requests started per second
	queue    float64 // seconds each request waited before the engine saw it
	out, in  int     // output and input tokens the client counts
	cancel   int     // every cancel-th request is cancelled (0: none)
	shift    float64 // seconds the client's clock is ahead
	noPhase  bool    // no phase column
	duration float64 // 0: the engine's load
}

// clientFile writes a generic JSONL file of the requests the client of l
// sent, matched to the recording's load.
func clientFile(t *testing.T, l load) string {
	t.Helper()
	if l.rate == 0 {
		l.rate = 10
	}
	if l.out == 0 {
		l.out = 200
	}
	if l.in == 0 {
		l.in = 400
	}
	if l.duration == 0 {
		l.duration = clientLoadEnd - clientLoadAt
	}
	t0 := float64(sim.DefaultStart.UnixNano())/1e9 + clientLoadAt
	var b strings.Builder
	n := int(l.duration*l.rate - 1.692*l.rate)
	// Latencies spread as the simulated engine's histograms are: lognormal
	// about their means (TTFT σ 0.5, e2e σ 0.35), at quantiles in a fixed
	// shuffled order.
	logn := func(mean, sigma float64, i, k int) float64 {
		p := (float64((i*k)%n) + 0.5) / float64(n)
		return mean * math.Exp(sigma*math.Sqrt2*math.Erfinv(2*p-1)-sigma*sigma/2)
	}
	for i := range n {
		ttft := logn(0.1, 0.5, i, 7) + l.queue
		e2e := logn(1.692, 0.35, i, 11) + l.queue
		e2e = max(e2e, ttft+0.2)
		start := t0 + float64(i)/l.rate + l.shift
		status := "ok"
		if l.cancel > 0 && i%l.cancel == l.cancel-1 {
			status = "cancelled"
		}
		phase := `,"phase":"profiling"`
		if l.noPhase {
			phase = ""
		}
		fmt.Fprintf(&b, `{"start":%.6f,"end":%.6f,"ttft_s":%.6f,"input_tokens":%d,"output_tokens":%d,"status":%q%s}`+"\n",
			start, start+e2e, ttft, l.in, l.out, status, phase)
	}
	path := filepath.Join(t.TempDir(), "client.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// analyzeWithClient analyses the recording with the client file of l.
func analyzeWithClient(t *testing.T, l load) *Result {
	t.Helper()
	run, err := client.ReadFile(clientFile(t, l), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{clientRecording(t)}, SkipPolls: true, Clients: []*client.Run{run}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Client == nil || len(res.Client.Files) != 1 {
		t.Fatalf("no client section: %+v", res.Client)
	}
	return res
}

func seamsOf(res *Result) []string {
	var out []string
	for _, f := range res.Client.Findings {
		out = append(out, f.Seam)
	}
	return out
}

func agreementOf(s *clientcmp.Side, q string) string {
	for _, r := range s.Rows {
		if r.Quantity == q {
			return r.Agreement
		}
	}
	return "missing"
}

// The client's phases are named phases of source "client", measured on the
// engines like any named phase.
func TestClientPhasesFeedAnalysis(t *testing.T) {
	res := analyzeWithClient(t, load{})
	var got []phases.Measured
	for _, m := range res.Output.Phases {
		if m.Source == client.Source {
			got = append(got, m)
		}
	}
	if len(got) != 1 || got[0].Name != "profiling" || got[0].Kind != phases.KindNamed || got[0].Fleet == nil {
		t.Fatalf("client phases in the analysis: %+v", got)
	}
	// An explicit named phase of the same name wins: the client's is renamed.
	run, err := client.ReadFile(clientFile(t, load{}), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ex := phases.Phase{Name: "profiling", Kind: phases.KindNamed, Source: phases.SourceFile, Start: got[0].Start, End: got[0].End}
	res2, err := Analyze(Options{Dirs: []string{clientRecording(t)}, SkipPolls: true, Clients: []*client.Run{run}, Phases: []phases.Phase{ex}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range res2.Output.Phases {
		if m.Kind == phases.KindNamed {
			names = append(names, m.Source+":"+m.Name)
		}
	}
	if !slices.Equal(names, []string{"file:profiling", "client:client: profiling"}) {
		t.Errorf("named phases: %q", names)
	}
	if s := res2.Client.Files[0].Sides; len(s) != 1 || s[0].Phase != "client: profiling" {
		t.Errorf("sides: %+v", s)
	}
}

// A client that saw what the engine did agrees on every quantity the
// engine publishes, and nothing is a finding.
func TestClientAgrees(t *testing.T) {
	res := analyzeWithClient(t, load{})
	s := &res.Client.Files[0].Sides[0]
	for _, q := range []string{client.FOutputTokensPS, client.FInputTokensPS, client.FRequestsPS, "ttft_p50_s", "itl_p50_s", "e2e_p50_s", client.FConcMean} {
		if a := agreementOf(s, q); a != clientcmp.Agree {
			t.Errorf("%s: %s", q, a)
		}
	}
	for _, q := range []string{client.FErrorRate, client.FCancelRate, client.FConcMax} {
		if a := agreementOf(s, q); a != clientcmp.NotComparable {
			t.Errorf("%s: %s, want not comparable", q, a)
		}
	}
	if len(res.Client.Findings) != 0 {
		t.Errorf("findings on a clean run: %+v", res.Client.Findings)
	}
	if o := res.Client.Files[0].Offset; !o.Value.Valid || o.Value.V < -o.Tolerance || o.Value.V > o.Tolerance {
		t.Errorf("clock offset on a clean run: %+v", o)
	}
}

// Each seam from the run that shows it.
func TestClientSeams(t *testing.T) {
	for _, c := range []struct {
		name string
		l    load
		seam string
		q    string // a quantity the finding must name
	}{
		// 300 ms in the HTTP server's threads: the engine's waiting is 0.
		{"queue before the engine", load{queue: 0.3}, clientcmp.SeamQueueBeforeEngine, "ttft_p50_s"},
		// Two tokens a chunk, counted as one.
		{"chunks as tokens", load{out: 100}, clientcmp.SeamChunks, client.FOutputTokensPS},
		{"tokenizer", load{in: 520}, clientcmp.SeamTokenizer, client.FInputTokensPS},
		// The client sent twice what the recorded engine served.
		{"engines not recorded", load{rate: 20}, clientcmp.SeamUnrecorded, client.FRequestsPS},
		// Every 4th cancelled: the engine still finished it.
		{"cancelled still served", load{cancel: 4}, clientcmp.SeamCancelled, client.FRequestsPS},
		// The client's clock 6 s ahead.
		{"clock offset", load{shift: 6}, clientcmp.SeamClockOffset, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := analyzeWithClient(t, c.l)
			var f *clientcmp.Finding
			for i := range res.Client.Findings {
				if res.Client.Findings[i].Seam == c.seam {
					f = &res.Client.Findings[i]
				}
			}
			if f == nil {
				t.Fatalf("no %s finding: %v\n%s", c.seam, seamsOf(res), sideText(res))
			}
			if c.q != "" && !slices.Contains(f.Quantities, c.q) {
				t.Errorf("%s names %v, want %s", c.seam, f.Quantities, c.q)
			}
			if slices.Contains(seamsOf(res), clientcmp.SeamUnexplained) {
				t.Errorf("an unexplained disagreement besides: %+v", res.Client.Findings)
			}
		})
	}
}

func sideText(res *Result) string {
	var b strings.Builder
	for _, s := range res.Client.Files[0].Sides {
		for _, r := range s.Rows {
			fmt.Fprintf(&b, "%s %s: %v %v %s\n", s.Phase, r.Quantity, r.Client.Value, r.Server.Value, r.Agreement)
		}
	}
	return b.String()
}

// The side-by-side tables of a clean run and of a queue before the engine,
// and the client's phases cut from concurrency levels when it has no
// phase field.
func TestClientSidesGolden(t *testing.T) {
	type side struct {
		Case     string              `json:"case"`
		Phases   string              `json:"phases"`
		Offset   clientcmp.Offset    `json:"clock_offset"`
		Sides    []clientcmp.Side    `json:"sides"`
		Findings []clientcmp.Finding `json:"findings"`
	}
	var out []side
	for _, c := range []struct {
		name string
		l    load
	}{{"clean", load{}}, {"queue before the engine", load{queue: 0.3}}, {"no phase field", load{noPhase: true}}} {
		res := analyzeWithClient(t, c.l)
		f := res.Client.Files[0]
		fs := res.Client.Findings
		for i := range fs {
			fs[i].File = filepath.Base(fs[i].File)
		}
		out = append(out, side{Case: c.name, Phases: f.Phases, Offset: f.Offset, Sides: f.Sides, Findings: fs})
	}
	got, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, filepath.Join("testdata", "client_sides.golden.json"), append(got, '\n'))
}

// A real AIPerf record (../shared/clients, examples-artifacts-run1) beside
// a simulated engine that served its load: placed at the file's own epoch
// times, its profiling phase is a named phase of the analysis, and the
// rates the engine counted agree with the ones the client measured.
func TestClientRealAIPerfBesideSim(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "clients", "aiperf", "examples-artifacts-run1", "profile_export.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no real client file: %s is absent (it sits beside the repository as ../shared/clients)", path)
	}
	run, err := client.ReadFile(path, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := client.Phases(run)
	var prof *client.Phase
	for i := range ps {
		if ps[i].Name == "profiling" {
			prof = &ps[i]
		}
	}
	if prof == nil {
		t.Fatalf("no profiling phase: %+v", ps)
	}
	f := client.Measure(run, []client.Phase{*prof})[0]
	get := func(name string) float64 {
		g, ok := f.Get(name)
		if !ok || !g.Value.Valid {
			t.Fatalf("%s: %+v", name, g)
		}
		return g.Value.V
	}
	out, in, rps, conc := get(client.FOutputTokensPS), get(client.FInputTokensPS), get(client.FRequestsPS), get(client.FConcMean)
	start := time.Unix(int64(prof.Start)-20, 0)
	at := func(t float64) time.Duration {
		return time.Duration((t - float64(start.Unix())) * float64(time.Second))
	}
	sc := &sim.Scenario{Name: "aiperf", Start: start, Duration: at(prof.End) + 20*time.Second, Engines: []sim.EngineSpec{{
		Name: "v", Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, Idle: true},
			{At: at(prof.Start), DecodeTPS: out, PromptTPS: in, Running: int(math.Round(conc)), OutputLen: int(math.Round(out / rps)), KVUsage: -1},
			{At: at(prof.End), Idle: true},
		}}}}
	dir := t.TempDir()
	generateIn(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true, Clients: []*client.Run{run}})
	if err != nil {
		t.Fatal(err)
	}
	var side *clientcmp.Side
	for i := range res.Client.Files[0].Sides {
		if s := &res.Client.Files[0].Sides[i]; s.Phase == "profiling" {
			side = s
		}
	}
	if side == nil {
		t.Fatalf("no profiling side: %+v", res.Client.Files[0].Sides)
	}
	// Requests are compared over the span the engine's counters were
	// differenced over, where the real file's completions (100 requests at
	// once, ending together near the phase's end) and the simulator's
	// (spread evenly) differ by construction; the token rates are over the
	// client's whole phase.
	for _, q := range []string{client.FOutputTokensPS, client.FInputTokensPS} {
		if a := agreementOf(side, q); a != clientcmp.Agree {
			t.Errorf("%s: %s\n%s", q, a, sideText(res))
		}
	}
}
