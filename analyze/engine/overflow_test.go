package engine

import (
	"math"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// An engine that serves counters near float64's limit makes sums and
// differences overflow: such a cell is refused (overflow) with its source
// kept, never published as +Inf or NaN.
func TestOverflowIsRefused(t *testing.T) {
	body := func(prompt, gen float64) string {
		return "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=\"m\"} " +
			rate.Some(prompt).String() + "\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} " +
			rate.Some(gen).String() + "\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n"
	}
	tr := NewTracker("vllm", rate.Config{})
	var cells Cells
	for i, v := range []float64{1e308, 1.7e308} {
		cells = feed(t, tr, float64(2*i), body(v, v))
	}
	overflowed := 0
	for _, n := range cells {
		v := n.Cell.Value
		if v.Valid && (math.IsInf(v.V, 0) || math.IsNaN(v.V)) {
			t.Errorf("%s published %v", n.Name, v.V)
		}
		if n.Cell.Reason == rate.ReasonOverflow {
			overflowed++
			if n.Cell.Source == "" {
				t.Errorf("%s: overflow refusal without its source", n.Name)
			}
		}
	}
	if overflowed == 0 {
		t.Fatalf("no cell refused as overflow: %v", cells)
	}
}
