package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// WarmupPhase is the name of a load generator's warmup (llmrec load's,
// AIPerf's): it is no level of a sweep.
const WarmupPhase = "warmup"

// level is one phase of one target to read as a point.
type level struct {
	phase  phases.Phase
	figs   *phases.Figures
	status string
	client rate.Num // the client's mean in flight, when it is this curve's
}

// sweep reads the run's levels as curves: named phases when there are
// any (a warmup left out), else each target's steady phases.
func (a *analyzer) sweep(r *Result) sweep.Sweep {
	s := sweep.Sweep{Basis: "named", SLOs: append([]sweep.SLO{}, a.opts.SLOs...), Curves: []sweep.Curve{}}
	if a.opts.GPUs > 0 {
		s.GPUs = rate.Some(float64(a.opts.GPUs))
	}
	if a.opts.GPUHourUSD > 0 {
		s.GPUHourUSD = rate.Some(a.opts.GPUHourUSD)
	}
	byTarget := map[string][]level{}
	var rows []*PhaseRow
	for i := range r.Answer.Phases {
		if row := &r.Answer.Phases[i]; !strings.EqualFold(row.Phase, WarmupPhase) {
			rows = append(rows, row)
		}
	}
	// The client's in flight is one target's load only when there is one.
	single := len(r.Targets) == 1
	for _, row := range rows {
		// A named phase in which the engine generated nothing and held no
		// request is idle: no level of the sweep.
		if idle(r.PhaseFigures(row)) {
			continue
		}
		lv := level{phase: phases.Phase{Name: row.Phase, Source: row.Source, Start: row.Start, End: row.End},
			figs: r.PhaseFigures(row), status: row.Status}
		if single {
			lv.client = row.ClientConcurrency
		}
		byTarget[row.Target] = append(byTarget[row.Target], lv)
	}
	if len(rows) == 0 {
		s.Basis = "found"
		for k := range r.Output.Phases {
			m := &r.Output.Phases[k]
			if m.Kind != phases.KindSteady || len(m.Targets) != 1 {
				continue
			}
			t := r.target(m.Target)
			if t == nil {
				continue
			}
			figs := &m.Targets[0]
			byTarget[m.Target] = append(byTarget[m.Target], level{phase: m.Phase, figs: figs,
				status: judge(t, figs, r.Incidents, "the phase").Status})
		}
	}
	for i := range r.Targets {
		t := &r.Targets[i]
		lvs := byTarget[t.Name]
		if len(lvs) == 0 {
			continue
		}
		c := sweep.Curve{Target: t.Name, Points: []sweep.Point{}}
		for _, lv := range lvs {
			c.Points = append(c.Points, a.point(r, &s, t.Name, lv, single))
		}
		if m := a.metas[t.Name]; m != nil && m.slots > 0 {
			c.Slots, c.SlotsSource = rate.Some(float64(m.slots)), m.slotsFrom
		}
		c.Finish(s.SLOs)
		if f := capacityFact(r, t.Name); f != "" && c.Knee.First != "" {
			c.Knee.Fact = f
		}
		s.Curves = append(s.Curves, c)
	}
	if s.Basis == "named" && len(r.Targets) > 1 {
		s.Curves = append(s.Curves, a.fleetCurve(r, &s, rows))
	}
	if len(s.Curves) == 0 {
		s.Reason = "no level measured: no named phase and no steady phase found"
	}
	return s
}

// idle reports whether figs are of a phase in which the engine generated
// no token and held no request.
func idle(figs *phases.Figures) bool {
	d, ok := figs.Get(engine.DecodeTokensPerSecond)
	c := concurrency(figs)
	return ok && d.Value.Valid && d.Value.V == 0 && (!c.Valid || c.V == 0)
}

// capacityFact is the text of the engine's capacity-queueing fact on
// target, when it published the reason and requests waited on capacity.
func capacityFact(r *Result, target string) string {
	for _, tf := range r.Facts {
		if tf.Target != target {
			continue
		}
		for _, f := range tf.Facts {
			if f.Name == findings.FactCeiling && f.T.Valid {
				return f.Text
			}
		}
	}
	return ""
}

