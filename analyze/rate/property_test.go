package rate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// work is one label set's true production: a piecewise-constant rate, so the
// tokens produced by time t, W(t), are known exactly; and the restarts that
// set its counter back to 0.
type work struct {
	at, rate, cum []float64 // segment starts, their rates, W at each start
	resets        []float64 // restart times, ascending
	carried       float64   // the counter's value at the first segment start
	created       bool      // exports _created
}

func (w *work) W(t float64) float64 {
	i, found := slices.BinarySearch(w.at, t)
	if !found {
		i--
	}
	i = max(i, 0)
	return w.cum[i] + w.rate[i]*(t-w.at[i])
}

// reading is the counter at time tau: work since the last restart before it.
func (w *work) reading(tau float64) (v, created float64) {
	i, _ := slices.BinarySearch(w.resets, tau)
	if i == 0 {
		return w.carried + w.W(tau), 1e9
	}
	r := w.resets[i-1]
	return w.W(tau) - w.W(r), 1e9 + r
}

// TestPropertyTimelines replays random counter timelines (gaps, stalls,
// catch-ups, restarts with and without a signal, stale bodies, jitter, sets
// joining and vanishing, bad readings) and checks what any published cell
// must satisfy whatever happened:
//   - a null has a reason and a number none; no rate is negative;
//   - a window lies between the floor and the ceiling;
//   - per label set, rate × window never exceeds the work really done from
//     the base poll's request start to the end poll's first byte, and the
//     rate exceeds the true rate over that widened interval by at most the
//     stale fraction;
//   - a summed cell is the sum of its sets' cells, over the widest window;
//   - a set's rate above JumpFactor × its last published rate (raised to
//     JumpFloor) is published only after a poll held it as a jump.
func TestPropertyTimelines(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { propertyTimeline(t, seed) })
	}
}

func propertyTimeline(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	span := []float64{1, 2, 5, 10}[rng.IntN(4)]
	cadence := span * (0.3 + 0.7*rng.Float64())
	cfg := Config{Span: span}
	if rng.IntN(4) == 0 {
		cfg.StaleFraction = 0.1 + 0.5*rng.Float64()
	}
	e := New(cfg)
	// twin is fed the same polls as registered readings: it must publish
	// exactly what e does.
	twin := New(cfg)
	cfg = e.Config()
	const t0, horizon = 1_000.0, 400.0

	// The target's process restarts; each set restarts with it, and on its own.
	var procRestarts []float64
	for range rng.IntN(3) {
		procRestarts = append(procRestarts, t0+horizon*rng.Float64())
	}
	slices.Sort(procRestarts)
	exportsStart := rng.IntN(2) == 0

	sets := make([]*work, 1+rng.IntN(3))
	labels := make([]string, len(sets))
	for i := range sets {
		w := &work{carried: float64(rng.IntN(1_000_000)), created: rng.IntN(2) == 0}
		for at := t0 - 10; at < t0+horizon+60; at += 1 + 30*rng.Float64() {
			r := 0.0
			switch rng.IntN(4) {
			case 1:
				r = 100 * rng.Float64()
			case 2:
				r = 3000 * rng.Float64()
			}
			cum := 0.0
			if n := len(w.at); n > 0 {
				cum = w.cum[n-1] + w.rate[n-1]*(at-w.at[n-1])
			}
			w.at, w.rate, w.cum = append(w.at, at), append(w.rate, r), append(w.cum, cum)
		}
		w.resets = slices.Clone(procRestarts)
		for range rng.IntN(3) {
			w.resets = append(w.resets, t0+horizon*rng.Float64())
		}
		slices.Sort(w.resets)
		sets[i] = w
		labels[i] = Labels("engine", fmt.Sprint(i))
	}
	joins := make([]float64, len(sets))
	for i := 1; i < len(sets); i++ {
		joins[i] = t0 + horizon*rng.Float64()/2
	}

	const series = "vllm:generation_tokens_total"
	starts := map[float64]float64{} // poll time → request start, for the bound
	jumps := make([]jumpTrack, len(sets))
	now, last := t0, 0.0
	for now < t0+horizon {
		start := now - 0.001 - 0.05*rng.Float64()
		if rng.IntN(15) == 0 {
			// A stale body: the reply's first byte came long after the request.
			start = now - (now-last)*rng.Float64()
		}
		p := Poll{T: now, Start: start}
		if exportsStart {
			i, _ := slices.BinarySearch(procRestarts, now)
			p.ProcessStart = 1e9
			if i > 0 {
				p.ProcessStart += procRestarts[i-1]
			}
		}
		for i, w := range sets {
			if now < joins[i] || rng.IntN(20) == 0 {
				continue // not joined yet, or missing from this scrape
			}
			tau := start + (now-start)*rng.Float64() // when the body was rendered
			v, created := w.reading(tau)
			if !w.created {
				created = 0
			}
			if rng.IntN(100) == 0 {
				v = math.NaN()
			}
			p.Samples = append(p.Samples, Sample{Key: Key{series, labels[i]}, Value: v, Created: created})
		}
		rng.Shuffle(len(p.Samples), func(i, j int) { p.Samples[i], p.Samples[j] = p.Samples[j], p.Samples[i] })
		e.Observe(p)
		q := p
		q.Samples, q.Readings = nil, nil
		for _, s := range p.Samples {
			q.Readings = append(q.Readings, Reading{ID: twin.Register(s.Key), Value: s.Value, Created: s.Created})
		}
		twin.Observe(q)
		if a, b := e.Rate(series, nil), twin.Rate(series, nil); !reflect.DeepEqual(a, b) {
			t.Fatalf("t=%g: from samples %+v, from readings %+v", now, a, b)
		}
		if !e.disordered {
			starts[now] = start
		}
		checkPoll(t, e, cfg, series, labels, sets, jumps, starts, now)

		last = now
		switch r := rng.IntN(40); {
		case r == 0: // a stall
			now += span * (1 + 3*rng.Float64())
		case r == 1: // the loop's catch-up right behind a slow poll
			now += 0.1 + 0.3*rng.Float64()
		case r == 2: // a poll out of order, then back on the clock
			now -= rng.Float64()
		default:
			now += cadence * (1 + 0.05*rng.NormFloat64())
		}
		if now < last && rng.IntN(2) == 0 {
			now = last + cadence
		}
	}
}

