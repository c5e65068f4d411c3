// Package clientcmp sets a load generator's own record of a run (package
// client) beside the engines' counters over the same bounds, and says
// where the two disagree and which seam most likely lies between them.
//
// Each client file's phases (client.Phases) are named phases of the
// analysis (source "client"): the engines' figures over a client phase are
// the phase figures package phases computes for it. A client talks to the
// fleet of the recorded targets, or to one engine of it: the target group
// of every comparison is the fleet. Rates and gauge means add across
// engines; quantiles do not, so a latency quantile is compared only when
// the fleet is one engine.
//
// Per quantity the comparison gives the client's figure, the server's,
// their ratio (client ÷ server), the tolerance and the agreement: agree,
// disagree, or not comparable with the reason. A disagreement becomes a
// finding naming its likely seam (see the Seam constants). It is plain
// data; it never imports render.
package clientcmp

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Agreement of one quantity.
const (
	Agree         = "agree"
	Disagree      = "disagree"
	NotComparable = "not comparable"
)

// Tolerances: how far client ÷ server may be from 1 and still agree.
const (
	// TolRate is for rates over wall time (tokens/s, requests/s): both
	// count the same events over the same bounds, but the server's Δ runs
	// between its first and last good polls inside the phase, so
	// RateSlack cadences of the phase's length are added (the edges of a
	// phase are where load ramps).
	TolRate   = 0.10
	RateSlack = 2.0
	// TolLatency is for latency quantiles: the server's are interpolated
	// inside histogram buckets; a client value inside the server
	// quantile's bucket agrees too.
	TolLatency = 0.25
	// TolConcurrency is for the mean requests in flight against the
	// engines' running + waiting gauges, sampled once a poll (plus
	// RateSlack cadences of the phase's length).
	TolConcurrency = 0.20
)

// Output is the client section of the analysis: plain data for JSON,
// slices never nil.
type Output struct {
	Files    []File    `json:"files"`
	Findings []Finding `json:"findings"`
}

// File is one client file beside the recording.
type File struct {
	Meta client.Meta `json:"meta"`
	// Phases says how the file's phases were cut, or why there are none.
	Phases   string `json:"phases"`
	Requests int    `json:"requests"`
	// Offset is the clock offset between client and recorder estimated
	// from the engines' load edges; null with the reason when it cannot be.
	Offset Offset `json:"clock_offset"`
	Sides  []Side `json:"sides"`
	// Points are the requests for a latency-by-start scatter.
	Points Points `json:"points"`
	// Throughput is the client's output tokens per second over time.
	Throughput Throughput `json:"throughput"`
}