// fig is a figure of figs as a sweep value.
func fig(figs *phases.Figures, name string) sweep.Value {
	f, ok := figs.Get(name)
	if !ok {
		return sweep.Value{Reason: "not measured", Source: name}
	}
	// A figure the engine does not publish has no formula: its name is its source.
	return sweep.Value{Value: f.Value, Source: cmp.Or(f.Source, name), Reason: f.Reason, Bucket: f.Bucket}
}

// latency is a histogram quantile figure, or the histogram's exact mean
// where the quantile cannot be resolved (past the highest bound, in the
// first bucket, or null while the mean is not), flagged.
func latency(figs *phases.Figures, base, suffix string) sweep.Value {
	v := fig(figs, base+suffix)
	why := ""
	switch {
	case v.Value.Valid && v.Bucket.Flags&rate.FlagPastEdge != 0:
		why = "the quantile is past the highest bucket bound (a lower bound only)"
	case v.Value.Valid && v.Bucket.Flags&rate.FlagFirst != 0:
		why = "the quantile is in the first bucket (only ≤ its bound)"
	case !v.Value.Valid:
		why = "no quantile (" + strings.ReplaceAll(v.Reason, "_", " ") + ")"
	default:
		return v
	}
	m := fig(figs, base+engine.SuffixMean)
	if !m.Value.Valid {
		return v
	}
	m.Mean = why + ": the exact mean Δsum/Δcount stands in"
	return m
}

// point is one level of target as a point of the curve.
func (a *analyzer) point(r *Result, s *sweep.Sweep, target string, lv level, single bool) sweep.Point {
	figs := lv.figs
	p := sweep.Point{Phase: lv.phase.Name, Source: lv.phase.Source, Start: lv.phase.Start, End: lv.phase.End, Status: lv.status,
		Running: fig(figs, "requests_running__mean"), Decode: fig(figs, engine.DecodeTokensPerSecond),
		Prompt:  fig(figs, engine.PromptTokensPerSecond),
		TTFTp50: latency(figs, engine.TTFT, "__p50"), TTFTp99: latency(figs, engine.TTFT, "__p99"),
		ITLp50: latency(figs, engine.ITL, "__p50"), ITLp99: latency(figs, engine.ITL, "__p99"),
		E2Ep50: latency(figs, engine.E2E, "__p50"), E2Ep99: latency(figs, engine.E2E, "__p99"),
		Waiting: fig(figs, "requests_waiting__mean"), WaitingMax: fig(figs, "requests_waiting__max"),
		KV: fig(figs, "kv_cache_usage_ratio__max"), Preemptions: fig(figs, engine.PreemptionsPerSecond),
		CapacityWaiting: fig(figs, "waiting_capacity__mean"), SLOs: []sweep.Attainment{}}
	p.Offered = offered(figs, lv.client)
	p.Engine = offered(figs, rate.Num{})
	in := a.inputs[target]
	if in != nil {
		if sl, ok := sweep.FitSlope(in.Waiting(lv.phase)); ok {
			p.WaitingSlope = &sl
		}
	}
	perUnit(s, &p, fig(figs, engine.PerRequestDecodeTokensPerSecond))
	for _, o := range s.SLOs {
		at := sweep.Attainment{SLO: o.Name, Verdict: sweep.Unknown}
		if in == nil {
			at.Reason = "no polls of the target"
		} else {
			attain(&at, o, in.Buckets(lv.phase, sweep.Metrics[o.Metric]))
		}
		p.SLOs = append(p.SLOs, at)
	}
	if single {
		clientSLOs(r, s, &p, lv.phase)
	}
	return p
}

