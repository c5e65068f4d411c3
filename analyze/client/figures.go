package client

import (
	"fmt"
	"slices"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Figure is one client figure of a phase, with its provenance.
type Figure struct {
	Name  string   `json:"name"`
	Value rate.Num `json:"value"`
	Unit  string   `json:"unit"`
	// Formula says how Value was computed and over which records.
	Formula string `json:"formula"`
	// Records is how many records it came from.
	Records int `json:"records"`
	// Why says why Value is absent.
	Why string `json:"why,omitempty"`
}

// Figures are a phase's client figures.
type Figures struct {
	Phase Phase `json:"phase"`
	// Records says which records are the phase's.
	Records string `json:"records"`
	// Started counts the phase's requests started within its bounds, by
	// status.
	Started map[string]int `json:"started"`
	Figures []Figure       `json:"figures"`
}

// Get returns the figure named name.
func (f *Figures) Get(name string) (Figure, bool) {
	for _, g := range f.Figures {
		if g.Name == name {
			return g, true
		}
	}
	return Figure{}, false
}

// Figure names.
const (
	FOutputTokensPS = "output_tokens_per_s"
	FInputTokensPS  = "input_tokens_per_s"
	FRequestsPS     = "requests_per_s"
	FErrorRate      = "error_rate"
	FCancelRate     = "cancel_rate"
	FIncompleteRate = "incomplete_rate"
	FConcMean       = "concurrency_mean"
	FConcMax        = "concurrency_max"
)

// Measure measures each phase from the run's records. A phase with a
// label holds the records of that label; one without, every record. Of
// those, the rates over wall time count the requests that ended ok within
// the bounds; the latency quantiles, error and cancel rates are of the
// requests that started within them.
func Measure(run *Run, ps []Phase) []Figures {
	out := make([]Figures, 0, len(ps))
	// Phases without a label share one step function of every request.
	var all *inflight
	for i := range ps {
		if ps[i].Label == "" && all == nil {
			f := newInflight(run.Requests, nil)
			all = &f
		}
		out = append(out, measure(run.Requests, &ps[i], all))
	}
	return out
}

// measure measures p; all is the step function of every request when p
// has no label (nil: made here).
func measure(rs []Request, p *Phase, all *inflight) Figures {
	a, b := p.Start, p.End
	mine := func(r *Request) bool { return p.Label == "" || r.Phase == p.Label }
	f := Figures{Phase: *p, Started: map[string]int{}, Figures: []Figure{}}
	f.Records = "every request"
	if p.Label != "" {
		f.Records = fmt.Sprintf("the requests labelled %q", p.Label)
	}
	bounds := fmt.Sprintf("[%s, %s]", Stamp(a), Stamp(b))
	d := b - a
	var tokens, inTokens float64
	ended, tokenReqs, noTokens, inReqs, noIn := 0, 0, 0, 0, 0
	var ttft, itl, e2e []float64
	started, held, overlap := 0, 0, 0
	for i := range rs {
		r := &rs[i]
		if !mine(r) {
			continue
		}
		held++
		if r.Start <= b && last(r) >= a {
			overlap++
		}
		if r.Status == StatusOK && r.End.Valid && r.End.V >= a && r.End.V <= b {
			ended++
			if r.OutputTokens.Valid {
				tokens += r.OutputTokens.V
				tokenReqs++
			} else {
				noTokens++
			}
			if r.InputTokens.Valid {
				inTokens += r.InputTokens.V
				inReqs++
			} else {
				noIn++
			}
		}
		if r.Start < a || r.Start > b {
			continue
		}
		started++
		f.Started[r.Status]++
		if r.Status != StatusOK {
			continue
		}
		if r.TTFT.Valid {
			ttft = append(ttft, r.TTFT.V)
		}
		if r.ITL.Valid {
			itl = append(itl, r.ITL.V)
		}
		if v := r.E2E(); v.Valid {
			e2e = append(e2e, v.V)
		}
	}
	over := "over the bounds " + bounds
	// Rates over wall time need every request of the phase: none without
	// records, a phase of no length, or a sample of its requests.
	wall := ""
	switch {
	case held == 0:
		wall = "the file holds no per-request records of this phase"
	case d <= 0:
		wall = "phase of no length"
	case p.Sampled != "":
		wall = p.Sampled
	}
	add := func(g Figure) { f.Figures = append(f.Figures, g) }
	perS := func(name string, v float64, n int, formula string) {
		g := Figure{Name: name, Unit: "1/s", Records: n, Formula: formula + " ÷ (end − start), " + over}
		if wall != "" {
			g.Why = wall
		} else {
			g.Value = rate.Some(v / d)
		}
		add(g)
	}
	// tokensPerS is a token rate over the requests that ended ok, absent
	// when one of them has no count of those tokens.
	tokensPerS := func(name, which string, sum float64, n, missing int) {
		g := Figure{Name: name, Unit: "1/s", Records: n,
			Formula: "Σ " + which + " tokens of " + f.Records + " that ended ok within the bounds ÷ (end − start), " + over}
		switch {
		case wall != "":
			g.Why = wall
		case missing > 0:
			g.Why = fmt.Sprintf("%d of the %d requests that ended ok have no %s token count", missing, ended, which)
		default:
			g.Value = rate.Some(sum / d)
		}
		add(g)
	}
	tokensPerS(FOutputTokensPS, "output", tokens, tokenReqs, noTokens)
	tokensPerS(FInputTokensPS, "input", inTokens, inReqs, noIn)
	perS(FRequestsPS, float64(ended), ended, "count of "+f.Records+" that ended ok within the bounds")
	for _, q := range []struct {
		name string
		xs   []float64
		what string
	}{{"ttft", ttft, "time to first token"}, {"itl", itl, "mean inter-token latency per request"}, {"e2e", e2e, "end − start"}} {
		s := slices.Clone(q.xs)
		slices.Sort(s)
		// The mean beside the quantiles: what an engine's Δsum/Δcount is
		// compared with.
		g := Figure{Name: q.name + "_mean_s", Unit: "s", Records: len(s),
			Formula: fmt.Sprintf("mean of the client's %s of %s that started within the bounds and ended ok, %s", q.what, f.Records, over)}
		if len(s) == 0 {
			g.Why = "no request that started within the bounds and ended ok has a " + q.what
		} else {
			g.Value = rate.Some(mean(s))
		}
		add(g)
		for _, p := range []struct {
			suffix string
			q      float64
		}{{"_p50_s", 0.5}, {"_p90_s", 0.9}, {"_p99_s", 0.99}} {
			g := Figure{Name: q.name + p.suffix, Unit: "s", Records: len(s),
				Formula: fmt.Sprintf("q%g by linear interpolation between ranks of the client's %s of %s that started within the bounds and ended ok, %s", p.q, q.what, f.Records, over)}
			if len(s) == 0 {
				g.Why = "no request that started within the bounds and ended ok has a " + q.what
			} else {
				g.Value = rate.Some(sortedQuantile(s, p.q))
			}
			add(g)
		}
	}
	for _, s := range []struct {
		name, status string
	}{{FErrorRate, StatusError}, {FCancelRate, StatusCancelled}, {FIncompleteRate, StatusIncomplete}} {
		g := Figure{Name: s.name, Unit: "fraction", Records: started,
			Formula: fmt.Sprintf("requests %s ÷ requests started, of %s that started within the bounds, %s", s.status, f.Records, over)}
		if started == 0 {
			g.Why = "no request started within the bounds"
		} else {
			g.Value = rate.Some(float64(f.Started[s.status]) / float64(started))
		}
		add(g)
	}
	fl := all
	if p.Label != "" || fl == nil {
		f := newInflight(rs, mine)
		fl = &f
	}
	m, peak := fl.over(a, b)
	cm := Figure{Name: FConcMean, Unit: "requests", Records: overlap,
		Formula: "∫ requests in flight dt ÷ (end − start), a request in flight from its start to its end (else its last sign), of " + f.Records + ", " + over}
	cx := Figure{Name: FConcMax, Unit: "requests", Records: overlap,
		Formula: "most requests in flight at once, of " + f.Records + ", " + over}
	if wall != "" {
		cm.Why, cx.Why = wall, wall
	} else {
		cm.Value, cx.Value = rate.Some(m), rate.Some(float64(peak))
	}
	add(cm)
	add(cx)
	return f
}
