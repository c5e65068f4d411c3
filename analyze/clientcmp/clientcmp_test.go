package clientcmp

import (
	"math"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// A row agrees within its tolerance, or inside the server quantile's
// bucket; a server figure of 0 against a client's that is not disagrees;
// an absent figure is not comparable, never a disagreement.
func TestJudge(t *testing.T) {
	bucket := rate.Bucket{Lo: rate.Some(0.25), Hi: rate.Some(0.5), Flags: rate.FlagCoarse}
	for _, c := range []struct {
		name   string
		c, s   rate.Num
		bucket rate.Bucket
		want   string
	}{
		{"within", rate.Some(1.09), rate.Some(1), rate.Bucket{}, Agree},
		{"beyond", rate.Some(1.2), rate.Some(1), rate.Bucket{}, Disagree},
		{"in the bucket", rate.Some(0.45), rate.Some(0.3), bucket, Agree},
		{"past the bucket", rate.Some(0.6), rate.Some(0.3), bucket, Disagree},
		{"both 0", rate.Some(0), rate.Some(0), rate.Bucket{}, Agree},
		{"server 0", rate.Some(3), rate.Some(0), rate.Bucket{}, Disagree},
		{"client absent", rate.Num{}, rate.Some(1), rate.Bucket{}, NotComparable},
		{"server absent", rate.Some(1), rate.Num{}, rate.Bucket{}, NotComparable},
	} {
		r := Row{Client: client.Figure{Value: c.c, Why: "why"}, Server: Server{Value: c.s, Bucket: c.bucket, Reason: "reason"}, Tolerance: 0.1}
		judge(&r, true)
		if r.Agreement != c.want || r.Why == "" {
			t.Errorf("%s: %s (%s), want %s", c.name, r.Agreement, r.Why, c.want)
		}
	}
}

// The clock offset: edges shifted the same way at both ends beyond the
// tolerance are a finding; edges on opposite sides, or one within the
// tolerance, are not.
func TestOffsetFinding(t *testing.T) {
	run := &client.Run{Requests: []client.Request{
		{Start: 1000, End: rate.Some(1010), Status: client.StatusOK},
		{Start: 1050, End: rate.Some(1060), Status: client.StatusOK},
	}}
	edges := func(a, b float64) []findings.Edge {
		return []findings.Edge{{Kind: findings.EdgeStart, T: 1000 + a}, {Kind: findings.EdgeEnd, T: 1060 + b}}
	}
	for _, c := range []struct {
		a, b float64
		want bool
	}{{-5, -5, true}, {-5, 5, false}, {-5, -0.5, false}, {0.3, 0.2, false}, {4, 6, true}} {
		f := File{Offset: offset(run, edges(c.a, c.b), 1)}
		if _, got := offsetFinding(&f); got != c.want {
			t.Errorf("edges %+v, %+v: finding %v, want %v (%+v)", c.a, c.b, got, c.want, f.Offset)
		}
	}
	if o := offset(run, nil, 1); o.Value.Valid || o.Why == "" {
		t.Errorf("no edge: %+v", o)
	}
}

// Past MaxPoints the scatter keeps every request that did not end ok and
// a stride of the rest, and says so.
func TestPointsBounded(t *testing.T) {
	rs := make([]client.Request, 3*MaxPoints)
	bad := 0
	for i := range rs {
		rs[i] = client.Request{Start: float64(i), End: rate.Some(float64(i) + 1), Status: client.StatusOK}
		if i%100 == 0 {
			rs[i].Status = client.StatusError
			bad++
		}
	}
	p := points(rs)
	n := 0
	for _, x := range p.Points {
		if x.Status == client.StatusError {
			n++
		}
	}
	if len(p.Points) > MaxPoints || n != bad || p.Total != len(rs) || p.Note == "" {
		t.Errorf("%d points, %d of %d errors kept, total %d, note %q", len(p.Points), n, bad, p.Total, p.Note)
	}
}

// 24,000 requests (20 min at 20 requests/s) in one labelled phase: the
// client's figures, the scatter's points and the throughput bins.
func BenchmarkCompare24k(b *testing.B) {
	rs := make([]client.Request, 24000)
	for i := range rs {
		s := 1.7e9 + float64(i)/20
		rs[i] = client.Request{Start: s, End: rate.Some(s + 1.5), TTFT: rate.Some(0.1), OutputTokens: rate.Some(200),
			InputTokens: rate.Some(400), Status: client.StatusOK, Phase: "profiling"}
	}
	run := &client.Run{Requests: rs}
	ps, _ := client.Phases(run)
	b.ReportAllocs()
	for b.Loop() {
		Compare([]Input{{Run: run, Phases: ps}}, nil, nil, 1, nil, nil)
	}
}

// The exact mean is compared per engine, as a quantile is: a fleet of one
// target has its figure, a fleet of several none, with the reason.
func TestMeanOf(t *testing.T) {
	tg := func(name string, count, mean rate.Num) phases.Figures {
		return phases.Figures{Target: name, Figures: []phases.Figure{
			{Name: engine.E2E + engine.SuffixCount, Value: count},
			{Name: engine.E2E + engine.SuffixMean, Value: mean, Source: "computed:Δe2e_sum/Δe2e_count"},
		}}
	}
	one := &phases.Measured{Targets: []phases.Figures{tg("a", rate.Some(30), rate.Some(1.5))}}
	if s := meanOf(one, engine.E2E+engine.SuffixMean); !s.Value.Valid || s.Value.V != 1.5 || s.Source != "computed:Δe2e_sum/Δe2e_count" {
		t.Errorf("one target: %+v", s)
	}
	two := &phases.Measured{Targets: append(one.Targets, tg("b", rate.Some(10), rate.Some(3)))}
	if s := meanOf(two, engine.E2E+engine.SuffixMean); s.Value.Valid || !strings.Contains(s.Reason, "per engine") {
		t.Errorf("two targets: %+v", s)
	}
}

// An engine that counts a request's tokens as it completes (llama.cpp)
// counts them before its client sees the request end: a request the
// client saw end just after the last poll of the counters' span is the
// engine's inside it. At concurrency 1 with four requests in the span
// that one request is a fifth of the engine's figure, past the rate
// tolerance; with the span's edges moved by a cadence the client's figure
// holds the engine's, so the row agrees and says why. An engine further
// off than the band still disagrees.
func TestCountedEdges(t *testing.T) {
	const cadence, tokens = 0.1, 32.0
	var run client.Run
	for i := range 7 {
		s := 1000 + 0.6*float64(i)
		run.Requests = append(run.Requests, client.Request{Start: s, FirstToken: rate.Some(s + 0.02), End: rate.Some(s + 0.6),
			InputTokens: rate.Some(50), OutputTokens: rate.Some(tokens), Status: client.StatusOK})
	}
	p := client.Phase{Phase: phases.Phase{Name: "concurrency 1", Start: 1000, End: 1004.2}}
	// Polls at 1000.05 and 1002.98: the client saw four requests end
	// inside (1000.6 … 1002.4) and the fifth at 1003.0, 0.02 s after the
	// last poll, which had counted it.
	span := [2]float64{1000.05, 1002.98}
	d := span[1] - span[0]
	measured := func(served float64) *phases.Measured {
		return &phases.Measured{Phase: p.Phase, Targets: []phases.Figures{{Target: "llama",
			Bounds:  phases.Bounds{Windows: []phases.Window{{Start: p.Start, End: p.End, First: rate.Some(span[0]), Last: rate.Some(span[1])}}},
			Figures: []phases.Figure{{Name: engine.DecodeTokensPerSecond, Value: rate.Some(served / d), Source: "decode"}}}}}
	}
	cf := client.Measure(&run, []client.Phase{p})[0]
	for _, c := range []struct {
		name   string
		served float64 // the engine's tokens over the span
		want   string
	}{
		{"the edge's request", 5 * tokens, Agree},
		{"two past the band", 7 * tokens, Disagree},
	} {
		m := measured(c.served)
		s := side(&cf, counted(&run, &p, m, cadence), m, cadence, true)
		r := s.row(client.FOutputTokensPS)
		if r == nil || r.Edges == nil || r.Edges.Lag != cadence {
			t.Fatalf("%s: no row with a band in %+v", c.name, s.Rows)
		}
		// The client's own figure over the span counts four requests,
		// beyond the tolerance of the engine's five.
		if got := r.Client.Value.V * d; math.Abs(got-4*tokens) > 1e-9 || math.Abs(r.Client.Value.V*d/c.served-1) <= r.Tolerance {
			t.Errorf("%s: client tokens over the span %v, want %v outside ±%.3g", c.name, got, 4*tokens, r.Tolerance)
		}
		if math.Abs(r.Edges.Fewest.V*d-4*tokens) > 1e-9 || math.Abs(r.Edges.Most.V*d-5*tokens) > 1e-9 {
			t.Errorf("%s: band %v … %v tokens, want four to five requests'", c.name, r.Edges.Fewest.V*d, r.Edges.Most.V*d)
		}
		if r.Agreement != c.want || (c.want == Agree && !strings.Contains(r.Why, "edges moved by 0.1s")) {
			t.Errorf("%s: %s (%s), want %s", c.name, r.Agreement, r.Why, c.want)
		}
	}
	// A span no longer than the lag has no band.
	m := measured(5 * tokens)
	m.Targets[0].Bounds.Windows[0].Last = rate.Some(span[0] + cadence/2)
	if c := counted(&run, &p, m, cadence); c == nil || c.edges(client.FOutputTokensPS) != nil {
		t.Errorf("a span shorter than the lag: %+v", c)
	}
}