// offered is the load offered at a level: the client's mean in flight
// when known, else the engine's mean running + waiting.
func offered(figs *phases.Figures, client rate.Num) sweep.Value {
	if client.Valid {
		return sweep.Value{Value: client, Source: "the client's mean requests in flight over the phase"}
	}
	v := sweep.Value{Value: concurrency(figs), Source: "mean requests_running + requests_waiting over the phase's polls"}
	if !v.Value.Valid {
		v.Reason = "the engine publishes neither gauge and no client record names the phase"
	}
	return v
}

// perUnit fills the per-user and per-GPU throughput and the cost of p.
func perUnit(s *sweep.Sweep, p *sweep.Point, perReq sweep.Value) {
	d, run := p.Decode.Value, p.Running.Value
	switch {
	case perReq.Value.Valid:
		p.PerUser = perReq
	case d.Valid && run.Valid && run.V > 0:
		p.PerUser = sweep.Value{Value: rate.Some(d.V / run.V), Source: "decode_tokens_per_second ÷ requests_running__mean (the engine publishes no per-request rate)"}
	default:
		p.PerUser = sweep.Value{Reason: "no decode rate or no running gauge", Source: "decode_tokens_per_second ÷ requests_running__mean"}
	}
	p.PerGPU = sweep.Value{Source: "decode_tokens_per_second ÷ --gpus"}
	p.CostPerMTokens = sweep.Value{Source: "--gpu-hour-usd × --gpus ÷ (decode_tokens_per_second × 3600) × 10⁶"}
	switch {
	case !s.GPUs.Valid:
		p.PerGPU.Reason, p.CostPerMTokens.Reason = "no --gpus given", "no --gpus given"
	case !d.Valid:
		p.PerGPU.Reason, p.CostPerMTokens.Reason = "no decode rate", "no decode rate"
	default:
		p.PerGPU.Value = rate.Some(d.V / s.GPUs.V)
		switch {
		case !s.GPUHourUSD.Valid:
			p.CostPerMTokens.Reason = "no --gpu-hour-usd given"
		case d.V <= 0:
			p.CostPerMTokens.Reason = "no token generated"
		default:
			p.CostPerMTokens.Value = rate.Some(s.GPUHourUSD.V * s.GPUs.V / (d.V * 3600) * 1e6)
		}
	}
}

// attain judges one SLO from a histogram's bucket Δs across the level.
func attain(at *sweep.Attainment, o sweep.SLO, h phases.Histogram) {
	at.Source = fmt.Sprintf("Δ%s across the phase: the share at or under %s", h.Series, msText(o.Threshold))
	// No buckets to read: the histogram's reason is the SLO's.
	if h.Reason != "" {
		at.Reason = h.Reason
		return
	}
	at.Lo, at.Hi, at.Exact = sweep.Attain(o, h.Les, h.Counts)
	if !at.Exact {
		at.Source += " (not a bucket bound: bracketed by the bounds around it)"
	}
	at.Verdict = sweep.Verdict(o, at.Lo, at.Hi)
	v, b := rate.BucketQuantile(o.Quantile, h.Les, h.Counts)
	// A quantile past the highest bound is a lower bound: it fails or is unknown.
	if b.Flags&rate.FlagPastEdge != 0 && v <= o.Threshold {
		return
	}
	at.Margin = rate.Some((o.Threshold - v) / o.Threshold)
}

