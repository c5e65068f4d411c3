package diff

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/analyze/diff/stat"
	"github.com/llmrec/llmrec/analyze/phases"
)

// ClientTarget is the target of the client's rows: the load generator's
// own record of the run (--client-base, --client-cand), of the fleet it
// sent to.
const ClientTarget = "client"

// Origins of a row: who measured it.
const (
	OriginServer = "server" // the engines' own counters (package phases)
	OriginClient = "client" // the load generator's own record (package client)
)

// SeamClientServer is a seam between the sides' client/server agreement:
// on one side the client and the engines disagree on a quantity, on the
// other they agree.
const SeamClientServer = "client_server"

// ClientQuantities are the client's compared quantities, in the order rows
// list them. Figure is the client figure's name (package client).
var ClientQuantities = []Quantity{
	{Key: "client_output", Figure: client.FOutputTokensPS, Label: "client output tokens/s", Unit: "tokens/s", Better: Higher, Tokens: true},
	{Key: "client_requests", Figure: client.FRequestsPS, Label: "client requests/s (ended ok)", Unit: "requests/s", Better: Higher},
	{Key: "client_ttft_p50", Figure: "ttft_p50_s", Label: "client TTFT p50", Unit: "s", Better: Lower},
	{Key: "client_ttft_p90", Figure: "ttft_p90_s", Label: "client TTFT p90", Unit: "s", Better: Lower},
	{Key: "client_ttft_p99", Figure: "ttft_p99_s", Label: "client TTFT p99", Unit: "s", Better: Lower},
	{Key: "client_itl_p50", Figure: "itl_p50_s", Label: "client ITL p50", Unit: "s", Better: Lower},
	{Key: "client_itl_p90", Figure: "itl_p90_s", Label: "client ITL p90", Unit: "s", Better: Lower},
	{Key: "client_itl_p99", Figure: "itl_p99_s", Label: "client ITL p99", Unit: "s", Better: Lower},
	{Key: "client_e2e_p50", Figure: "e2e_p50_s", Label: "client e2e p50", Unit: "s", Better: Lower},
	{Key: "client_e2e_p90", Figure: "e2e_p90_s", Label: "client e2e p90", Unit: "s", Better: Lower},
	{Key: "client_e2e_p99", Figure: "e2e_p99_s", Label: "client e2e p99", Unit: "s", Better: Lower},
	{Key: "client_error_rate", Figure: client.FErrorRate, Label: "client error rate", Unit: "fraction", Better: Lower},
	{Key: "client_energy", Figure: client.FEnergyPerToken, Label: "client GPU energy per output token", Unit: "J", Better: Lower, Tokens: true},
}

// Samples of client rows besides repeats and blocks.
const SamplesRequests = "requests" // the client's per-request values, pooled over a side's runs

// clientPhase is one run's client phase of a name: the file it was cut
// from and the phase.
type clientPhase struct {
	in    *clientcmp.Input
	phase *client.Phase
	power []client.PowerSample
}

// findClient is r's client phase named name; nil when r has none.
func findClient(r *analyze.Result, name string) *clientPhase {
	for i := range r.ClientInputs {
		in := &r.ClientInputs[i]
		for j := range in.Phases {
			if in.Phases[j].Name == name {
				return &clientPhase{in: in, phase: &in.Phases[j], power: clientcmp.Power(r.ClientInputs)}
			}
		}
	}
	return nil
}

// summary reports whether the phase's file holds no per-request records.
func (c *clientPhase) summary() bool { return len(c.in.Run.Requests) == 0 }

// figures are the phase's client figures, energy per token included where
// there is telemetry.
func (c *clientPhase) figures() client.Figures {
	if c.summary() {
		return client.SummaryFigures(c.in.Run, c.phase)
	}
	f := client.Measure(c.in.Run, []client.Phase{*c.phase})[0]
	if len(c.power) > 0 {
		f.Figures = append(f.Figures, client.EnergyPerToken(c.power, &f, client.EnergyMaxGap))
	}
	return f
}

// requests are the phase's requests that started within its bounds.
func (c *clientPhase) requests() []*client.Request {
	var out []*client.Request
	p := c.phase
	for i := range c.in.Run.Requests {
		r := &c.in.Run.Requests[i]
		if (p.Label == "" || r.Phase == p.Label) && r.Start >= p.Start && r.Start <= p.End {
			out = append(out, r)
		}
	}
	return out
}