// jumpTrack follows one set's published rates and jump holds.
type jumpTrack struct {
	last      float64
	published bool
	held      bool // a poll since the last published rate held a jump
}

func checkPoll(t *testing.T, e *Estimator, cfg Config, series string, labels []string, sets []*work,
	jumps []jumpTrack, starts map[float64]float64, now float64) {
	t.Helper()
	const eps = 1e-6
	sum, widest, parts := 0.0, 0.0, 0
	for i, l := range labels {
		c := e.Rate(series, func(s string) bool { return s == l })
		checkCell(t, cfg, c, now)
		j := &jumps[i]
		if !c.Value.Valid {
			j.held = j.held || c.Reason == ReasonJump || slices.ContainsFunc(c.Notes, func(n string) bool { return n == "jump "+l })
			continue
		}
		if j.published && !j.held && c.Value.V > cfg.JumpFactor*max(j.last, cfg.JumpFloor) {
			t.Errorf("t=%g %s: %g/s after %g/s was never held as a jump", now, l, c.Value.V, j.last)
		}
		// A window stretched past the span (over a hole) is no reference
		// when there was one before the hole.
		if !j.published || c.Window.V <= cfg.Span+1e-3 {
			*j = jumpTrack{last: c.Value.V, published: true}
		} else {
			j.held = false
		}
		parts++
		sum += c.Value.V
		widest = max(widest, c.Window.V)
		tb := now - c.Window.V
		sb, ok := startNear(starts, tb)
		if !ok {
			t.Fatalf("t=%g %s: window %g names no poll", now, l, c.Window.V)
		}
		done := sets[i].W(now) - sets[i].W(sb)
		if c.Value.V*c.Window.V > done+eps*max(1, done) {
			t.Errorf("t=%g %s: %g/s over %gs claims %g tokens, the engine did %g", now, l,
				c.Value.V, c.Window.V, c.Value.V*c.Window.V, done)
		}
		if trueRate := done / (now - sb); c.Value.V > (1+cfg.StaleFraction)*trueRate+eps {
			t.Errorf("t=%g %s: %g/s against a true %g/s over the widened window", now, l, c.Value.V, trueRate)
		}
	}
	c := e.Rate(series, nil)
	checkCell(t, cfg, c, now)
	if c.Value.Valid && (!near(c.Value.V, sum, 1e-9*max(1, sum)) || c.Window.V != widest || parts == 0) {
		t.Errorf("t=%g: cell %s over %s is not the sum %g of its %d sets over %g", now, c.Value, c.Window, sum, parts, widest)
	}
}

