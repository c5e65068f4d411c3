package findings

import (
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Every llama.cpp slot busy with nothing deferred is no evidence of a
// hidden queue (4 clients on 4 slots read so); /metrics itself waiting for
// its answer at such polls is, and is worded as a possibility.
func TestHiddenQueueNeedsEvidence(t *testing.T) {
	build := func(lateAt map[int]bool) *builder {
		b := newTarget("l", engine.LlamaCpp)
		b.t.Slots, b.t.SlotsSource = 4, "/props total_slots"
		for i := range 10 {
			T := 1000 + float64(i)
			p := b.poll(T, float64(i*100))
			p.Running, p.Waiting = rate.Some(4), rate.Some(0)
			if lateAt[i] {
				p.Start = T - 0.6 // answered 0.6 s after the request, at a 1 s interval
			}
		}
		return b
	}
	fact := func(b *builder) (Fact, bool) {
		for _, tf := range run(b).Facts {
			for _, f := range tf.Facts {
				if f.Name == FactHiddenQueue {
					return f, true
				}
			}
		}
		return Fact{}, false
	}
	if f, ok := fact(build(nil)); ok {
		t.Errorf("full slots answered on time: %+v, want nothing stated", f)
	}
	if f, ok := fact(build(map[int]bool{3: true})); ok {
		t.Errorf("one late answer (a slow scrape): %+v, want nothing stated", f)
	}
	f, ok := fact(build(map[int]bool{3: true, 6: true}))
	if !ok || f.Value.V != 2 || f.T.V != 1003 || !strings.Contains(f.Text, "possible hidden queue") {
		t.Errorf("two late answers at full slots: %+v %v, want a possibility stated from 1003", f, ok)
	}
}