// clientSLOs sets the client's share of requests under each threshold
// and its goodput over the level, when a client file names it.
func clientSLOs(r *Result, s *sweep.Sweep, p *sweep.Point, ph phases.Phase) {
	reqs, label, ok := clientRequests(r, ph)
	if !ok || len(s.SLOs) == 0 {
		return
	}
	g := &sweep.Goodput{Source: fmt.Sprintf("the client's requests%s that ended within the phase, each meeting every SLO by its own latencies (ITL: the request's mean gap)", label)}
	under := make([]int, len(s.SLOs))
	seen := make([]int, len(s.SLOs))
	lat := make([][]float64, len(s.SLOs))
	tokens := 0.0
	for _, q := range reqs {
		g.Requests++
		good := q.Status == "" || q.Status == "ok"
		for k, o := range s.SLOs {
			x := clientLatency(&q, o.Metric)
			if !x.Valid {
				good = false
				continue
			}
			seen[k]++
			lat[k] = append(lat[k], x.V)
			if x.V <= o.Threshold {
				under[k]++
			} else {
				good = false
			}
		}
		if good {
			g.Good++
			if q.OutputTokens.Valid {
				tokens += q.OutputTokens.V
			}
		}
	}
	for k, o := range s.SLOs {
		if seen[k] == 0 {
			continue
		}
		share := rate.Some(float64(under[k]) / float64(seen[k]))
		p.SLOs[k].Client = share
		at := &p.SLOs[k]
		// The engine's histogram judged it: the client's share stands beside.
		if at.Verdict != sweep.Unknown {
			continue
		}
		// Read what the engine publishes first; where it publishes no
		// histogram (llama.cpp), the client's own latencies judge the level.
		at.Source = fmt.Sprintf("the client's requests%s that ended within the phase: the share at or under %s (%s; %s)",
			label, msText(o.Threshold), strings.ReplaceAll(at.Reason, "_", " "), at.Source)
		at.Reason, at.Lo, at.Hi, at.Exact = "", share, share, true
		at.Verdict = sweep.Verdict(o, share, share)
		if q := client.Quantile(lat[k], o.Quantile); q.Valid {
			at.Margin = rate.Some((o.Threshold - q.V) / o.Threshold)
		}
	}
	if d := ph.End - ph.Start; d > 0 && g.Requests > 0 {
		g.RequestsPerSecond, g.TokensPerSecond = rate.Some(float64(g.Good)/d), rate.Some(tokens/d)
	}
	p.Goodput = g
}

// clientRequests are the client's requests of phase ph: those of its
// label (when the phase holds a label's records) that ended within it.
func clientRequests(r *Result, ph phases.Phase) ([]client.Request, string, bool) {
	for _, in := range r.ClientInputs {
		for _, cp := range in.Phases {
			// A client phase a file or marks named too is renamed "client: NAME".
			if (cp.Name != ph.Name && cp.Name != "client: "+ph.Name) || !phases.Same(cp.Start, cp.End, ph.Start, ph.End) {
				continue
			}
			var out []client.Request
			for _, q := range in.Run.Requests {
				at := q.Start
				if q.End.Valid {
					at = q.End.V
				}
				if (cp.Label == "" || q.Phase == cp.Label) && at >= cp.Start && at <= cp.End {
					out = append(out, q)
				}
			}
			label := ""
			if cp.Label != "" {
				label = " labelled " + strconv.Quote(cp.Label)
			}
			return out, label, true
		}
	}
	return nil, "", false
}

// clientLatency is a request's latency the SLO's metric names.
func clientLatency(q *client.Request, metric string) rate.Num {
	switch metric {
	case "ttft":
		return q.TTFT
	case "itl":
		return q.ITL
	case "e2e":
		return q.E2E()
	}
	return rate.Num{}
}