// Side is one client phase: the client's figures beside the target
// group's over the same bounds.
type Side struct {
	Phase string  `json:"phase"`
	Kind  string  `json:"kind"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Group is the target group compared with: the fleet of the recorded
	// targets (Targets), or one target (Target) compared on the requests
	// the client sent to it.
	Group   string   `json:"group"`
	Target  string   `json:"target,omitempty"`
	Targets []string `json:"targets"`
	// Records says which client records are the phase's; Started counts
	// those started within its bounds, by status.
	Records string         `json:"records"`
	Started map[string]int `json:"started"`
	// Aligned says how the client's figures are placed in time: by each
	// request's epoch time, or "aligned by run bounds only: no per-request
	// times" (a summary-only file).
	Aligned string `json:"aligned"`
	Rows    []Row  `json:"rows"`
}

// Row is one quantity of a side.
type Row struct {
	Quantity string        `json:"quantity"` // the client figure's name
	Unit     string        `json:"unit"`
	Client   client.Figure `json:"client"`
	Server   Server        `json:"server"`
	// Ratio is client ÷ server; null when either is absent or the server's
	// is 0.
	Ratio     rate.Num `json:"ratio"`
	Tolerance float64  `json:"tolerance"`
	Agreement string   `json:"agreement"`
	// Why says why the agreement is what it is: the ratio against the
	// tolerance, or why the two are not comparable.
	Why string `json:"why"`
	// Edges is the client's figure with the span's edges moved by the
	// lag of a count (a counted rate's row only; edgeBand).
	Edges *Edges `json:"edges,omitempty"`
}

// Edges is a counted rate's client figure over the counters' span with
// its edges moved by Lag (seconds): an engine counts an event (a request's
// end, a prompt) before the client sees it end, so an event the client
// saw end within Lag after an edge may be the engine's on the edge's
// other side. Fewest counts the events that ended within [first poll +
// lag, last poll], Most those within [first poll, last poll + lag], both
// per second of the counters' span: the engine's count lies between them.
type Edges struct {
	Lag    float64  `json:"lag"`
	Fewest rate.Num `json:"fewest"`
	Most   rate.Num `json:"most"`
}

// Server is the target group's figure of a quantity.
type Server struct {
	// Figure names the phase figure(s) it comes from.
	Figure string   `json:"figure"`
	Value  rate.Num `json:"value"`
	Source string   `json:"source"`
	// Reason says why Value is absent.
	Reason string `json:"reason,omitempty"`
	// Bucket is the histogram bucket a quantile fell in.
	Bucket rate.Bucket `json:"bucket,omitzero"`
}

// Offset is the estimated clock offset: the engines' load edges minus the
// client's first request start and last request end.
type Offset struct {
	Value rate.Num `json:"value"` // seconds, recorder − client
	// Start and End are the differences at each edge (null: no edge near).
	Start rate.Num `json:"start"`
	End   rate.Num `json:"end"`
	// Tolerance is the offset that is still no finding, seconds.
	Tolerance float64 `json:"tolerance"`
	Why       string  `json:"why"`
}

// Point is one request for the scatter.
type Point struct {
	T       float64  `json:"t"`       // start, Unix seconds
	Latency rate.Num `json:"latency"` // end − start (else last sign − start)
	TTFT    rate.Num `json:"ttft"`
	Status  string   `json:"status"`
}

// Points are the requests drawn: all of them up to MaxPoints, else every
// request that did not end ok and a stride of the rest.
type Points struct {
	Total  int     `json:"total"`
	Points []Point `json:"points"`
	Note   string  `json:"note,omitempty"`
}

// MaxPoints is the most requests Points keeps.
const MaxPoints = 5000

// Throughput is the client's output tokens per second in bins of Width
// seconds: the output tokens of the requests that ended ok in a bin ÷
// Width, the bin's start T.
type Throughput struct {
	Width  float64      `json:"width"`
	Source string       `json:"source"`
	Points [][2]float64 `json:"points"`
}

// Finding is a disagreement and its likely seam.
type Finding struct {
	File  string `json:"file"`
	Phase string `json:"phase"`
	// Target is the engine of a per-target side ("" the fleet's).
	Target string  `json:"target,omitempty"`
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	Seam   string  `json:"seam"`
	// Quantities are the rows the seam explains.
	Quantities []string `json:"quantities"`
	Detail     string   `json:"detail"`
}

// Seams a disagreement is laid at.
const (
	// SeamQueueBeforeEngine: the client's TTFT is well above the engine's
	// while the engine's waiting count stayed 0: requests queued before
	// the engine saw them (llama.cpp's HTTP threads, a proxy, a gateway).
	SeamQueueBeforeEngine = "queue_before_engine"
	// SeamChunks: output tokens per second disagree while requests per
	// second agree: the client counts streamed chunks (or its own
	// tokenizer's count) as tokens.
	SeamChunks = "chunks_as_tokens"
	// SeamCancelled: the server finished more requests than the client
	// received whole, and the client's cancelled ones make up the
	// difference: cancelled requests the server still served.
	SeamCancelled = "cancelled_still_served"
	// SeamTokenizer: input tokens per second disagree while requests per
	// second agree: the client's tokenizer is not the engine's.
	SeamTokenizer = "tokenizer_mismatch"
	// SeamUnrecorded: the client finished more requests per second than
	// the recorded engines together: requests went to engines not
	// recorded.
	SeamUnrecorded = "engines_not_recorded"
	// SeamClockOffset: the client's first start and last end are shifted
	// against the engines' load edges: the client's clock and the
	// recorder's differ.
	SeamClockOffset = "clock_offset"
	// SeamUnexplained: a disagreement no rule above explains.
	SeamUnexplained = "unexplained"
)

// Input is one client file and the phases it fed the analysis (names as
// they were given to it).
type Input struct {
	Run    *client.Run
	Phases []client.Phase
	How    string
}

// Compare sets each file beside the measured phases of the analysis (its
// named phases: the client's are found among them by name and bounds),
// the engines' load edges and their cadence (seconds).
//
// engines names each target's engine: where every target's engine counts
// generated tokens as requests complete (llama.cpp), the client's output
// tokens are compared over the counters' span, as its requests are.
//
// urls are the targets' recorded URLs: where a client's records name the
// engine each request went to (Request.Target: a target's name, or a URL
// of its host and port), each target is also compared on its own, its
// quantiles included (perTarget).
func Compare(ins []Input, measured []phases.Measured, edges []findings.Edge, cadence float64, engines, urls map[string]string) Output {
	out := Output{Files: []File{}, Findings: []Finding{}}
	power := Power(ins)
	for _, in := range ins {
		f := File{Meta: in.Run.Meta, Phases: in.How, Requests: len(in.Run.Requests), Sides: []Side{}}
		f.Offset = offset(in.Run, edges, cadence)
		summary := len(in.Run.Requests) == 0
		var figs []client.Figures
		if summary {
			for i := range in.Phases {
				figs = append(figs, client.SummaryFigures(in.Run, &in.Phases[i]))
			}
		} else {
			figs = client.Measure(in.Run, in.Phases)
		}
		for i := range figs {
			m := find(measured, &in.Phases[i])
			if m == nil {
				continue
			}
			var inner *counts
			if !summary {
				inner = counted(in.Run, &in.Phases[i], m, cadence)
			}
			s := side(&figs[i], inner, m, cadence, decodeAtCompletion(m, engines))
			var each []Side
			if !summary && len(m.Targets) > 1 {
				each = perTarget(in.Run, &in.Phases[i], m, cadence, engines, urls)
				quantileReasons(&s, len(m.Targets), len(each) > 0)
			}
			s.Aligned = in.Run.Meta.Aligned
			if summary {
				s.Aligned = client.RunBounds
			} else if len(power) > 0 {
				s.Rows = append(s.Rows, energyRow(power, &figs[i]))
			}
			f.Sides = append(f.Sides, s)
			out.Findings = append(out.Findings, seams(f.Meta.File, &s, m)...)
			for k := range each {
				mm := one(m, each[k].Target)
				if len(power) > 0 {
					each[k].Rows = append(each[k].Rows, energyNote())
				}
				f.Sides = append(f.Sides, each[k])
				for _, fd := range seams(f.Meta.File, &each[k], mm) {
					fd.Target = each[k].Target
					fd.Detail = each[k].Target + ": " + fd.Detail
					out.Findings = append(out.Findings, fd)
				}
			}
		}
		if fd, ok := offsetFinding(&f); ok {
			out.Findings = append(out.Findings, fd)
		}
		f.Points = points(in.Run.Requests)
		f.Throughput = throughput(in.Run.Requests, cadence)
		out.Files = append(out.Files, f)
	}
	return out
}

// perTarget are the sides of phase p per recorded target of m, of the
// requests that name it (Request.Target, matched by matchTarget); none
// when no request names a target.
func perTarget(run *client.Run, p *client.Phase, m *phases.Measured, cadence float64, engines, urls map[string]string) []Side {
	by := map[string][]client.Request{}
	named, unmatched := 0, 0
	for _, r := range run.Requests {
		if r.Target == "" || (p.Label != "" && r.Phase != p.Label) {
			continue
		}
		named++
		t := matchTarget(r.Target, m, urls)
		if t == "" {
			unmatched++
			continue
		}
		by[t] = append(by[t], r)
	}
	if named == 0 {
		return nil
	}
	var out []Side
	for _, t := range m.Targets {
		rs := by[t.Target]
		if len(rs) == 0 {
			continue
		}
		sub := &client.Run{Meta: run.Meta, Requests: rs}
		mm := one(m, t.Target)
		f := client.Measure(sub, []client.Phase{*p})[0]
		s := side(&f, counted(sub, p, mm, cadence), mm, cadence, decodeAtCompletion(mm, engines))
		s.Target = t.Target
		s.Group = "target " + t.Target + " (the requests the client sent to it)"
		s.Records = fmt.Sprintf("%s sent to %s (%d of the %d that name a target)", f.Records, t.Target, len(rs), named)
		if unmatched > 0 {
			s.Records += fmt.Sprintf("; %d name no recorded target", unmatched)
		}
		s.Aligned = run.Meta.Aligned
		out = append(out, s)
	}
	return out
}

// one is m with target alone.
func one(m *phases.Measured, target string) *phases.Measured {
	mm := *m
	mm.Targets = nil
	mm.Fleet = nil
	for _, t := range m.Targets {
		if t.Target == target {
			mm.Targets = append(mm.Targets, t)
		}
	}
	return &mm
}

// matchTarget is the recorded target of m a request's target names: by
// name, else by the host and port of its URL against each target's URL;
// "" none.
func matchTarget(name string, m *phases.Measured, urls map[string]string) string {
	for _, t := range m.Targets {
		if t.Target == name {
			return t.Target
		}
	}
	hp := hostPort(name)
	if hp == "" {
		return ""
	}
	for _, t := range m.Targets {
		if hostPort(urls[t.Target]) == hp {
			return t.Target
		}
	}
	return ""
}

// hostPort is the host (and port, where it has one) of a URL or of
// "HOST:PORT"; "" when it has no host.
func hostPort(s string) string {
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// quantileReasons says in the fleet side's quantile rows of n engines why
// they are not compared: per engine below (each), or the records do not
// name the engine each request went to.
func quantileReasons(s *Side, n int, each bool) {
	why := fmt.Sprintf("the client's records do not name the engine each request went to (no target or url column), and the quantiles of %d engines' histograms do not add up: not comparable", n)
	if each {
		why = fmt.Sprintf("the quantiles of %d engines' histograms do not add up: compared per engine, on the requests the client sent to each", n)
	}
	for i := range s.Rows {
		r := &s.Rows[i]
		if r.Agreement == NotComparable && strings.HasPrefix(r.Server.Reason, "quantiles of") {
			r.Server.Reason, r.Why = why, why
		}
	}
}

// energyNote is a per-target side's energy row: the telemetry is of the
// client's GPUs, not split by engine.
func energyNote() Row {
	r := Row{Quantity: client.FEnergyPerToken, Unit: "J",
		Client: client.Figure{Name: client.FEnergyPerToken, Unit: "J", Why: "the GPU telemetry is not split by engine: see the fleet's row"},
		Server: Server{Reason: NoEnergy}}
	judge(&r, false)
	return r
}

// Power is the GPU power samples of every telemetry file among ins
// (AIPerf's gpu_telemetry_export.jsonl).
func Power(ins []Input) []client.PowerSample {
	var out []client.PowerSample
	for _, in := range ins {
		out = append(out, in.Run.Power...)
	}
	return out
}

// NoEnergy is why an energy row has no server figure.
const NoEnergy = "no engine publishes energy: the recorded metrics hold no power or energy series, so the client's telemetry stands alone (unknown on the server side, not 0)"

// energyRow is the client's GPU energy per output token over a phase,
// beside no server figure (NoEnergy); a side has one when a telemetry file
// was given.
func energyRow(power []client.PowerSample, f *client.Figures) Row {
	g := client.EnergyPerToken(power, f, client.EnergyMaxGap)
	r := Row{Quantity: client.FEnergyPerToken, Unit: g.Unit, Client: g, Server: Server{Reason: NoEnergy}}
	judge(&r, false)
	return r
}

// find is the measured named phase p became.
func find(ms []phases.Measured, p *client.Phase) *phases.Measured {
	for i := range ms {
		m := &ms[i]
		if m.Source == client.Source && m.Name == p.Name && m.Start == p.Start && m.End == p.End {
			return m
		}
	}
	return nil
}

// serverOf says how the target group's figure of a quantity is read.
type serverOf struct {
	quantity string
	figures  []string // summed over the fleet; one: a quantile of one engine
	quantile bool
	mean     bool // an exact mean (Δsum/Δcount), weighted by count over the fleet
	tol      float64
	none     string // why there is no server figure
}

var pairs = func() []serverOf {
	ps := []serverOf{
		{quantity: client.FOutputTokensPS, figures: []string{engine.DecodeTokensPerSecond}, tol: TolRate},
		{quantity: client.FInputTokensPS, figures: []string{engine.PromptTokensPerSecond}, tol: TolRate},
		{quantity: client.FRequestsPS, figures: []string{engine.RequestsFinishedPerSecond}, tol: TolRate},
	}
	for _, q := range []struct{ c, s string }{{"ttft", engine.TTFT}, {"itl", engine.TPOT}, {"e2e", engine.E2E}} {
		ps = append(ps, serverOf{quantity: q.c + "_mean_s", figures: []string{q.s + engine.SuffixMean}, mean: true, tol: TolLatency})
		for _, p := range []string{"50", "90", "99"} {
			ps = append(ps, serverOf{quantity: q.c + "_p" + p + "_s", figures: []string{q.s + "__p" + p}, quantile: true, tol: TolLatency})
		}
	}
	return append(ps,
		serverOf{quantity: client.FErrorRate, none: "the engines publish no count of failed requests"},
		serverOf{quantity: client.FCancelRate, none: "the engines publish no count of requests cancelled by their client (an abort counts a finish)"},
		serverOf{quantity: client.FConcMean, figures: []string{engine.RequestsRunning + "__mean", engine.RequestsWaiting + "__mean"}, tol: TolConcurrency},
		serverOf{quantity: client.FConcMax, none: "the engines' maxima are of the polls, not of every instant the client counts"},
	)
}()

// countedRates are the client figures that count the same discrete events
// as an engine counter (a request's end; a prompt, by its first token:
// promptRate), compared over the span the engines' counters were
// differenced over. Output tokens are not: the client credits them at the
// request's end, the engine as it makes them, so over a span that cuts
// requests the two differ by the requests in flight at its ends; over the
// client's own phase, which starts and ends with none in flight, they do
// not. An engine that counts them at completion (llama.cpp) counts them as
// the client does: then they are over the counters' span too (side).
var countedRates = []string{client.FRequestsPS, client.FInputTokensPS}

// counted is the client's phase p measured over the span the server's
// counters were differenced over (from the latest first good poll to the
// earliest last one of the targets), so that a request ending between a
// target's last good poll and the phase's end (the client's phase ends at
// its last request's end) is counted on neither side, not on one; nil
// when the targets have no such span.
func counted(run *client.Run, p *client.Phase, m *phases.Measured, lag float64) *counts {
	lo, hi := math.Inf(-1), math.Inf(1)
	for _, t := range m.Targets {
		ws := t.Bounds.Windows
		if len(ws) != 1 || !ws[0].First.Valid || !ws[0].Last.Valid {
			return nil
		}
		lo, hi = max(lo, ws[0].First.V), min(hi, ws[0].Last.V)
	}
	if len(m.Targets) == 0 || hi <= lo {
		return nil
	}
	c := &counts{in: countedOver(run, p, lo, hi), lag: lag}
	// A span shorter than the lag has no events the engine surely counted.
	if lag > 0 && hi-lo > lag {
		c.fewest = countedOver(run, p, lo+lag, hi)
		c.most = countedOver(run, p, lo, hi+lag)
		c.scale = [2]float64{(hi - lo - lag) / (hi - lo), (hi - lo + lag) / (hi - lo)}
	}
	return c
}

// counts are the client's figures over the counters' span (in) and over
// it with its edges moved by the lag of a count (fewest, most: nil when
// the span is no longer than the lag); scale turns their rates into rates
// over the counters' span.
type counts struct {
	in, fewest, most *client.Figures
	lag              float64
	scale            [2]float64
}

// countedOver is the client's phase p measured over [lo, hi], input
// tokens by their first token (promptRate).
func countedOver(run *client.Run, p *client.Phase, lo, hi float64) *client.Figures {
	inner := *p
	inner.Start, inner.End = lo, hi
	f := client.Measure(run, []client.Phase{inner})[0]
	for i := range f.Figures {
		if f.Figures[i].Name == client.FInputTokensPS {
			f.Figures[i] = promptRate(run, &inner, f.Figures[i].Unit)
		}
	}
	return &f
}

// edges is quantity q's band from c (nil: none): what q would be, per
// second of the counters' span, had the engine counted each event up to
// the lag before the client saw it end.
func (c *counts) edges(q string) *Edges {
	if c == nil || c.fewest == nil {
		return nil
	}
	f, _ := c.fewest.Get(q)
	m, _ := c.most.Get(q)
	if !f.Value.Valid || !m.Value.Valid {
		return nil
	}
	return &Edges{Lag: c.lag, Fewest: rate.Some(f.Value.V * c.scale[0]), Most: rate.Some(m.Value.V * c.scale[1])}
}

// promptRate is the client's input tokens per second as an engine counts
// its prompt tokens: when the prompt was processed, that is by the first
// token (else the start, for a request that got none), of the requests of
// p whose prompt fell within p's bounds. Over a span that cuts requests
// (the counters' span) this counts the prompts the engine counted there,
// where crediting them at the request's end does not.
func promptRate(run *client.Run, p *client.Phase, unit string) client.Figure {
	f := client.Figure{Name: client.FInputTokensPS, Unit: unit,
		Formula: fmt.Sprintf("Σ input tokens of the requests%s whose first token (else start) fell within the bounds ÷ (end − start), over the bounds [%s, %s]: the span the engines' counters were differenced over",
			labelled(p.Label), client.Stamp(p.Start), client.Stamp(p.End))}
	d := p.End - p.Start
	if d <= 0 {
		f.Why = "a span of no length"
		return f
	}
	sum := 0.0
	for i := range run.Requests {
		r := &run.Requests[i]
		if p.Label != "" && r.Phase != p.Label {
			continue
		}
		at := r.Start
		if r.FirstToken.Valid {
			at = r.FirstToken.V
		}
		if at < p.Start || at > p.End || !r.InputTokens.Valid {
			continue
		}
		sum += r.InputTokens.V
		f.Records++
	}
	if f.Records == 0 {
		f.Why = "no request's prompt fell within the span"
		return f
	}
	f.Value = rate.Some(sum / d)
	return f
}

func labelled(label string) string {
	if label == "" {
		return ""
	}
	return fmt.Sprintf(" labelled %q", label)
}

// decodeAtCompletion reports whether every target of m counts generated
// tokens as its requests complete.
func decodeAtCompletion(m *phases.Measured, engines map[string]string) bool {
	for _, t := range m.Targets {
		if !engine.DecodeAtCompletion(engines[t.Target]) {
			return false
		}
	}
	return len(m.Targets) > 0
}

// side is one phase's rows: cf the client's figures over the phase, in
// those over the counters' span (nil: cf for every row); atEnd says the
// engines count generated tokens at completion, so that output tokens are
// over the counters' span too.
func side(cf *client.Figures, in *counts, m *phases.Measured, cadence float64, atEnd bool) Side {
	s := Side{Phase: m.Name, Kind: m.Kind, Start: m.Start, End: m.End, Targets: []string{}, Records: cf.Records,
		Started: cf.Started, Rows: []Row{}}
	for _, t := range m.Targets {
		s.Targets = append(s.Targets, t.Target)
	}
	s.Group = fmt.Sprintf("fleet (%d targets)", len(s.Targets))
	if len(s.Targets) == 1 {
		s.Group = "fleet (1 target: " + s.Targets[0] + ")"
	}
	slack := 0.0
	if d := m.End - m.Start; d > 0 {
		slack = RateSlack * cadence / d
	}
	for _, p := range pairs {
		c, ok := cf.Get(p.quantity)
		if !ok {
			continue
		}
		var band *Edges
		if in != nil && (slices.Contains(countedRates, p.quantity) || (atEnd && p.quantity == client.FOutputTokensPS)) {
			c, _ = in.in.Get(p.quantity)
			band = in.edges(p.quantity)
		}
		r := Row{Quantity: p.quantity, Unit: c.Unit, Client: c, Edges: band}
		comparable := p.none == ""
		switch {
		case p.none != "":
			r.Server = Server{Reason: p.none}
		case p.mean:
			r.Server = meanOf(m, p.figures[0])
		case p.quantile:
			r.Server = quantileOf(m, p.figures[0])
			if why := perEventTail(p.quantity, r.Server.Source); why != "" {
				r.Server.Reason, comparable = why, false
			}
		default:
			r.Server = sumOf(m, p.figures)
		}
		r.Tolerance = p.tol
		if !p.quantile && !p.mean && p.tol > 0 {
			r.Tolerance = p.tol + slack
		}
		judge(&r, comparable)
		s.Rows = append(s.Rows, r)
	}
	return s
}

// perEventTail says why a client ITL tail quantile is no match for the
// engine's figure read from source, or "": the client's ITL is one mean
// per request, and an engine whose TPOT histogram observes every output
// event (vLLM before 0.11: time_per_output_token_seconds) has a tail of
// single slow steps (a batch that admitted a prefill) that no request's
// mean shows. Medians are compared; vLLM 0.11's
// request_time_per_output_token_seconds is itself a mean per request.
func perEventTail(quantity, source string) string {
	if !strings.HasPrefix(quantity, "itl_") || quantity == "itl_p50_s" {
		return ""
	}
	if !strings.Contains(source, "time_per_output_token_seconds") || strings.Contains(source, "request_time_per_output_token_seconds") {
		return ""
	}
	return "the engine's histogram observes every output event, the client's ITL is one mean per request: their tails differ by construction (the medians are compared)"
}

// sumOf is the sum of figures over the fleet's targets that have each;
// absent when a figure has no value on any.
func sumOf(m *phases.Measured, names []string) Server {
	s := Server{Figure: strings.Join(names, " + ")}
	total := 0.0
	var srcs []string
	for _, name := range names {
		sum, n := 0.0, 0
		var reasons []string
		for _, t := range m.Targets {
			g, ok := t.Get(name)
			if !ok {
				continue
			}
			if g.Value.Valid {
				sum, n = sum+g.Value.V, n+1
			} else if g.Reason != "" {
				reasons = append(reasons, t.Target+": "+g.Reason)
			}
		}
		if n == 0 {
			s.Reason = name + " has no value on any target"
			if len(reasons) > 0 {
				s.Reason += " (" + strings.Join(reasons, "; ") + ")"
			}
			return s
		}
		total += sum
		srcs = append(srcs, fmt.Sprintf("Σ %s over %d of %d targets", name, n, len(m.Targets)))
	}
	s.Value = rate.Some(total)
	s.Source = strings.Join(srcs, " + ") + ", from the engines' counters across the phase (phases)"
	return s
}

// meanOf is the exact mean (Δsum/Δcount across the phase) figure name of
// the fleet's one target; like a quantile, it is compared per engine (a
// fleet's would blend one engine's queue into the others').
func meanOf(m *phases.Measured, name string) Server {
	s := quantileOf(m, name)
	if len(m.Targets) != 1 {
		s.Reason = fmt.Sprintf("the means of %d engines' histograms are compared per engine", len(m.Targets))
	}
	return s
}

// quantileOf is the quantile figure name of the fleet's one target.
func quantileOf(m *phases.Measured, name string) Server {
	s := Server{Figure: name}
	if len(m.Targets) != 1 {
		s.Reason = fmt.Sprintf("quantiles of %d engines' histograms do not add up; compare per engine", len(m.Targets))
		return s
	}
	g, ok := m.Targets[0].Get(name)
	if !ok {
		s.Reason = rate.ReasonAbsent
		return s
	}
	s.Value, s.Source, s.Bucket = g.Value, g.Source, g.Bucket
	if !g.Value.Valid {
		s.Reason = cmp.Or(g.Reason, rate.ReasonAbsent)
	}
	return s
}

// judge sets a row's ratio and agreement.
func judge(r *Row, comparable bool) {
	c, s := r.Client.Value, r.Server.Value
	switch {
	case !comparable:
		r.Agreement, r.Why = NotComparable, r.Server.Reason
	case !c.Valid:
		r.Agreement, r.Why = NotComparable, "the client's is absent: "+r.Client.Why
	case !s.Valid:
		r.Agreement, r.Why = NotComparable, "the server's is absent: "+r.Server.Reason
	case s.V == 0 && c.V == 0:
		r.Agreement, r.Why = Agree, "both are 0"
	case s.V == 0:
		r.Agreement, r.Why = Disagree, "the server's is 0, the client's is not"
	default:
		ratio := c.V / s.V
		r.Ratio = rate.Some(ratio)
		off := fmt.Sprintf("client ÷ server = %.3g, tolerance ±%.0f%%", ratio, 100*r.Tolerance)
		switch {
		case math.Abs(ratio-1) <= r.Tolerance:
			r.Agreement, r.Why = Agree, off
		case r.Server.Bucket.Contains(c.V):
			r.Agreement, r.Why = Agree, off+"; the client's lies in the server quantile's bucket, which the histogram cannot split"
		case r.Edges.Holds(s.V, r.Tolerance):
			e := r.Edges
			r.Agreement, r.Why = Agree, off+fmt.Sprintf("; the engine counts an event before the client sees it end: with the span's edges moved by %.3gs the client's is %.4g to %.4g, which holds the server's", e.Lag, e.Fewest.V, e.Most.V)
		default:
			r.Agreement, r.Why = Disagree, off
		}
	}
}

// Holds reports whether v lies within e's band widened by tol (false for
// no band): the client's events that ended near an edge, counted on
// either side, explain the difference.
func (e *Edges) Holds(v, tol float64) bool {
	return e != nil && v >= e.Fewest.V*(1-tol) && v <= e.Most.V*(1+tol)
}

// row returns the side's row of quantity q.
func (s *Side) row(q string) *Row {
	for i := range s.Rows {
		if s.Rows[i].Quantity == q {
			return &s.Rows[i]
		}
	}
	return nil
}

// offset estimates the clock offset from the engines' load edges: the
// start edge nearest the client's first request start, the end edge
// nearest its last request end, each within OffsetReach of it.
func offset(run *client.Run, edges []findings.Edge, cadence float64) Offset {
	o := Offset{Tolerance: max(OffsetFloor, OffsetCadences*cadence)}
	if len(run.Requests) == 0 {
		o.Why = "no per-request records: the file is placed by run bounds alone"
		return o
	}
	first, last := math.Inf(1), math.Inf(-1)
	for i := range run.Requests {
		r := &run.Requests[i]
		first = min(first, r.Start)
		last = max(last, endOf(r))
	}
	nearest := func(kind string, t float64) rate.Num {
		best := rate.Num{}
		for _, e := range edges {
			if e.Kind != kind || math.Abs(e.T-t) > OffsetReach {
				continue
			}
			if d := e.T - t; !best.Valid || math.Abs(d) < math.Abs(best.V) {
				best = rate.Some(d)
			}
		}
		return best
	}
	o.Start, o.End = nearest(findings.EdgeStart, first), nearest(findings.EdgeEnd, last)
	switch {
	case o.Start.Valid && o.End.Valid:
		o.Value = rate.Some((o.Start.V + o.End.V) / 2)
		o.Why = "the mean of (start edge − first request start) and (end edge − last request end)"
	case o.Start.Valid:
		o.Value = o.Start
		o.Why = "start edge − first request start (no end edge within reach)"
	case o.End.Valid:
		o.Value = o.End
		o.Why = "end edge − last request end (no start edge within reach)"
	default:
		o.Why = fmt.Sprintf("no load edge of the engines within %gs of the client's first start or last end", OffsetReach)
	}
	return o
}

// Clock offset: an edge counts within OffsetReach seconds of the
// client's bounds; an offset beyond max(OffsetFloor, OffsetCadences ×
// cadence) is a finding (an edge is placed inside a poll interval).
const (
	OffsetReach    = 120.0
	OffsetFloor    = 1.0
	OffsetCadences = 2.0
)

func endOf(r *client.Request) float64 {
	switch {
	case r.End.Valid:
		return r.End.V
	case r.FirstToken.Valid:
		return r.FirstToken.V
	}
	return r.Start
}

// offsetFinding is the clock offset finding of a file, when its offset
// is beyond the tolerance at every edge it was read at.
func offsetFinding(f *File) (Finding, bool) {
	o := &f.Offset
	if !o.Value.Valid {
		return Finding{}, false
	}
	for _, d := range []rate.Num{o.Start, o.End} {
		if d.Valid && math.Abs(d.V) <= o.Tolerance {
			return Finding{}, false
		}
	}
	// Edges on opposite sides are no shift of the clock.
	if o.Start.Valid && o.End.Valid && (o.Start.V > 0) != (o.End.V > 0) {
		return Finding{}, false
	}
	fd := Finding{File: f.Meta.File, Seam: SeamClockOffset, Quantities: []string{},
		Detail: fmt.Sprintf("the engines' load edges are %+.3gs from the client's bounds (%s; tolerance %.3gs): the client's clock and the recorder's differ, or the client's first and last requests did not reach the recorded engines",
			o.Value.V, o.Why, o.Tolerance)}
	for _, s := range f.Sides {
		fd.Start, fd.End = min(cmp.Or(fd.Start, s.Start), s.Start), max(fd.End, s.End)
	}
	return fd, true
}

// seams lays each disagreement of a side at its likely seam; a
// disagreement no rule explains is a finding of SeamUnexplained.
func seams(file string, s *Side, m *phases.Measured) []Finding {
	var out []Finding
	covered := map[string]bool{}
	add := func(seam, detail string, qs ...string) {
		f := Finding{File: file, Phase: s.Phase, Start: s.Start, End: s.End, Seam: seam, Quantities: []string{}, Detail: detail}
		for _, q := range qs {
			if r := s.row(q); r != nil && r.Agreement == Disagree && !covered[q] {
				covered[q] = true
				f.Quantities = append(f.Quantities, q)
			}
		}
		out = append(out, f)
	}
	dis := func(q string) *Row {
		if r := s.row(q); r != nil && r.Agreement == Disagree {
			return r
		}
		return nil
	}
	agrees := func(q string) bool { r := s.row(q); return r != nil && r.Agreement == Agree }
	high := func(r *Row) bool { return r != nil && r.Ratio.Valid && r.Ratio.V > 1 }
	low := func(r *Row) bool { return r != nil && r.Ratio.Valid && r.Ratio.V < 1 }
	d := s.End - s.Start
	rps := dis(client.FRequestsPS)
	// More requests finished at the client than every recorded engine
	// finished together: some went elsewhere.
	if high(rps) {
		add(SeamUnrecorded, fmt.Sprintf("%s: the client received %s requests/s whole, the recorded engines finished %s requests/s together (%s): requests went to engines not recorded",
			s.Phase, num(rps.Client.Value), num(rps.Server.Value), rps.Why),
			client.FRequestsPS, client.FOutputTokensPS, client.FInputTokensPS, client.FConcMean)
	}
	// Fewer received whole than the engines finished, and the cancelled
	// ones make up the difference: the engines served requests the client
	// had given up on.
	if low(rps) && d > 0 && s.Started[client.StatusCancelled] > 0 {
		withCancelled := rps.Client.Value.V + float64(s.Started[client.StatusCancelled])/d
		if math.Abs(withCancelled/rps.Server.Value.V-1) <= rps.Tolerance {
			add(SeamCancelled, fmt.Sprintf("%s: the engines finished %s requests/s, the client received %s whole and cancelled %d requests; with them it is %s: cancelled requests the server still served",
				s.Phase, num(rps.Server.Value), num(rps.Client.Value), s.Started[client.StatusCancelled], num(rate.Some(withCancelled))),
				client.FRequestsPS, client.FOutputTokensPS, client.FInputTokensPS)
		}
	}
	if r := dis(client.FOutputTokensPS); r != nil && agrees(client.FRequestsPS) {
		add(SeamChunks, fmt.Sprintf("%s: the client counts %s output tokens/s, the engines generated %s (%s) while their request rates agree: the client counts streamed chunks (or its own tokenizer's tokens) as tokens",
			s.Phase, num(r.Client.Value), num(r.Server.Value), r.Why),
			client.FOutputTokensPS, "itl_mean_s", "itl_p50_s", "itl_p90_s", "itl_p99_s")
	}
	if r := dis(client.FInputTokensPS); r != nil && agrees(client.FRequestsPS) {
		add(SeamTokenizer, fmt.Sprintf("%s: the client counts %s input tokens/s, the engines %s prompt tokens/s (%s) while their request rates agree: the client's tokenizer (or its chat template) is not the engine's",
			s.Phase, num(r.Client.Value), num(r.Server.Value), r.Why),
			client.FInputTokensPS)
	}
	if r := dis("ttft_p50_s"); high(r) {
		if w, ok := waitingMax(m); ok && w == 0 {
			// The queue adds to the client's TTFT, e2e and requests in
			// flight: those of them above the server's are explained.
			var qs []string
			for _, q := range []string{"ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "e2e_mean_s", "e2e_p50_s", "e2e_p90_s", "e2e_p99_s", client.FConcMean} {
				if high(dis(q)) {
					qs = append(qs, q)
				}
			}
			add(SeamQueueBeforeEngine, fmt.Sprintf("%s: the client's TTFT p50 is %ss, the engine's %ss (%s) while the engine's waiting count stayed 0: requests queued before the engine saw them (llama.cpp's HTTP threads, a proxy or gateway)",
				s.Phase, num(r.Client.Value), num(r.Server.Value), r.Why), qs...)
		}
	}
	// Without a server TTFT (llama.cpp publishes no histogram of it), the
	// requests in flight tell the same: the client had more in flight than
	// the engine ran and queued, while its waiting count stayed 0.
	if r := dis(client.FConcMean); high(r) && !covered[client.FConcMean] {
		if w, ok := waitingMax(m); ok && w == 0 {
			var qs []string
			for _, q := range []string{client.FConcMean, "e2e_mean_s", "e2e_p50_s", "e2e_p90_s", "e2e_p99_s"} {
				if high(dis(q)) {
					qs = append(qs, q)
				}
			}
			add(SeamQueueBeforeEngine, fmt.Sprintf("%s: the client had %s requests in flight on average, the engine ran and queued %s (%s) while its waiting count stayed 0: requests queued before the engine saw them (llama.cpp's HTTP threads, a proxy or gateway)",
				s.Phase, num(r.Client.Value), num(r.Server.Value), r.Why), qs...)
		}
	}
	for _, r := range s.Rows {
		if r.Agreement == Disagree && !covered[r.Quantity] {
			add(SeamUnexplained, fmt.Sprintf("%s: %s: client %s, server %s (%s); no rule names its seam",
				s.Phase, r.Quantity, num(r.Client.Value), num(r.Server.Value), r.Why), r.Quantity)
		}
	}
	// A rule whose rows another rule already explained says nothing new.
	return slices.DeleteFunc(out, func(f Finding) bool { return len(f.Quantities) == 0 })
}

// waitingMax is the largest requests_waiting__max of the fleet's targets;
// false when a target has none.
func waitingMax(m *phases.Measured) (float64, bool) {
	top := 0.0
	for _, t := range m.Targets {
		g, ok := t.Get(engine.RequestsWaiting + "__max")
		if !ok || !g.Value.Valid {
			return 0, false
		}
		top = max(top, g.Value.V)
	}
	return top, len(m.Targets) > 0
}

// points are the requests for the scatter, at most MaxPoints.
func points(rs []client.Request) Points {
	p := Points{Total: len(rs), Points: []Point{}}
	stride := 1
	if len(rs) > MaxPoints {
		bad := 0
		for i := range rs {
			if rs[i].Status != client.StatusOK {
				bad++
			}
		}
		stride = int(math.Ceil(float64(len(rs)-bad) / float64(max(1, MaxPoints-bad))))
		p.Note = fmt.Sprintf("every request that did not end ok and every %d-th of the rest: %%d of %d drawn", stride, len(rs))
	}
	ok := 0
	for i := range rs {
		r := &rs[i]
		if r.Status == client.StatusOK {
			ok++
			if (ok-1)%stride != 0 {
				continue
			}
		}
		if len(p.Points) >= MaxPoints {
			break
		}
		lat := r.E2E()
		if !lat.Valid {
			lat = rate.Some(endOf(r) - r.Start)
		}
		p.Points = append(p.Points, Point{T: r.Start, Latency: lat, TTFT: r.TTFT, Status: r.Status})
	}
	slices.SortStableFunc(p.Points, func(a, b Point) int { return cmp.Compare(a.T, b.T) })
	if p.Note != "" {
		p.Note = fmt.Sprintf(p.Note, len(p.Points))
	}
	return p
}

// MaxBins is the most throughput bins of a file.
const MaxBins = 300

// throughput bins the output tokens of the requests that ended ok, in bins
// of the cadence at least and at most MaxBins across the file.
func throughput(rs []client.Request, cadence float64) Throughput {
	t := Throughput{Points: [][2]float64{},
		Source: "Σ output tokens of the requests that ended ok in the bin ÷ the bin's width, the client's own counts"}
	first, last := math.Inf(1), math.Inf(-1)
	for i := range rs {
		if r := &rs[i]; r.Status == client.StatusOK && r.End.Valid && r.OutputTokens.Valid {
			first, last = min(first, r.Start), max(last, r.End.V)
		}
	}
	if math.IsInf(first, 1) || last <= first {
		t.Source = "no request that ended ok with an output token count"
		return t
	}
	w := max(1, cadence, (last-first)/MaxBins)
	n := int(math.Ceil((last-first)/w)) + 1
	sums := make([]float64, n)
	for i := range rs {
		if r := &rs[i]; r.Status == client.StatusOK && r.End.Valid && r.OutputTokens.Valid {
			sums[min(n-1, int((r.End.V-first)/w))] += r.OutputTokens.V
		}
	}
	t.Width = w
	for k, s := range sums {
		t.Points = append(t.Points, [2]float64{first + float64(k)*w, s / w})
	}
	return t
}

func num(n rate.Num) string {
	if !n.Valid {
		return "unknown"
	}
	return fmt.Sprintf("%.4g", n.V)
}
