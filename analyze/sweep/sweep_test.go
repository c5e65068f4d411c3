package sweep

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// An isotonic fit is non-increasing, keeps the sum (each pool is its
// mean), and leaves a non-increasing input as it is.
func TestIsotonic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ys := make([]float64, 1+r.IntN(9))
		for i := range ys {
			ys[i] = r.NormFloat64()
		}
		fit := Isotonic(ys)
		sum, fsum := 0.0, 0.0
		for i := range ys {
			sum, fsum = sum+ys[i], fsum+fit[i]
			if i > 0 && fit[i] > fit[i-1]+1e-12 {
				t.Fatalf("%v → %v rises at %d", ys, fit, i)
			}
		}
		if math.Abs(sum-fsum) > 1e-9 {
			t.Fatalf("%v → %v: sum %v, want %v", ys, fit, fsum, sum)
		}
		down := slices.Clone(ys)
		slices.Sort(down)
		slices.Reverse(down)
		if got := Isotonic(down); !slices.Equal(got, down) {
			t.Fatalf("a non-increasing %v became %v", down, got)
		}
	}
}

// A PCHIP through monotone points passes through them and never leaves
// their range between them (no overshoot), and its root lies where it
// crosses 0.
func TestPCHIPMonotone(t *testing.T) {
	xs := []float64{2, 4, 8, 16, 32}
	ys := []float64{0.9, 0.85, 0.8, 0.1, -3}
	p := NewPCHIP(xs, ys)
	for i, x := range xs {
		if math.Abs(p.At(x)-ys[i]) > 1e-12 {
			t.Fatalf("At(%v) = %v, want %v", x, p.At(x), ys[i])
		}
	}
	prev := math.Inf(1)
	for x := 2.0; x <= 32; x += 0.05 {
		y := p.At(x)
		if y > prev+1e-12 {
			t.Fatalf("rises at %v: %v after %v", x, y, prev)
		}
		prev = y
	}
	root := p.Root(16, 32)
	if root <= 16 || root >= 32 || math.Abs(p.At(root)) > 1e-6 {
		t.Fatalf("root %v, value there %v", root, p.At(root))
	}
}

// A slope fitted to a rising queue is positive with a large t; to noise
// around a level, small.
func TestFitSlope(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var ts, up, flat []float64
	for i := range 40 {
		x := float64(i) * 0.5
		ts = append(ts, x)
		up = append(up, 2*x+r.NormFloat64())
		flat = append(flat, 5+r.NormFloat64())
	}
	s, ok := FitSlope(ts, up)
	if !ok || math.Abs(s.PerSecond-2) > 0.2 || s.T < SlopeT {
		t.Fatalf("rising: %+v", s)
	}
	s, ok = FitSlope(ts, flat)
	if !ok || math.Abs(s.T) >= SlopeT {
		t.Fatalf("flat: %+v", s)
	}
	if _, ok := FitSlope(ts[:MinSlopePoints-1], up[:MinSlopePoints-1]); ok {
		t.Fatal("a slope from too few points")
	}
}

// At a bucket bound the share is exact; between bounds it is the bracket
// of the bounds around the threshold, and the verdict is unresolved when
// the bracket holds the quantile.
func TestAttain(t *testing.T) {
	les := []float64{0.1, 0.25, 0.5, math.Inf(1)}
	counts := []float64{50, 90, 99, 100}
	lo, hi, exact := Attain(SLO{Quantile: 0.99, Threshold: 0.5}, les, counts)
	if !exact || lo.V != 0.99 || hi.V != 0.99 {
		t.Fatalf("at a bound: %v %v %v", lo, hi, exact)
	}
	o := SLO{Quantile: 0.95, Threshold: 0.3}
	lo, hi, exact = Attain(o, les, counts)
	if exact || lo.V != 0.9 || hi.V != 0.99 || Verdict(o, lo, hi) != Unresolved {
		t.Fatalf("between bounds: %v %v %v %s", lo, hi, exact, Verdict(o, lo, hi))
	}
	o = SLO{Quantile: 0.5, Threshold: 0.3}
	if v := Verdict(o, rate.Some(0.9), rate.Some(0.99)); v != Pass {
		t.Fatalf("p50 with 90 %% under: %s", v)
	}
	if _, _, ok := Attain(o, les, []float64{0, 0, 0, 0}); ok {
		t.Fatal("a share of no observation")
	}
}

// The boundary is the highest passing level below the first failing one,
// with the fit's crossing between them; a margin that falls far faster
// across it than below is a cliff, one that falls alike is smooth.
func TestBoundary(t *testing.T) {
	mk := func(margins ...float64) []Point {
		var ps []Point
		for i, m := range margins {
			v := Pass
			if m < 0 {
				v = Fail
			}
			ps = append(ps, Point{Phase: string(rune('a' + i)), Offered: Value{Value: rate.Some(float64(int(2) << i))},
				SLOs: []Attainment{{Verdict: v, Margin: rate.Some(m)}}})
		}
		return ps
	}
	of := func(p *Point) (string, rate.Num) { return p.SLOs[0].Verdict, p.SLOs[0].Margin }
	b := boundary(mk(0.9, 0.88, 0.86, 0.8, -2), "x", of)
	if b.Pass != "d" || b.Fail != "e" || !b.At.Valid || b.At.V <= 16 || b.At.V >= 32 || b.Shape != "cliff" {
		t.Fatalf("cliff: %+v", b)
	}
	b = boundary(mk(0.8, 0.6, 0.2, -0.6), "x", of)
	if b.Pass != "c" || b.Fail != "d" || b.Shape != "smooth" {
		t.Fatalf("smooth: %+v", b)
	}
	b = boundary(mk(0.8, 0.6), "x", of)
	if b.Fail != "" || b.At.Valid {
		t.Fatalf("no failing level: %+v", b)
	}
}

