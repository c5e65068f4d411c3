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

// A key whose own span is longer than the configured one takes its windows
// as the jump gate's reference up to its own span: a load that rises step
// by step over 30 s windows is never held, where the reference stuck at
// the first rate (the configured 10 s being shorter than every window)
// held it as soon as it passed 8 × that rate.
func TestLongKeySpanIsTheJumpReference(t *testing.T) {
	e := New(Config{Span: 10})
	k := Key{Series: "c"}
	e.SetSpan(e.Register(k), 30)
	v, r := 0.0, 20.0
	for i := range 40 {
		v += 5 * r
		r *= 1.15
		e.Observe(Poll{T: float64(5 * i), Samples: []Sample{{Key: k, Value: v}}})
		c := e.Rate("c", nil)
		if i > 0 && !c.Value.Valid {
			t.Fatalf("poll %d (rate %.0f/s): %+v, want a value: the reference follows the rising load", i, r, c)
		}
		if i > 6 && c.Window.V != 30 {
			t.Fatalf("poll %d: window %v, want the key's 30 s", i, c.Window)
		}
	}
}

// A span changed between polls applies from the next reading: made
// shorter, the window shrinks at once; made longer, it grows back as the
// history allows.
func TestSetSpanBetweenPolls(t *testing.T) {
	e := New(Config{Span: 10})
	k := Key{Series: "c"}
	id := e.Register(k)
	obs := func(T float64) Cell {
		e.Observe(Poll{T: T, Samples: []Sample{{Key: k, Value: 10 * T}}})
		return e.Rate("c", nil)
	}
	for T := range 12 {
		obs(float64(T))
	}
	e.SetSpan(id, 2)
	if c := obs(12); c.Window.V != 2 || c.Value.V != 10 {
		t.Errorf("span 2: %+v", c)
	}
	e.SetSpan(id, 6)
	if c := obs(13); c.Window.V != 3 {
		t.Errorf("span 6 right after 2: window %v, want 3 (the history kept)", c.Window)
	}
	for T := 14; T < 20; T++ {
		obs(float64(T))
	}
	if c := obs(20); c.Window.V != 6 {
		t.Errorf("span 6 later: window %v", c.Window)
	}
}

// A counter that moves once per request (a prompt counter at prefill) at
// one request in flight: 100 tokens every 1.7 s, polled every second over
// a 1.7 s span, so most windows hold one request and some none. As a
// per-request key, no window after the load's first is held as a jump: a
// window holding a request after one that held none is a request-sized
// step. As a plain key the same windows are refused (the gate's reference
// is 0 after an empty window). A stale body's catch-up of five requests
// in one poll is still held.
func TestPerRequestStepIsNoJump(t *testing.T) {
	run := func(perRequest bool, catchUp bool) (jumps int) {
		e := New(Config{Span: 1.7})
		k := Key{Series: "prompt"}
		id := e.Register(k)
		e.SetSpan(id, 1.7)
		e.SetPerRequest(id, perRequest)
		for i := range 60 {
			T := float64(i)
			v := 100 * math.Floor(T/1.7)
			if catchUp && i >= 40 {
				v += 500 // five requests the body held back arrive at poll 40
			}
			e.Observe(Poll{T: T, Samples: []Sample{{Key: k, Value: v}}})
			c := e.Rate("prompt", nil)
			if c.Reason == ReasonJump && i > 2 && (!catchUp || i != 40) {
				jumps++
			}
			if catchUp && i == 40 && c.Reason != ReasonJump {
				t.Errorf("per-request %v: the catch-up of five requests at poll 40 read %+v, want held as a jump", perRequest, c)
			}
		}
		return jumps
	}
	if n := run(true, false); n != 0 {
		t.Errorf("per-request key: %d windows held as jumps, want 0", n)
	}
	if n := run(false, false); n == 0 {
		t.Error("plain key: no window held as a jump; the test no longer shows what SetPerRequest changes")
	}
	run(true, true)
}