func startNear(starts map[float64]float64, at float64) (float64, bool) {
	if s, ok := starts[at]; ok {
		return s, true
	}
	for k, s := range starts {
		if math.Abs(k-at) < 1e-6 {
			return s, true
		}
	}
	return 0, false
}

func checkCell(t *testing.T, cfg Config, c Cell, now float64) {
	t.Helper()
	switch {
	case c.Value.Valid == (c.Reason != ""):
		t.Errorf("t=%g: a null needs a reason and a number none: %s", now, show(c))
	case !c.Value.Valid:
	case c.Value.V < 0 || math.IsNaN(c.Value.V):
		t.Errorf("t=%g: negative or NaN rate: %s", now, show(c))
	case !c.Window.Valid || c.Window.V < cfg.MinWindow || c.Window.V > cfg.CeilingFactor*cfg.Span+1e-9:
		t.Errorf("t=%g: window outside floor and ceiling: %s", now, show(c))
	}
}

// TestPropertyHistograms draws random observation streams into fixed buckets
// and checks the windowed histogram against the stream itself: the count is
// the number of observations in the window, the mean their mean, and each
// quantile lies in the bucket that holds its rank, in order p50 ≤ p95 ≤ p99.
func TestPropertyHistograms(t *testing.T) {
	bounds := []float64{0.01, 0.05, 0.1, 0.5, 1, 5, math.Inf(1)}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0x415))
		e := New(Config{Span: 10})
		counts := make([]float64, len(bounds))
		var total, sum float64
		for step := range 20 {
			var obs []float64
			for range rng.IntN(30) {
				obs = append(obs, rng.ExpFloat64()*[]float64{0.05, 0.5, 3}[rng.IntN(3)])
			}
			winSum := 0.0
			for _, o := range obs {
				winSum += o
				for i, b := range bounds {
					if o <= b {
						counts[i]++
					}
				}
			}
			total += float64(len(obs))
			sum += winSum
			p := Poll{T: float64(10 * step)}
			for i, b := range bounds {
				p.Samples = append(p.Samples, Sample{Key: Key{"h_bucket", Labels("le", fmt.Sprint(b))}, Value: counts[i]})
			}
			p.Samples = append(p.Samples, Sample{Key: Key{"h_count", ""}, Value: total}, Sample{Key: Key{"h_sum", ""}, Value: sum})
			e.Observe(p)
			h := e.Histogram("h", nil)
			if step == 0 {
				continue
			}
			if !h.Count.Value.Valid || h.Count.Value.V != float64(len(obs)) {
				t.Fatalf("seed %d step %d: count %s, want %d", seed, step, h.Count.Value, len(obs))
			}
			if len(obs) == 0 {
				if h.Mean.Reason != ReasonEmpty || h.P50.Reason != ReasonEmpty {
					t.Fatalf("seed %d step %d: an empty window gave %s / %s", seed, step, show(h.Mean), show(h.P50))
				}
				continue
			}
			if !near(h.Mean.Value.V, winSum/float64(len(obs)), 1e-9) {
				t.Fatalf("seed %d step %d: mean %s, want %g", seed, step, h.Mean.Value, winSum/float64(len(obs)))
			}
			sorted := slices.Sorted(slices.Values(obs))
			prev := math.Inf(-1)
			for _, q := range []struct {
				p float64
				c Cell
			}{{0.5, h.P50}, {0.95, h.P95}, {0.99, h.P99}} {
				v := q.c.Value.V
				if v < prev {
					t.Fatalf("seed %d step %d: quantiles out of order: %g after %g", seed, step, v, prev)
				}
				prev = v
				// The observation at the rank lies in the bucket the estimate is in.
				x := sorted[max(0, int(math.Ceil(q.p*float64(len(obs))))-1)]
				i, _ := slices.BinarySearch(bounds, x)
				lo := 0.0
				if i > 0 {
					lo = bounds[i-1]
				}
				if hi := bounds[i]; math.IsInf(hi, 1) {
					if hi = bounds[len(bounds)-2]; v != hi {
						t.Fatalf("seed %d step %d: q%g = %g past the last bound, want %g", seed, step, q.p, v, hi)
					}
				} else if v < lo-1e-12 || v > hi+1e-12 {
					t.Fatalf("seed %d step %d: q%g = %g outside (%g, %g] holding %g", seed, step, q.p, v, lo, hi, x)
				}
			}
		}
	}
}
