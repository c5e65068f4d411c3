package analyze

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/sim"
)

// completionScenario is a llama.cpp engine idle, then loaded with 2
// requests running whose 250 tokens complete every 2.5 s (a request lasts
// 2 ÷ 0.4 = 5 s), then idle: its tokens_predicted_total moves in lumps of
// 250 tokens, one at a time.
const completionScenario = `
name = "completion counters"
duration = "75s"

[[engine]]
name = "llama"
format = "llamacpp"
slots = 4

  [[engine.phase]]
  at = "0s"
  idle = true

  [[engine.phase]]
  at = "5s"
  decode_tps = 100.0
  prompt_tps = 200.0
  running = 2
  output_len = 250

  [[engine.phase]]
  at = "45s"
  idle = true
`

// spanRun is what one analysis of completionScenario published for decode:
// the mean absolute error against the simulator's truth over the steady
// polls, and how many polls after the load ended still read non-zero.
type spanRun struct {
	err   float64
	tail  int
	polls int
}

func measureDecode(t *testing.T, res *Result, eng *sim.Engine, start float64) spanRun {
	t.Helper()
	var out spanRun
	var errs []float64
	for _, p := range onlyTarget(t, res, "llama").Polls {
		c, ok := p.Cells.Get(engine.DecodeTokensPerSecond)
		if !ok || !c.Value.Valid {
			continue
		}
		at := p.T - start
		switch {
		// Steady: the load runs and every span up to 10 s lies inside it.
		case at >= 20 && at <= 44:
			truth := eng.Truth(time.Duration(at * float64(time.Second))).Rates.GenerationTokens
			errs = append(errs, math.Abs(c.Value.V-truth)/truth)
		case at > 45.5 && c.Value.V > 0:
			out.tail++
		}
	}
	out.polls = len(errs)
	for _, e := range errs {
		out.err += e / float64(len(errs))
	}
	return out
}

// Counters that move at request completion (llama.cpp tokens_predicted_total)
// get a span chosen from the data: the request duration by Little's law,
// here 5 s. Against the simulator's truth, it reads the steady load far
// closer than a 1 s span (which sees 0 or a whole request's tokens) and
// reaches 0 after the load ends sooner than the fixed 10 s span, which
// stays the counterfactual.
func TestCompletionSpanFromTheData(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(completionScenario), "completion.toml")
	if err != nil {
		t.Fatal(err)
	}
	engines, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	start := float64(sim.DefaultStart.UnixNano()) / 1e9

	runs := map[string]spanRun{}
	var chosen *Result
	for _, span := range []float64{0, 1, 10} {
		res, err := Analyze(Options{Dirs: []string{dir}, Gates: rate.Config{Span: span}})
		if err != nil {
			t.Fatal(err)
		}
		name := map[float64]string{0: "chosen", 1: "1 s", 10: "10 s"}[span]
		runs[name] = measureDecode(t, res, engines[0], start)
		if span == 0 {
			chosen = res
		}
	}
	got, one, ten := runs["chosen"], runs["1 s"], runs["10 s"]
	t.Logf("mean |error| over steady polls: chosen %.3f (%d polls), 1 s %.3f, 10 s %.3f; non-zero polls after the load: chosen %d, 1 s %d, 10 s %d",
		got.err, got.polls, one.err, ten.err, got.tail, one.tail, ten.tail)
	if got.polls < 20 || got.err > 0.1 || one.err < 4*got.err {
		t.Errorf("steady error %.3f over %d polls with the chosen span, %.3f at 1 s: want under 0.1 and a quarter of 1 s's",
			got.err, got.polls, one.err)
	}
	if got.tail > 6 || ten.tail < got.tail+3 {
		t.Errorf("decode non-zero for %d polls after the load with the chosen span, %d at 10 s: want at most 6 and 3 fewer",
			got.tail, ten.tail)
	}

	cs := chosen.Gates.CompletionSpans
	if len(cs) != 1 || cs[0].Target != "llama" {
		t.Fatalf("completion spans %+v, want llama's", cs)
	}
	c := cs[0]
	if !c.Span.Valid || math.Abs(c.Span.V-5) > 0.6 || c.How != engine.SpanFromLittle ||
		!slices.Equal(c.Series, []string{"llamacpp:requests_processing", "llamacpp:tokens_predicted_total"}) ||
		!slices.Contains(c.Counters, "llamacpp:tokens_predicted_total") || c.Bounds != [2]float64{1, CompletionSpanWindow} {
		t.Errorf("chosen span %+v, want about 5 s by Little's law from requests_processing and tokens_predicted_total", c)
	}
	if !slices.Contains(chosen.Spans, 10) {
		t.Errorf("counterfactual spans %v: the fixed 10 s span stays one", chosen.Spans)
	}
	// The cells say the window they used.
	for _, p := range onlyTarget(t, chosen, "llama").Polls {
		if at := p.T - start; at < 30 || at > 44 {
			continue
		}
		d, _ := p.Cells.Get(engine.DecodeTokensPerSecond)
		if !d.Window.Valid || math.Abs(d.Window.V-c.Span.V) > 1.1 {
			t.Errorf("decode window %v at %.1f s, want about the chosen %v s", d.Window, p.T-start, c.Span.V)
		}
	}
}
