package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// lcBody is a llama.cpp b4748 body (its TYPE lines as that build prints
// them): n_busy_slots_per_decode typed counter, a lifetime average.
func lcBody(predicted, decodes int, busy float64) string {
	return fmt.Sprintf(`# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total %d
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total %d
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total %d
# TYPE llamacpp:n_busy_slots_per_decode counter
llamacpp:n_busy_slots_per_decode %g
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
`, predicted/3, predicted, decodes, busy)
}

// A lifetime average typed counter falls in a healthy process: no restart,
// and it is listed once as mistyped.
func TestLifetimeAverageFallIsNoRestart(t *testing.T) {
	tr := NewTracker("", rate.Config{Span: 2, MinWindow: 0.5})
	feed(t, tr, 100, lcBody(1000, 300, 3.97))
	for i, busy := range []float64{3.83, 3.72, 3.62} {
		feed(t, tr, 101+float64(i), lcBody(1500+500*i, 450+150*i, busy))
		if r := tr.Restart(); r != "" {
			t.Fatalf("poll %d: restart %q from a lifetime average falling", i+2, r)
		}
	}
	m := tr.Mistyped()
	if len(m) != 1 || m[0].Family != "llamacpp:n_busy_slots_per_decode" {
		t.Fatalf("mistyped = %+v, want n_busy_slots_per_decode once", m)
	}
	// A monotonic counter falling is still a restart.
	feed(t, tr, 104, lcBody(20, 5, 1))
	if r := tr.Restart(); !strings.Contains(r, "fell") || strings.Contains(r, "n_busy_slots_per_decode") {
		t.Fatalf("restart %q, want a monotonic counter's fall", r)
	}
}

// An unknown engine's counters may be anything typed counter: one falling
// is no restart, two falling together are.
func TestGenericNeedsTwoCountersFalling(t *testing.T) {
	body := func(a, b float64) string {
		return fmt.Sprintf("# TYPE foo_total counter\nfoo_total %g\n# TYPE bar_total counter\nbar_total %g\n", a, b)
	}
	tr := NewTracker("", rate.Config{Span: 2, MinWindow: 0.5})
	feed(t, tr, 100, body(10, 10))
	feed(t, tr, 101, body(9, 20))
	if r := tr.Restart(); r != "" {
		t.Fatalf("one counter falling: restart %q", r)
	}
	feed(t, tr, 102, body(1, 2))
	if r := tr.Restart(); !strings.Contains(r, "foo_total fell") || !strings.Contains(r, "bar_total fell") {
		t.Fatalf("two counters falling: restart %q, want both named", r)
	}
}

// trtGeneralBody is the general family of TensorRT-LLM's real capture
// (tensorrtllm_backend README): an iteration counter and a clock, both
// typed gauge, with a request gauge for detection.
func trtGeneralBody(iter, clock float64) string {
	return fmt.Sprintf(`# HELP nv_trt_llm_request_metrics TRT LLM request metrics
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 1
# HELP nv_trt_llm_general_metrics General TRT LLM metrics
# TYPE nv_trt_llm_general_metrics gauge
nv_trt_llm_general_metrics{general_type="iteration_counter",model="tensorrt_llm",version="1"} %g
nv_trt_llm_general_metrics{general_type="timestamp",model="tensorrt_llm",version="1"} %g
`, iter, clock)
}

// A counter typed gauge (declared monotonic) falling is a restart; a clock
// typed gauge (declared so) falling never is, and neither is rated twice.
func TestDeclaredKindsTypedGauge(t *testing.T) {
	tr := NewTracker("", rate.Config{Span: 2, MinWindow: 0.5})
	feed(t, tr, 100, trtGeneralBody(1000, 1700074049))
	if id, _ := tr.Engine(); id != TRTLLM {
		t.Fatalf("engine %q, want %q", id, TRTLLM)
	}
	// The clock set back (NTP) while iterations go on: no restart.
	feed(t, tr, 101, trtGeneralBody(1100, 1700074000))
	if r := tr.Restart(); r != "" {
		t.Fatalf("a clock falling: restart %q", r)
	}
	if m := tr.Mistyped(); len(m) != 0 {
		t.Fatalf("mistyped %+v: only counters typed counter that count nothing are listed", m)
	}
	// The iteration counter falls: a new process.
	feed(t, tr, 102, trtGeneralBody(3, 1700074002))
	if r := tr.Restart(); !strings.Contains(r, "nv_trt_llm_general_metrics fell") {
		t.Fatalf("iteration counter fell: restart %q, want it named", r)
	}
}