// fleetCurve is the fleet's levels: the named phases' fleet sums, the
// client's in flight as the offered load, the fullest engine's KV.
func (a *analyzer) fleetCurve(r *Result, s *sweep.Sweep, rows []*PhaseRow) sweep.Curve {
	c := sweep.Curve{Points: []sweep.Point{}}
	seen := map[string]bool{}
	noAdd := sweep.Value{Reason: "quantiles do not add across engines: see each target's curve"}
	for _, row := range rows {
		key := row.Phase + "\x00" + strconv.FormatFloat(row.Start, 'g', -1, 64)
		if seen[key] {
			continue
		}
		seen[key] = true
		var m *phases.Measured
		for k := range r.Output.Phases {
			if x := &r.Output.Phases[k]; x.Name == row.Phase && x.Start == row.Start && x.Fleet != nil {
				m = x
			}
		}
		if m == nil {
			continue
		}
		ff := &phases.Figures{Figures: m.Fleet.Figures}
		ph := phases.Phase{Name: row.Phase, Source: row.Source, Start: row.Start, End: row.End}
		p := sweep.Point{Phase: row.Phase, Source: row.Source, Start: row.Start, End: row.End, Status: fleetStatus(r, row),
			Running: fig(ff, "requests_running__mean"), Decode: fig(ff, engine.DecodeTokensPerSecond),
			Prompt: fig(ff, engine.PromptTokensPerSecond), TTFTp50: noAdd, TTFTp99: noAdd, ITLp50: noAdd, ITLp99: noAdd,
			E2Ep50: noAdd, E2Ep99: noAdd, Waiting: fig(ff, "requests_waiting__mean"),
			WaitingMax:  sweep.Value{Reason: "maxima of the targets at different polls do not add"},
			KV:          fleetMax(m, "kv_cache_usage_ratio__max"),
			Preemptions: fig(ff, engine.PreemptionsPerSecond), CapacityWaiting: sweep.Value{Reason: "not summed across engines"},
			SLOs: []sweep.Attainment{}}
		p.Offered = offered(ff, row.ClientConcurrency)
		p.Engine = offered(ff, rate.Num{})
		perUnit(s, &p, sweep.Value{})
		for _, o := range s.SLOs {
			at := sweep.Attainment{SLO: o.Name, Verdict: sweep.Unknown}
			attain(&at, o, a.fleetBuckets(ph, sweep.Metrics[o.Metric]))
			p.SLOs = append(p.SLOs, at)
		}
		clientSLOs(r, s, &p, ph)
		c.Points = append(c.Points, p)
	}
	c.Finish(s.SLOs)
	return c
}

// fleetStatus is the worst status of the targets' rows of the phase.
func fleetStatus(r *Result, row *PhaseRow) string {
	rank := map[string]int{StatusOK: 0, StatusDegraded: 1, StatusNoSteady: 2, StatusWithheld: 3}
	worst := StatusOK
	for _, x := range r.Answer.Phases {
		if x.Phase == row.Phase && x.Start == row.Start && rank[x.Status] > rank[worst] {
			worst = x.Status
		}
	}
	return worst
}

// fleetMax is the largest of the targets' figure name over phase m.
func fleetMax(m *phases.Measured, name string) sweep.Value {
	v := sweep.Value{Source: "largest of the targets' " + name, Reason: rate.ReasonAbsent}
	for k := range m.Targets {
		if f, ok := m.Targets[k].Get(name); ok && f.Value.Valid && (!v.Value.Valid || f.Value.V > v.Value.V) {
			v.Value, v.Reason = f.Value, ""
		}
	}
	return v
}

// fleetBuckets adds the targets' bucket Δs across phase ph: the fleet's
// distribution, when every target that has the histogram has the same
// bounds.
func (a *analyzer) fleetBuckets(ph phases.Phase, base string) phases.Histogram {
	var out phases.Histogram
	n := 0
	for _, name := range slices.Sorted(maps.Keys(a.inputs)) {
		h := a.inputs[name].Buckets(ph, base)
		if h.Reason != "" {
			continue
		}
		n++
		if out.Les == nil {
			out = h
			continue
		}
		if len(h.Les) != len(out.Les) {
			return phases.Histogram{Reason: rate.ReasonEdges}
		}
		for k := range h.Les {
			if h.Les[k] != out.Les[k] && !(math.IsInf(h.Les[k], 1) && math.IsInf(out.Les[k], 1)) {
				return phases.Histogram{Reason: rate.ReasonEdges}
			}
			out.Counts[k] += h.Counts[k]
		}
	}
	if n == 0 {
		return phases.Histogram{Reason: rate.ReasonAbsent}
	}
	out.Series = fmt.Sprintf("%s summed over %d targets", out.Series, n)
	return out
}

// msText is seconds as milliseconds.
func msText(s float64) string { return strconv.FormatFloat(1000*s, 'g', 4, 64) + " ms" }
