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
