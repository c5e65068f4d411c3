package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// llama.cpp's completion counters get the request duration by Little's
// law: 2 requests running and one completing every 3 polls of 1 s is 6 s.
// Until two completions are seen they keep the configured span; a small
// change of the duration leaves the span alone; a restart starts the
// measure over.
func TestCompletionSpanLittle(t *testing.T) {
	tr := NewTracker("", rate.Config{Span: 10})
	tr.SetCompletionSpan(1, 60)
	g := 0
	var cs Cells
	for i := range 30 {
		if i > 0 && i%3 == 0 {
			g += 300
		}
		body := llama(fmt.Sprint(10*i), fmt.Sprint(g), fmt.Sprint(g/100))
		// A completion counter first seen once the span is chosen gets it.
		if i >= 18 {
			body += fmt.Sprintf("# TYPE llamacpp:prompt_tokens_cache_total counter\nllamacpp:prompt_tokens_cache_total %d\n", 5*i)
		}
		// A poll without the running gauge measures nothing; one not
		// keyed yet (the first two) is looked for again.
		if i == 25 || i < 2 {
			body = strings.Replace(body, "llamacpp:requests_processing 2", "", 1)
		}
		cs = feed(t, tr, float64(100+i), body)
		if i == 4 {
			if c, ok := tr.CompletionSpan(); !ok || c.Span.Valid || c.Polls != 0 || tr.DecodeSpan() != 10 {
				t.Errorf("after one completion: %+v, decode span %v; want none chosen, the configured 10 s", c, tr.DecodeSpan())
			}
		}
	}
	c, ok := tr.CompletionSpan()
	if !ok || !c.Span.Valid || math.Abs(c.Span.V-6) > 1e-9 || c.How != SpanFromLittle || c.Polls < 20 ||
		!slices.Equal(c.Series, []string{"llamacpp:requests_processing", lcPredicted}) ||
		!slices.Equal(c.Counters, []string{lcCached[0], lcPrompt, lcPredictedSec, lcPredicted}) || c.Bounds != [2]float64{1, 60} {
		t.Fatalf("chosen %+v", c)
	}
	if d := cell(t, cs, DecodeTokensPerSecond); d.Window.V != 6 || d.Value.V != 100 {
		t.Errorf("decode %+v, want 600 tokens per 6 s", d)
	}
	if h := cell(t, cs, PrefixCacheHitRatio); h.Window.V != 6 {
		t.Errorf("hit ratio %+v, want the chosen span", h)
	}
	if tr.DecodeSpan() != 6 || tr.StepSpan() != 10 {
		t.Errorf("decode span %v, step span %v", tr.DecodeSpan(), tr.StepSpan())
	}
	// A restart empties the window: the span stays until two completions
	// of the new process are seen.
	for i := range 4 {
		feed(t, tr, float64(130+i), llama("1", "100", "1"))
	}
	if c, _ := tr.CompletionSpan(); c.Span.V != 6 || c.Duration.V != 6 {
		t.Errorf("after a restart: %+v", c)
	}
}

const tgiE2E = `# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="+Inf"} %R
tgi_request_duration_sum %D
tgi_request_duration_count %R
`