// perRequest are the values of a latency quantity (ttft, itl, e2e) of the
// phase's requests that started within it and ended ok.
func (c *clientPhase) perRequest(which string) []float64 {
	var xs []float64
	for _, r := range c.requests() {
		if r.Status != client.StatusOK {
			continue
		}
		v := r.TTFT
		switch which {
		case "itl":
			v = r.ITL
		case "e2e":
			v = r.E2E()
		}
		if v.Valid {
			xs = append(xs, v.V)
		}
	}
	return xs
}

// Client blocks: a phase is cut into blocks of at least
// ClientBlockLatencies median request latencies (a request then mostly
// ends in the block it started in), at most phases.MaxBlocks of them; a
// phase with fewer than phases.MinBlocks has none.
const ClientBlockLatencies = 2.0

// blocks are the figure name of the phase over its non-overlapping blocks;
// why says why there are none.
func (c *clientPhase) blocks(name string) (xs []float64, why string) {
	if c.summary() {
		return nil, "the client file is a summary (" + client.RunBounds + "): no blocks"
	}
	p := c.phase
	d := p.End - p.Start
	e2e := c.perRequest("e2e")
	if len(e2e) == 0 || d <= 0 {
		return nil, "no request of the phase ended ok: no blocks"
	}
	slices.Sort(e2e)
	length := max(ClientBlockLatencies*e2e[len(e2e)/2], d/phases.MaxBlocks)
	k := int(math.Floor(d / length))
	if k < phases.MinBlocks {
		return nil, fmt.Sprintf("the phase (%.0f s) holds %d blocks of %.3g s (%g median request latencies), fewer than %d", d, k, length, ClientBlockLatencies, phases.MinBlocks)
	}
	length = d / float64(k)
	sub := make([]client.Phase, k)
	for i := range sub {
		sub[i] = *p
		sub[i].Start, sub[i].End = p.Start+float64(i)*length, p.Start+float64(i+1)*length
	}
	for _, f := range client.Measure(c.in.Run, sub) {
		g, _ := f.Get(name)
		if name == client.FEnergyPerToken {
			g = client.EnergyPerToken(c.power, &f, client.EnergyMaxGap)
		}
		if g.Value.Valid {
			xs = append(xs, g.Value.V)
		}
	}
	return xs, ""
}