// A level is saturated when requests queue and the decode rate stops
// following the load; the knee names the level below the first such.
func TestKnee(t *testing.T) {
	pt := func(name string, load, decode, waiting float64) Point {
		return Point{Phase: name, Offered: Value{Value: rate.Some(load)}, Decode: Value{Value: rate.Some(decode)},
			Waiting: Value{Value: rate.Some(waiting)}, Running: Value{Value: rate.Some(min(load, 16))}}
	}
	c := Curve{Points: []Point{pt("32", 32, 530, 16), pt("2", 2, 125, 0), pt("16", 16, 533, 0), pt("8", 8, 364, 0)}}
	c.Finish(nil)
	if c.Knee.Last != "16" || c.Knee.First != "32" || len(c.Knee.Evidence) != 2 {
		t.Fatalf("knee %+v", c.Knee)
	}
	if c.Points[0].Phase != "2" || c.Points[3].Phase != "32" {
		t.Fatalf("not in order of load: %v", c.Points)
	}
}

// A client with more requests in flight than the engine holds running
// and waiting is a hidden queue; the engine's own count offered as the
// load never is.
func TestHiddenQueue(t *testing.T) {
	eng := Value{Value: rate.Some(3.9), Source: "engine"}
	p := Point{Offered: Value{Value: rate.Some(8), Source: "client"}, Engine: eng}
	if ev := evidence(&p, nil); len(ev) != 1 || ev[0].Kind != EvHiddenQueue {
		t.Fatalf("client 8, engine 3.9: %v", ev)
	}
	p = Point{Offered: eng, Engine: eng}
	if ev := evidence(&p, nil); len(ev) != 0 {
		t.Fatalf("the engine's own load: %v", ev)
	}
}

// A decode rate that lags the load but still gains, with no queue, is
// listed and not saturation; one that stays flat is.
func TestSlowedIsNotSaturated(t *testing.T) {
	pt := func(name string, load, decode float64) Point {
		return Point{Phase: name, Offered: Value{Value: rate.Some(load)}, Decode: Value{Value: rate.Some(decode)},
			Waiting: Value{Value: rate.Some(0)}}
	}
	c := Curve{Points: []Point{pt("4", 4, 200), pt("8", 8, 240), pt("16", 16, 245)}}
	c.Finish(nil)
	if p := c.Points[1]; p.Saturated || len(p.Saturation) != 1 || p.Saturation[0].Flat {
		t.Errorf("+20 %% for +100 %%: saturated %v, %+v", p.Saturated, p.Saturation)
	}
	if p := c.Points[2]; !p.Saturated || c.Knee.Last != "8" || c.Knee.First != "16" {
		t.Errorf("+2 %% for +100 %%: saturated %v, knee %s", p.Saturated, c.Knee.Text)
	}
}

// A curve whose running reached the engine's slots names those levels
// and does not claim the capacity above the highest level; the same
// curve without a slot count does (nothing says otherwise); a client's
// offered load drops the "no queue" words.
func TestKneeAtSlots(t *testing.T) {
	eng := "mean requests_running + requests_waiting over the phase's polls"
	pt := func(name string, running, decode float64) Point {
		v := func(x float64) Value { return Value{Value: rate.Some(x), Source: eng} }
		return Point{Phase: name, Offered: v(running), Engine: v(running), Running: v(running), Decode: v(decode),
			Waiting: v(0), SLOs: []Attainment{}}
	}
	mk := func() Curve {
		return Curve{Points: []Point{pt("a", 1, 500), pt("b", 3.9, 990), pt("c", 3.8, 980)}}
	}
	c := mk()
	c.Finish(nil)
	if !strings.Contains(c.Knee.Text, "above the highest level (") || len(c.Knee.AtSlots) != 0 {
		t.Errorf("without slots: %s %v", c.Knee.Text, c.Knee.AtSlots)
	}
	c = mk()
	c.Slots, c.SlotsSource = rate.Some(4), "the length of /slots"
	c.Finish(nil)
	if strings.Contains(c.Knee.Text, "above the highest level (") || !slices.Equal(c.Knee.AtSlots, []string{"c", "b"}) ||
		!strings.Contains(c.Knee.Text, "no queue") || !strings.Contains(c.Knee.Text, "/slots") {
		t.Errorf("at 4 slots: %s %v", c.Knee.Text, c.Knee.AtSlots)
	}
	c = mk()
	c.Slots = rate.Some(8)
	c.Finish(nil)
	if len(c.Knee.AtSlots) != 0 || !strings.Contains(c.Knee.Text, "above the highest level (") {
		t.Errorf("8 slots, 3.9 running: %s %v", c.Knee.Text, c.Knee.AtSlots)
	}
	c = mk()
	c.Slots = rate.Some(4)
	c.Points[2].Offered = Value{Value: rate.Some(3.8), Source: "the client's mean requests in flight over the phase"}
	c.Finish(nil)
	if strings.Contains(c.Knee.Text, "no queue") || len(c.Knee.AtSlots) != 2 {
		t.Errorf("with the client's offered load: %s", c.Knee.Text)
	}
}