// TGI's and SGLang's completion counters get the mean request duration
// from their e2e histogram: Δsum ÷ Δcount, bounded by the interval below.
// A poll not after the last starts the measure over.
func TestCompletionSpanE2E(t *testing.T) {
	body := func(r int, d float64) string {
		rs := fmt.Sprint(r)
		return strings.NewReplacer("%R", rs, "%I", fmt.Sprint(10*r), "%G", fmt.Sprint(50*r), "%S", "1", "%D", fmt.Sprint(d)).
			Replace(tgiBody + tgiE2E)
	}
	tr := NewTracker("", rate.Config{Span: 10})
	tr.SetCompletionSpan(1, 60)
	for i := range 10 {
		feed(t, tr, float64(100+i), body(2*i, 8*float64(i)))
	}
	c, ok := tr.CompletionSpan()
	if !ok || c.Span.V != 4 || c.How != SpanFromE2E ||
		!slices.Equal(c.Series, []string{"tgi_request_duration_sum", "tgi_request_duration_count"}) ||
		!slices.Contains(c.Counters, "tgi_request_generated_tokens") {
		t.Fatalf("chosen %+v", c)
	}
	cs := feed(t, tr, 110, body(20, 80))
	if d := cell(t, cs, DecodeTokensPerSecond); d.Window.V != 4 || d.Value.V != 100 {
		t.Errorf("decode %+v, want 100/s over 4 s", d)
	}
	// Requests shorter than the interval get the interval.
	for i := 11; i < 80; i++ {
		feed(t, tr, float64(100+i), body(2*i, 80+0.1*float64(i-10)))
	}
	if c, _ := tr.CompletionSpan(); c.Span.V != 1 || c.Min.V != 1 || c.Max.V != 4 || c.Duration.V > 0.1 {
		t.Errorf("short requests: %+v", c)
	}
	// A poll out of order measures nothing and restarts the window.
	feed(t, tr, 150, body(200, 100))
	feed(t, tr, 181, body(202, 120))
	if c, _ := tr.CompletionSpan(); c.Span.V != 10 {
		t.Errorf("after a poll out of order: %+v, want the 10 s of the two completions after it", c)
	}

	// SGLang reads its e2e histogram the same way.
	sg := NewTracker("sglang", rate.Config{Span: 10})
	sg.SetCompletionSpan(2, 60)
	for i := range 6 {
		feed(t, sg, float64(100+2*i), fmt.Sprintf("# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total %d\n"+
			"# TYPE sglang:e2e_request_latency_seconds histogram\nsglang:e2e_request_latency_seconds_bucket{le=\"+Inf\"} %d\n"+
			"sglang:e2e_request_latency_seconds_sum %d\nsglang:e2e_request_latency_seconds_count %d\n", 100*i, 3*i, 15*i, 3*i))
	}
	if c, ok := sg.CompletionSpan(); !ok || c.Span.V != 5 || sg.DecodeSpan() != 5 {
		t.Errorf("sglang: %+v", c)
	}
	// A label set gone takes its sums with it: the window starts over,
	// and a poll without the histogram measures nothing.
	two := "# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total 1\n" +
		"# TYPE sglang:e2e_request_latency_seconds histogram\n"
	set := func(m string, n, sum int) string {
		return fmt.Sprintf("sglang:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=%q} %d\n"+
			"sglang:e2e_request_latency_seconds_sum{model_name=%q} %d\nsglang:e2e_request_latency_seconds_count{model_name=%q} %d\n", m, n, m, sum, m, n)
	}
	sg = NewTracker("sglang", rate.Config{Span: 10})
	sg.SetCompletionSpan(2, 60)
	feed(t, sg, 1, two+set("a", 10, 100)+set("b", 10, 100))
	feed(t, sg, 2, two+set("a", 12, 120)+set("b", 12, 120))
	feed(t, sg, 3, two+set("a", 14, 140))
	feed(t, sg, 4, "# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total 1\n")
	feed(t, sg, 5, two+set("a", 15, 170))
	if c, _ := sg.CompletionSpan(); c.Span.V != 10 || c.Polls != 4 {
		t.Errorf("sglang, a set gone: %+v, want the 10 s of the two polls before it kept", c)
	}
}

// Without SetCompletionSpan, or for an engine whose counters move on every
// step, no span is chosen.
func TestCompletionSpanOff(t *testing.T) {
	tr := NewTracker("llamacpp", rate.Config{Span: 10})
	tr.SetCompletionSpan(1, 60)
	tr.SetCompletionSpan(1, 0)
	feed(t, tr, 1, llama("1", "1", "1"))
	if _, ok := tr.CompletionSpan(); ok {
		t.Error("a span chosen while off")
	}
	// An engine with completion counters whose body has none chooses none.
	tr = NewTracker("llamacpp", rate.Config{Span: 10})
	tr.SetCompletionSpan(1, 60)
	for i := range 5 {
		feed(t, tr, float64(i), "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n")
	}
	if c, ok := tr.CompletionSpan(); !ok || c.Span.Valid || len(c.Counters) != 0 {
		t.Errorf("no completion counter: %+v", c)
	}
	// vLLM's decode counter moves every step: a body with no prompt
	// counter gives the span to no counter.
	tr = NewTracker("vllm", rate.Config{Span: 10})
	tr.SetCompletionSpan(1, 60)
	feed(t, tr, 1, strings.NewReplacer("%G", "1", "%R", "1", "%S", "5").Replace(stepBody))
	if c, ok := tr.CompletionSpan(); ok && (c.Span.Valid || len(c.Counters) != 0) {
		t.Errorf("vLLM without a prompt counter: %+v", c)
	}
}
