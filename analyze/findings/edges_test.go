package findings

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

func edgesOf(f *Findings, target string) []Edge {
	var out []Edge
	for _, e := range f.Edges {
		if e.Target == target {
			out = append(out, e)
		}
	}
	return out
}

// A start is placed where its partial interval's tokens at the new level
// began, an end where the old level's stopped; each settles at the first
// poll within |ln| 0.1 of the new level (exactly 0 for an end), counted
// from the poll after the edge, under the published span and each
// counterfactual one.
func TestEdgesSettle(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, cat(rep(0, 5), []float64{400}, rep(1000, 8), []float64{300}, rep(0, 8))...)
	// The published ramp of a longer window; the counterfactual span reads each interval.
	for i, x := range []float64{200, 600, 950, 1000} {
		v.ps[6+i].Rates[Decode].V = rate.Some(x)
	}
	v.ps[6].Rates[Prompt].Reason = rate.ReasonJump
	f := run(v)
	es := edgesOf(f, "v")
	if len(es) != 2 {
		t.Fatalf("edges %+v", es)
	}
	s, e := es[0], es[1]
	if s.Kind != EdgeStart || math.Abs(s.T-1005.6) > 1e-9 || s.Poll1 != 1006 || s.Level.V != 1000 || !s.Judged ||
		s.Between != [2]float64{1005, 1006} {
		t.Errorf("start %+v", s)
	}
	if *s.SettlePoll != 3 || math.Abs(s.LnErrPoll2.V-math.Abs(math.Log(0.6))) > 1e-12 || math.Abs(s.SettleAfter.V-2.4) > 1e-9 {
		t.Errorf("start, published: settle %d ln %v after %v", *s.SettlePoll, s.LnErrPoll2, s.SettleAfter)
	}
	if c := s.Counterfactual[0]; c.Span != 2 || *c.SettlePoll != 2 || c.LnErrPoll2.V != 0 {
		t.Errorf("start, counterfactual %+v", c)
	}
	if len(s.Values) != SteadyPolls || s.Values[0].V != 200 {
		t.Errorf("values %v", s.Values)
	}
	// The jump gate holding a load start's first poll is the edge's, not an incident.
	if s.Held != 1 || len(f.Incidents) != 0 {
		t.Errorf("held %d, incidents %v", s.Held, kinds(f))
	}
	if e.Kind != EdgeEnd || math.Abs(e.T-1014.3) > 1e-9 || e.Poll1 != 1015 || e.From.V != 1000 || e.Level.V != 0 || !e.Judged {
		t.Errorf("end %+v", e)
	}
	if *e.SettlePoll != 2 || e.LnErrPoll2.Valid || e.ResidualPoll2.V != 0 {
		t.Errorf("end: settle %d ln %v residual %v", *e.SettlePoll, e.LnErrPoll2, e.ResidualPoll2)
	}
	if len(f.Settle) != 2 || !f.Settle[0].Published || f.Settle[0].Span != rate.DefaultSpan || f.Settle[1].Span != 2 {
		t.Fatalf("settle %+v", f.Settle)
	}
	p, c := f.Settle[0], f.Settle[1]
	if p.Judged != 2 || p.ByPoll2 != 1 || p.MedianSettlePoll.V != 2.5 || p.MaxSettlePoll.V != 3 || p.Starts != 1 {
		t.Errorf("published settle %+v", p)
	}
	if c.ByPoll2 != 2 || c.MedianLnErrPoll2.V != 0 ||
		c.Text != "2 s window: settled by poll 2 on 2 of 2 judged edges; median settle poll 2 (max 2); 0 unsettled; median |ln| at poll 2 0.000 over 1 start edges" {
		t.Errorf("counterfactual settle %+v", c)
	}
}

// An end whose last growing interval was full lies at that poll; poll 1 is
// the next. A published value that never reaches the level leaves the edge
// unsettled.
func TestEdgeOnAPollAndUnsettled(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, cat(rep(0, 3), rep(500, 7), rep(0, 6))...)
	for i := 4; i < 11; i++ {
		v.ps[i].Rates[Decode].V = rate.Some(100) // a window that never catches up
	}
	es := edgesOf(run(v), "v")
	if len(es) != 2 {
		t.Fatalf("edges %+v", es)
	}
	if es[0].T != 1003 || es[0].SettlePoll != nil || es[0].LnErrPoll2.V != math.Log(5) {
		t.Errorf("start %+v", es[0])
	}
	if es[1].T != 1010 || es[1].Poll1 != 1011 || *es[1].SettlePoll != 1 {
		t.Errorf("end %+v", es[1])
	}
}

