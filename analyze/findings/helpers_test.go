package findings

import (
	"math"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// builder makes a target tick by tick: every tick is a row, and an ok row
// is a poll whose decode counter the test sets. Published cells default to
// the interval rate (a span of one interval) unless a test overrides them.
type builder struct {
	t    *Target
	ps   []Poll // the target's polls, packed into t by target
	seq  int64
	last float64 // the decode counter at the last poll; NaN before the first
}

func newTarget(name, eng string) *builder {
	return &builder{t: &Target{Name: name, Engine: eng, Interval: 1, Histograms: map[string][]float64{},
		Cells: map[string]CellCount{}, Counters: map[string]*Counter{}, Info: map[string][]map[string]string{},
		Sources: map[string]string{}}, last: math.NaN()}
}

// poll adds an ok tick at t whose decode counter reads gen.
func (b *builder) poll(t, gen float64) *Poll {
	b.t.Rows = append(b.t.Rows, Row{Run: "r", Seq: b.seq, Outcome: "ok", Scheduled: t - 0.01, Start: t - 0.005, FirstByte: t,
		End: t + 0.001})
	p := Poll{T: t, Start: t - 0.005, Row: len(b.t.Rows) - 1}
	b.seq++
	p.Totals[Decode] = rate.Some(gen)
	ps := b.ps
	switch {
	case len(ps) == 0:
		p.Interval.Reason, p.Rates[Decode].Reason = rate.ReasonNoBaseline, rate.ReasonNoBaseline
	case gen < b.last:
		p.Interval.Reason, p.Rates[Decode].Reason = rate.ReasonReset, rate.ReasonReset
	default:
		dt := t - ps[len(ps)-1].T
		r := (gen - b.last) / dt
		p.Interval = Value{V: rate.Some(r), Window: rate.Some(dt)}
		p.Rates[Decode] = p.Interval
	}
	p.Spans = []rate.Num{p.Rates[Decode].V}
	b.last = gen
	b.ps = append(b.ps, p)
	return &b.ps[len(b.ps)-1]
}

// target is the target with its polls as they are now.
func (b *builder) target() *Target {
	b.t.Polls = PollsOf(b.ps...)
	return b.t
}

// fail adds a tick at t that is not a poll.
func (b *builder) fail(t float64, outcome, err string) {
	r := Row{Run: "r", Seq: b.seq, Outcome: outcome, Scheduled: t - 0.01, Error: err}
	if outcome != "missed" {
		r.Start, r.End = t-0.005, t
	}
	b.t.Rows = append(b.t.Rows, r)
	b.seq++
}

// series adds polls every second from t0 with the decode counter rising
// at rates[i] over interval i (the first poll reads base).
func (b *builder) series(t0, base float64, rates ...float64) float64 {
	g := base
	b.poll(t0, g)
	for i, r := range rates {
		g += r
		b.poll(t0+float64(i+1), g)
	}
	return g
}

func run(ts ...*builder) *Findings {
	r := &Run{Gates: rate.Config{}.WithDefaults(), Spans: []float64{2}, KeepPolls: true}
	for _, b := range ts {
		r.Targets = append(r.Targets, b.target())
	}
	return Analyze(r)
}

func kinds(f *Findings) []string {
	var out []string
	for _, in := range f.Incidents {
		out = append(out, in.Kind+"/"+string(in.Target))
	}
	return out
}

func rep(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func cat(xs ...[]float64) []float64 {
	var out []float64
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

var _ = engine.VLLM