// clientRows compares the client's quantities of every phase aligned by
// name that both sides' first runs hold as a client phase.
func (rep *Report) clientRows(base, cand Side, o Options, th Thresholds, samples string) {
	var names []string
	for _, a := range rep.Phases {
		if a.By == ByName && !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	blocking := rep.clientBlocking()
	for _, name := range names {
		b0, c0 := findClient(base.Runs[0], name), findClient(cand.Runs[0], name)
		if b0 == nil || c0 == nil {
			continue
		}
		notes := rep.agreementSeams(base.Runs[0], cand.Runs[0], name)
		bf, cf := b0.figures(), c0.figures()
		for _, q := range ClientQuantities {
			bg, bok := bf.Get(q.Figure)
			cg, cok := cf.Get(q.Figure)
			// Energy per token is a row only where both sides have telemetry.
			if !bok && !cok || q.Figure == client.FEnergyPerToken && !(bok && cok) {
				continue
			}
			r, how := rep.clientStat(q, name, base, cand, o.Conf, samples)
			row := Row{Phase: name, Target: ClientTarget, CandTarget: ClientTarget, Origin: OriginClient, Quantity: q.Key, Label: q.Label, Unit: q.Unit, Better: q.Better,
				Baseline: clientValue(bg, r.Base), Candidate: clientValue(cg, r.Cand),
				Change: num(r.Change), ChangeLo: num(r.ChangeLo), ChangeHi: num(r.ChangeHi), P: num(r.P), Method: r.Method,
				Samples: how, Threshold: th.Of(q.Key), Notes: []string{}}
			row.Verdict, row.Why = verdict(r, q, row.Threshold, o.Alpha, blocking, how, false)
			if row.Verdict == Insufficient {
				row.Why = clientInsufficient(r.Insufficient, how)
			}
			if n, ok := notes[q.Figure]; ok {
				row.Notes = append(row.Notes, n)
			}
			if b0.summary() || c0.summary() {
				row.Notes = append(row.Notes, "a side's client file is a summary: "+client.RunBounds)
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
}

// clientInsufficient is why a client row has no verdict.
func clientInsufficient(why, how string) string {
	switch how {
	case SamplesRequests:
		return why + " (the client's per-request values of the phase, pooled over a side's runs)"
	case "repeats":
		return why + " (one value per run folder: give at least 4 repeats a side, or one run a side to compare blocks of each phase)"
	}
	return why + " (the client's blocks of the phase: a longer phase gives more)"
}

// clientStat compares quantity q of the client phase name on both sides:
// latency quantiles and the error rate from the per-request records, rates
// from blocks or repeats; how names the samples.
func (rep *Report) clientStat(q Quantity, name string, base, cand Side, conf float64, samples string) (stat.Result, string) {
	kind, pct, quantile := strings.Cut(strings.TrimSuffix(q.Figure, "_s"), "_p")
	quantile = quantile && slices.Contains([]string{"ttft", "itl", "e2e"}, kind)
	switch {
	case quantile:
		bx, bwhy := pooled(base, name, func(c *clientPhase) []float64 { return c.perRequest(kind) })
		cx, cwhy := pooled(cand, name, func(c *clientPhase) []float64 { return c.perRequest(kind) })
		var r stat.Result
		if pct == "50" {
			r = stat.Compare(bx, cx, conf)
		} else {
			p, _ := strconv.ParseFloat(pct, 64) // a key's digits: p90, p99
			r = stat.Quantiles(bx, cx, p/100, conf)
		}
		return withWhy(r, bwhy, cwhy), SamplesRequests
	case q.Figure == client.FErrorRate:
		bn, bx, bwhy := errorCounts(base, name)
		cn, cx, cwhy := errorCounts(cand, name)
		return withWhy(stat.Proportions(bx, bn, cx, cn, conf), bwhy, cwhy), SamplesRequests
	case samples == "repeats":
		one := func(s Side) []float64 {
			var xs []float64
			for _, r := range s.Runs {
				if c := findClient(r, name); c != nil {
					f := c.figures()
					if g, ok := f.Get(q.Figure); ok && g.Value.Valid {
						xs = append(xs, g.Value.V)
					}
				}
			}
			return xs
		}
		return stat.Compare(one(base), one(cand), conf), "repeats"
	}
	bx, bwhy := pooled(base, name, func(c *clientPhase) []float64 { xs, _ := c.blocks(q.Figure); return xs })
	cx, cwhy := pooled(cand, name, func(c *clientPhase) []float64 { xs, _ := c.blocks(q.Figure); return xs })
	if b0 := findClient(base.Runs[0], name); b0 != nil && len(bx) == 0 {
		_, bwhy = b0.blocks(q.Figure)
	}
	if c0 := findClient(cand.Runs[0], name); c0 != nil && len(cx) == 0 {
		_, cwhy = c0.blocks(q.Figure)
	}
	return withWhy(stat.Compare(bx, cx, conf), bwhy, cwhy), "blocks"
}

// perRequestPhases are the client phase name of each of a side's runs that
// has per-request records; why says a side's file is a summary, which has
// none.
func perRequestPhases(s Side, name string) (cs []*clientPhase, why string) {
	for _, r := range s.Runs {
		c := findClient(r, name)
		if c == nil {
			continue
		}
		if c.summary() {
			why = "a client file is a summary (" + client.RunBounds + "): no per-request values"
			continue
		}
		cs = append(cs, c)
	}
	return cs, why
}

// pooled are the values of each run's client phase name, pooled.
func pooled(s Side, name string, values func(*clientPhase) []float64) ([]float64, string) {
	cs, why := perRequestPhases(s, name)
	var xs []float64
	for _, c := range cs {
		xs = append(xs, values(c)...)
	}
	return xs, why
}

// errorCounts are the requests started within the phase and those of them
// that failed, over a side's runs.
func errorCounts(s Side, name string) (n, failed int, why string) {
	cs, why := perRequestPhases(s, name)
	for _, c := range cs {
		for _, q := range c.requests() {
			n++
			if q.Status == client.StatusError {
				failed++
			}
		}
	}
	return n, failed, why
}

// withWhy adds to an insufficient result why a side had no values.
func withWhy(r stat.Result, bwhy, cwhy string) stat.Result {
	if r.Insufficient == "" {
		return r
	}
	for _, w := range []struct{ side, why string }{{"baseline", bwhy}, {"candidate", cwhy}} {
		if w.why != "" {
			r.Insufficient += "; the " + w.side + "'s " + w.why
		}
	}
	return r
}

func clientValue(g client.Figure, e stat.Estimate) Value {
	return Value{Figure: g.Value, Source: g.Formula, Reason: g.Why, N: e.N, Median: num(e.Median), Lo: num(e.Lo), Hi: num(e.Hi)}
}

// clientBlocking are the blocking seams of any target, as one sentence:
// the client's figures are of the whole fleet it sent to.
func (rep *Report) clientBlocking() string {
	var why []string
	for _, s := range rep.Seams {
		if s.Blocks && s.Kind != SeamPhase {
			why = append(why, fmt.Sprintf("%s %s → %s", s.Kind, s.Baseline, s.Candidate))
		}
	}
	return strings.Join(slices.Compact(why), "; ")
}

// agreementSeams name, for the client phase name, each quantity on which
// client and server disagree on one side and agree on the other: a seam,
// and a note for the client row of the quantity (by client figure name).
func (rep *Report) agreementSeams(b0, c0 *analyze.Result, name string) map[string]string {
	notes := map[string]string{}
	bs, cs := clientSide(b0, name), clientSide(c0, name)
	if bs == nil || cs == nil {
		return notes
	}
	for _, br := range bs.Rows {
		i := slices.IndexFunc(cs.Rows, func(r clientcmp.Row) bool { return r.Quantity == br.Quantity })
		if i < 0 {
			continue
		}
		cr := cs.Rows[i]
		if br.Agreement == cr.Agreement || (br.Agreement != clientcmp.Disagree && cr.Agreement != clientcmp.Disagree) ||
			br.Agreement == clientcmp.NotComparable || cr.Agreement == clientcmp.NotComparable {
			continue
		}
		dis, agr := "baseline", "candidate"
		seam := seamOf(b0, name, br.Quantity)
		if cr.Agreement == clientcmp.Disagree {
			dis, agr = agr, dis
			seam = seamOf(c0, name, br.Quantity)
		}
		detail := fmt.Sprintf("%s, %s: client and engines disagree on the %s (%s) and agree on the %s (%s): what the client sees changed differently from what the engines counted",
			name, br.Quantity, dis, whyOf(br, cr, dis == "baseline"), agr, whyOf(br, cr, agr == "baseline"))
		if seam != "" {
			detail += "; on the " + dis + " the likely seam is " + seam
		}
		rep.Seams = append(rep.Seams, Seam{Kind: SeamClientServer, Target: ClientTarget, Phase: name,
			Baseline: br.Agreement, Candidate: cr.Agreement, Detail: detail})
		notes[br.Quantity] = fmt.Sprintf("client vs server: %s on the baseline, %s on the candidate", br.Agreement, cr.Agreement)
		if seam != "" {
			notes[br.Quantity] += " (" + dis + ": " + seam + ")"
		}
	}
	return notes
}

func whyOf(b, c clientcmp.Row, base bool) string {
	if base {
		return b.Why
	}
	return c.Why
}

// clientSide is r's client side of the phase name.
func clientSide(r *analyze.Result, name string) *clientcmp.Side {
	if r.Client == nil {
		return nil
	}
	for i := range r.Client.Files {
		for j := range r.Client.Files[i].Sides {
			if s := &r.Client.Files[i].Sides[j]; s.Phase == name {
				return s
			}
		}
	}
	return nil
}

// seamOf is the seam r's client findings lay quantity q of phase name at.
func seamOf(r *analyze.Result, name, q string) string {
	for _, f := range r.Client.Findings {
		if f.Phase == name && slices.Contains(f.Quantities, q) {
			return f.Seam
		}
	}
	return ""
}