// A regime shorter than 5 polls is reported, not judged; so is an edge
// inside a hole, where no interval places it.
func TestEdgesNotJudged(t *testing.T) {
	s := newTarget("short", engine.VLLM)
	s.series(1000, 0, cat(rep(0, 3), rep(1000, 2), rep(0, 6))...)
	h := newTarget("hole", engine.LlamaCpp)
	g := h.series(1000, 0, 0, 0, 0)
	h.series(1008, g+800, rep(100, 6)...)
	h.ps[4].Interval = Value{V: rate.Some(100), Window: rate.Some(5)}
	f := run(s, h)
	es := edgesOf(f, "short")
	if len(es) != 2 || es[0].Judged || !strings.Contains(es[0].Why, "held 2 poll(s); 5 are needed") || !es[1].Judged {
		t.Fatalf("short spell edges %+v", es)
	}
	if es[0].SettlePoll != nil {
		t.Error("an edge not judged has a settle poll")
	}
	hs := edgesOf(f, "hole")
	if len(hs) != 1 || hs[0].Judged || !strings.Contains(hs[0].Why, "without a usable interval") ||
		hs[0].Between != [2]float64{1003, 1009} {
		t.Fatalf("hole edge %+v", hs)
	}
	// A recording that ends in the new regime: not enough polls to judge.
	e := newTarget("end", engine.VLLM)
	e.series(1000, 0, 0, 0, 0, 100, 100)
	es = edgesOf(run(e), "end")
	if len(es) != 1 || es[0].Judged || !strings.Contains(es[0].Why, "the recording ends") {
		t.Fatalf("edges at the end %+v", es)
	}
	if s := run(newTarget("none", engine.VLLM)).Settle[0]; s.Text != "10 s window (published): no judged edge (0 found)" {
		t.Errorf("settle of nothing %q", s.Text)
	}
}

// A counter that moves only when requests finish never reads flat at a
// cadence shorter than a request: no edge. A reset interval breaks no
// regime.
func TestNoEdgesWhileBusy(t *testing.T) {
	l := newTarget("l", engine.LlamaCpp)
	g := l.series(1000, 0, 64, 128, 64, 64, 128, 64)
	l.poll(1007, 10)
	l.series(1008, g, 64, 128, 64)
	if es := run(l).Edges; len(es) != 0 {
		t.Errorf("edges %+v", es)
	}
}

func TestPoll2(t *testing.T) {
	start := &Edge{Kind: EdgeStart, Level: rate.Some(100)}
	if l, r := poll2(start, rate.Some(0)); l.Valid || r.Valid {
		t.Error("a zero value has a log error")
	}
	if l, _ := poll2(start, rate.Num{}); l.Valid {
		t.Error("a null value has a log error")
	}
	end := &Edge{Kind: EdgeEnd, From: rate.Some(0)}
	if _, r := poll2(end, rate.Some(3)); r.Valid {
		t.Error("an end from 0 has a residual")
	}
	if settled(start, rate.Num{}) || settled(&Edge{Kind: EdgeStart}, rate.Some(1)) {
		t.Error("settled without a value or a level")
	}
	v := &view{t: &Target{}}
	if p := v.pollAfter(5); p != -1 {
		t.Errorf("poll after in no polls: %d", p)
	}
	if es := v.settle(start, -1, 0, 2, nil); es.SettlePoll != nil || len(es.Values) != 0 {
		t.Errorf("settle without polls %+v", es)
	}
}

// A busy counter that only moves when requests finish stays flat for an
// interval or two between completions: fewer than MinFlatPolls flat
// intervals inside growth are growth, not an end and a start.
func TestBridgeShortFlats(t *testing.T) {
	st := []state{unknown, grow, flat, grow, flat, flat, grow, flat, flat, flat, grow, flat, flat}
	bridgeShortFlats(st)
	want := []state{unknown, grow, grow, grow, grow, grow, grow, flat, flat, flat, grow, flat, flat}
	for i := range st {
		if st[i] != want[i] {
			t.Fatalf("states %v, want %v", st, want)
		}
	}
}

