package rate

import (
	"math"
	"testing"
)

// A key's own span that is not a positive number gives it the
// configuration's span back.
func TestSetSpanInvalid(t *testing.T) {
	for _, sp := range []float64{-1, 0, math.NaN(), math.Inf(1)} {
		e := New(Config{Span: 10})
		k := Key{Series: "c"}
		id := e.Register(k)
		e.SetSpan(id, 1)
		e.SetSpan(id, sp)
		for i, v := range []float64{0, 10, 20, 30} {
			e.Observe(Poll{T: float64(i), Samples: []Sample{{Key: k, Value: v}}})
		}
		if c := e.Rate("c", nil); !c.Window.Valid || c.Window.V != 3 || c.Value.V != 10 {
			t.Errorf("span %v: %+v, want 10/s over the 3 s the configured span reaches", sp, c)
		}
	}
}