// An engine whose decode counter moves only when requests complete (llama.cpp)
// reads flat for whole runs of polls while it is busy. Its step counter
// (n_decode_total) moves on every step: the edges are read from it, placed
// by its pace, and the start is reported, not judged, because no decode
// level holds between completions.
func TestEdgesOnStepCounter(t *testing.T) {
	l := newTarget("l", engine.LlamaCpp)
	// Completions land in bursts with four flat intervals between them.
	gen := cat(rep(0, 5), []float64{0, 300, 0, 0, 0, 0, 450, 0, 0, 0, 0, 200}, rep(0, 8))
	steps := cat(rep(0, 5), []float64{10}, rep(20, 10), []float64{5}, rep(0, 8))
	g, s := 0.0, 1000.0
	for i := 0; i <= len(gen); i++ {
		if i > 0 {
			g, s = g+gen[i-1], s+steps[i-1]
		}
		p := l.poll(1000+float64(i), g)
		p.Steps = rate.Some(s)
	}
	f := run(l)
	es := edgesOf(f, "l")
	if len(es) != 2 {
		t.Fatalf("edges %+v", es)
	}
	st, en := es[0], es[1]
	// Its level is the mean over polls 2-5 (one completion of 300 in 4 s), not their median 0.
	if st.Kind != EdgeStart || st.Signal != "engine-step counter" || math.Abs(st.T-1005.5) > 1e-9 || st.Judged ||
		!strings.Contains(st.Why, "moves at request completion") || st.Level.V != 75 ||
		!strings.HasPrefix(st.LevelSource, "Δdecode/Δt over polls 2-5") {
		t.Errorf("start %+v", st)
	}
	// The last busy interval ran a quarter of the steps' pace: the end is a quarter into it.
	if en.Kind != EdgeEnd || math.Abs(en.T-1016.25) > 1e-9 || !en.Judged || en.Signal != "engine-step counter" {
		t.Errorf("end %+v", en)
	}
	// The same counter read alone flickers: bridging keeps fewer than 3 flat polls only.
	l2 := newTarget("l2", engine.LlamaCpp)
	l2.series(1000, 0, gen...)
	if n := len(edgesOf(run(l2), "l2")); n <= 2 {
		t.Errorf("the decode counter alone gives %d edges; the test no longer shows the step counter's use", n)
	}
	// A step counter that restarts, or is missing at one end, says nothing of its interval.
	r := newTarget("r", engine.LlamaCpp)
	for i, s := range []float64{100, 120, 5, 25} {
		p := r.poll(1000+float64(i), float64(i)*10)
		if i != 3 {
			p.Steps = rate.Some(s)
		}
	}
	v := newView(r.target(), rate.Config{}.WithDefaults())
	if v.signal != signalSteps || v.state[1] != grow || v.state[2] != unknown || v.state[3] != unknown {
		t.Errorf("signal %v, states %v", v.signal, v.state)
	}
}

// Without a step counter, requests running at both ends of a flat decode
// interval keep it busy; running at neither end, it is flat. Growth across
// a hole is not placed.
func TestEdgesOnRunningRequests(t *testing.T) {
	l := newTarget("l", engine.LlamaCpp)
	gen := cat(rep(0, 4), []float64{100, 0, 0, 0, 0, 0, 150, 0, 0, 0, 0, 120}, rep(0, 6))
	g := 0.0
	for i := 0; i <= len(gen); i++ {
		if i > 0 {
			g += gen[i-1]
		}
		p := l.poll(1000+float64(i), g)
		p.Running = rate.Some(0)
		if i >= 4 && i < 16 {
			p.Running = rate.Some(2)
		}
	}
	es := edgesOf(run(l), "l")
	if len(es) != 2 || es[0].Kind != EdgeStart || es[1].Kind != EdgeEnd || es[0].Signal != "decode counter, and requests running" {
		t.Fatalf("edges %+v", es)
	}
	p, q := &Poll{T: 0, Running: rate.Some(1)}, &Poll{T: 10, Running: rate.Some(1), Interval: Value{V: rate.Some(0)}}
	if s, _ := signalRunning.read(p, q, true); s != unknown {
		t.Errorf("busy across a hole: %v", s)
	}
	// An engine that moves every step keeps reading its decode counter.
	if s := signalOf(&Target{Engine: engine.VLLM, Polls: PollsOf(Poll{Steps: rate.Some(1)})}); s != signalDecode {
		t.Errorf("vLLM reads %v", s)
	}
	if s := signalOf(&Target{Engine: engine.LlamaCpp, Polls: PollsOf(Poll{})}); s != signalDecode {
		t.Errorf("llama.cpp without steps or running reads %v", s)
	}
}

// Busy throughout but without a level: a start whose per-interval rates
// swing is reported with that reason; growth of the steps across a hole is
// not placed.
func TestEdgeWithoutLevel(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, cat(rep(0, 3), []float64{1000, 100, 1000, 100, 1000, 100}, rep(0, 6))...)
	es := edgesOf(run(v), "v")
	if len(es) != 2 || es[0].Judged || !strings.Contains(es[0].Why, "held a level (|ln| ≤ 0.1) for 1 poll(s)") {
		t.Fatalf("edges %+v", es)
	}
	p, q := &Poll{T: 0, Steps: rate.Some(1)}, &Poll{T: 10, Steps: rate.Some(9), Interval: Value{V: rate.Some(0)}}
	if s, _ := signalSteps.read(p, q, true); s != unknown {
		t.Errorf("steps across a hole: %v", s)
	}
}

// levelChangeByMedians is levelChange without its shortcut for rates
// close together: both medians found at every poll.
func levelChangeByMedians(rates []float64, busy []bool, i, k int) (float64, bool) {
	var before, after []float64
	for j := 1; j <= k; j++ {
		if !busy[i-j] || !busy[i+j] {
			return 0, false
		}
		before, after = append(before, rates[i-j]), append(after, rates[i+j])
	}
	b, a := median(before), median(after)
	if !b.Valid || !a.Valid || b.V <= 0 || a.V <= 0 {
		return 0, false
	}
	ln := math.Abs(math.Log(a.V / b.V))
	if ln <= LevelLn {
		return 0, false
	}
	mid := (a.V + b.V) / 2
	up := a.V > b.V
	wrongBefore, wrongAfter := 0, 0
	for j := range k {
		if (before[j] > mid) == up {
			wrongBefore++
		}
		if (after[j] > mid) != up {
			wrongAfter++
		}
	}
	if wrongBefore > levelStray || wrongAfter > levelStray {
		return 0, false
	}
	return ln, true
}

// levelChange answers as the medians do at every poll: rates spread by
// ratios around LevelLn's and the shortcut's bound, and the values that
// defeat it (0, negatives, NaN, infinities, the largest floats).
func TestLevelChangeAsMedians(t *testing.T) {
	const n = 4000
	rng := rand.New(rand.NewPCG(24, 11))
	odd := []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.MaxFloat64 / 3, 5e-324}
	for _, spread := range []float64{1.01, 1.3, levelNear, 1.45, math.Exp(LevelLn), 1.5, 2, 4} {
		rates, busy := make([]float64, n), make([]bool, n)
		level := 1000.0
		for i := range rates {
			if rng.IntN(200) == 0 {
				level *= math.Pow(spread, 2*rng.Float64()-1) * 1.6
			}
			rates[i] = level * math.Pow(spread, rng.Float64())
			busy[i] = rng.IntN(100) != 0
			if rng.IntN(300) == 0 {
				rates[i] = odd[rng.IntN(len(odd))]
			}
		}
		edges := 0
		for i := levelPolls; i+levelPolls < n; i++ {
			ln, ok := levelChange(rates, busy, i, levelPolls)
			wln, wok := levelChangeByMedians(rates, busy, i, levelPolls)
			if ok != wok || math.Float64bits(ln) != math.Float64bits(wln) {
				t.Fatalf("spread %v, poll %d: levelChange %v %v, by the medians %v %v", spread, i, ln, ok, wln, wok)
			}
			if ok {
				edges++
			}
		}
		if spread == 4 && edges == 0 {
			t.Fatalf("spread %v: no level edge in %d polls: the comparison tells nothing", spread, n)
		}
	}
}
