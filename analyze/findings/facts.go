package findings

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// facts are what the engine published about itself, in the order a
// reader needs them: the queue's ceiling first.
func (v *view) facts() TargetFacts {
	tf := TargetFacts{Target: v.t.Name, Engine: v.t.Engine, Facts: []Fact{}}
	add := func(f *Fact) {
		if f != nil {
			tf.Facts = append(tf.Facts, *f)
		}
	}
	ceiling, reason := v.queueFacts()
	add(ceiling)
	add(reason)
	add(v.prefillFact())
	caching, cached := v.cachingFacts()
	add(caching)
	add(cached)
	add(v.kvPoolFact())
	for _, f := range v.flopsFacts() {
		add(&f)
	}
	acc, length := v.specFacts()
	add(acc)
	add(length)
	add(v.hiddenQueueFact())
	return tf
}

// hiddenQueueFact is llama.cpp's queue nobody counts: requests_deferred
// counts tasks waiting for a slot, but with every slot busy, requests
// beyond what the HTTP server's threads hand on wait inside those threads,
// in no series (a server with 4 slots, 8 clients and the default HTTP
// threads showed 0 waiting; with --threads-http 16, 4). Full slots with
// nothing deferred are no evidence: 4 clients on 4 slots read the same as
// 8 (real b4748 runs, where nothing waited at 4). Stated, as a
// possibility, only where /metrics itself waited for an answer while
// every slot was busy and nothing was deferred, at HiddenQueueLatePolls
// polls at least: the HTTP threads were taken.
func (v *view) hiddenQueueFact() *Fact {
	// Only llama.cpp has the hidden queue, and only a known slot count tells full.
	if v.t.Engine != engine.LlamaCpp || v.t.Slots <= 0 || v.interval <= 0 {
		return nil
	}
	limit := rate.DefaultStaleFraction * v.interval
	full, late := 0, 0
	first := -1
	for i := range v.t.Polls.Len() {
		run, wait := v.t.Polls.Running(i), v.t.Polls.Waiting(i)
		if !run.Valid || run.V < float64(v.t.Slots) || !wait.Valid || wait.V != 0 {
			continue
		}
		full++
		if st := v.t.Polls.Start(i); st > 0 && v.t.Polls.T(i)-st > limit {
			late++
			if first < 0 {
				first = i
			}
		}
	}
	// No answer waited while the slots were full: no evidence anything waits.
	if late < HiddenQueueLatePolls {
		return nil
	}
	p := v.t.Polls.At(first)
	return &Fact{Name: FactHiddenQueue, Value: rate.Some(float64(late)), Unit: "polls", T: rate.Some(p.T), Derived: true,
		Source: "llamacpp:requests_processing = " + v.t.SlotsSource + " with llamacpp:requests_deferred = 0, and the /metrics answer's first byte over " + secs(limit) + " after its request",
		Text: fmt.Sprintf("possible hidden queue: in %d of %d poll(s) with all %d slots busy and requests_deferred at 0, /metrics itself waited over %s for its answer (first at %s): llama-server's HTTP threads may all have been taken, and requests beyond its slots wait in those threads, where no series counts them; a possibility, not a measured queue",
			late, full, v.t.Slots, secs(limit), stamp(p.T))}
}

// HiddenQueueLatePolls is how many late /metrics answers at full slots
// make the hidden queue worth stating: one late answer is a slow scrape.
const HiddenQueueLatePolls = 2

const byReason = "vllm:num_requests_waiting_by_reason"

// queueFacts reads the queue's stated reasons: capacity (the load is past
// what the KV pool holds at once, so added load becomes queue instead of
// throughput: the run's ceiling) and deferred (waiting on something else).
func (v *view) queueFacts() (ceiling, reason *Fact) {
	ps := &v.t.Polls
	first := -1
	seen := 0
	var capMax, defMax, capSum, defSum float64
	var capPolls, defPolls int
	for i := range ps.Len() {
		c, d := ps.Capacity(i), ps.Deferred(i)
		if !c.Valid && !d.Valid {
			continue
		}
		seen++
		if c.Valid && c.V > 0 {
			capPolls++
			capSum += c.V
			capMax = max(capMax, c.V)
			if first < 0 {
				first = i
			}
		}
		if d.Valid && d.V > 0 {
			defPolls++
			defSum += d.V
			defMax = max(defMax, d.V)
		}
	}
	// The engine states no reason: nothing to read, nothing invented.
	if seen == 0 {
		return nil, nil
	}
	src := byReason + `{reason="capacity"}`
	ceiling = &Fact{Name: FactCeiling, Unit: "requests", Source: src}
	if first < 0 {
		ceiling.Value = rate.Some(0)
		ceiling.Text = fmt.Sprintf("no request waited on capacity in %d polls: the run stayed under the ceiling", seen)
	} else {
		p := ps.At(first)
		ceiling.Value, ceiling.T = p.Capacity, rate.Some(p.T)
		ceiling.Text = fmt.Sprintf("ceiling: capacity queueing first at %s (+%s into the recording): %s request(s) waiting on capacity. Load beyond what the KV pool holds at once became queue instead of throughput",
			stamp(p.T), secs(p.T-ps.T(0)), num(p.Capacity.V))
	}
	reason = &Fact{Name: FactQueueReason, Unit: "fraction", Source: "computed:Σcapacity / (Σcapacity + Σdeferred) of " + byReason,
		Derived: true, Window: rate.Some(ps.T(ps.Len()-1) - ps.T(0)),
		By: map[string]float64{"capacity_max": capMax, "deferred_max": defMax, "capacity_polls": float64(capPolls),
			"deferred_polls": float64(defPolls)}}
	if capSum+defSum == 0 {
		reason.Reason = rate.ReasonEmpty
		reason.Text = "queue by reason: no request waited over the run"
		return ceiling, reason
	}
	reason.Value = rate.Some(capSum / (capSum + defSum))
	reason.Text = fmt.Sprintf("queue by reason: capacity up to %s in %d poll(s), deferred up to %s in %d poll(s) (deferred: waiting on something other than capacity: LoRA budget, KV transfer, grammar)",
		num(capMax), capPolls, num(defMax), defPolls)
	return ceiling, reason
}

// prefillFact is prefill speed per prefilling stream: the KV computed over
// the time spent prefilling, both summed over the same completed requests.
func (v *view) prefillFact() *Fact {
	tok, okT := v.t.Counters[PrefillComputedSum]
	sec, okS := v.t.Counters[PrefillTimeSum]
	// Both halves must be published; none is invented.
	if !okT || !okS {
		return nil
	}
	f := &Fact{Name: FactPrefillStream, Unit: "tokens/s per stream", Derived: true,
		Source: "computed:Δ" + PrefillComputedSum + " / Δ" + PrefillTimeSum}
	const per = "per prefilling stream, not aggregate: concurrent prefills overlap, so their summed seconds exceed the wall time; never aliased onto a wall-time prompt rate"
	if sec.Increase > 0 {
		f.Value = rate.Some(tok.Increase / sec.Increase)
		f.Window = rate.Some(max(tok.LastT-tok.FirstT, sec.LastT-sec.FirstT))
		f.Text = fmt.Sprintf("prefill %s tok/s %s (%s tokens over %s s of prefill in the run)", num(f.Value.V), per,
			thousands(tok.Increase), num(sec.Increase))
		if a, b := v.t.Counters[PrefillComputedCnt], v.t.Counters[PrefillTimeCnt]; a != nil && b != nil && a.Increase != b.Increase {
			f.Text += fmt.Sprintf("; the two histograms counted %s and %s requests: not quite the same population", num(a.Increase), num(b.Increase))
		}
		return f
	}
	// No prefill completed during the run: the counters' lifetime is all there is.
	if sec.Last > 0 {
		f.Source = "computed:" + PrefillComputedSum + " / " + PrefillTimeSum + " (lifetime, as read)"
		f.Value = rate.Some(tok.Last / sec.Last)
		f.Text = fmt.Sprintf("prefill %s tok/s %s; over the counters' lifetime (%s tokens over %s s): no request completed during the run",
			num(f.Value.V), per, thousands(tok.Last), num(sec.Last))
		return f
	}
	f.Reason = rate.ReasonEmpty
	f.Text = "prefill per stream: no completed request has been counted"
	return f
}

// cachingFacts read prefix caching's state; disabled makes the cached
// fraction a known 0.
func (v *view) cachingFacts() (caching, cached *Fact) {
	last := rate.Num{}
	for i := range v.t.Polls.Len() {
		if c := v.t.Polls.PrefixCaching(i); c.Valid {
			last = c
		}
	}
	// Not stated: unknown, not 0.
	if !last.Valid {
		return nil, nil
	}
	src := v.source(engine.PrefixCachingEnabled, CacheConfigInfo)
	caching = &Fact{Name: FactPrefixCaching, Value: last, Source: src + " enable_prefix_caching", Derived: true}
	if sets := v.t.Info[CacheConfigInfo]; len(sets) > 1 {
		caching.By = map[string]float64{}
		for _, ls := range sets {
			if on, ok := ls["enable_prefix_caching"]; ok {
				caching.By["engine "+ls["engine"]] = boolNum(on)
			}
		}
	}
	if last.V != 0 {
		caching.Text = "prefix caching enabled: the cached share per window is prefix_cache_hit_ratio"
		return caching, nil
	}
	caching.Text = "prefix caching disabled"
	cached = &Fact{Name: FactCachedFraction, Value: rate.Some(0), Unit: "fraction", Derived: true,
		Source: src + ` enable_prefix_caching="False"`,
		Text:   "cached fraction is a known 0: nothing could be served from a prefix cache, so nominal prefill equals computed prefill"}
	return caching, cached
}

// boolNum reads a Python boolean label: 1 for true.
func boolNum(s string) float64 {
	if strings.EqualFold(s, "true") || s == "1" {
		return 1
	}
	return 0
}

// source is the target's recorded source of a canonical cell, else def.
func (v *view) source(cell, def string) string {
	if s := v.t.Sources[cell]; s != "" {
		return s
	}
	return def
}

// kvPoolFact is the KV pool in tokens: vLLM num_gpu_blocks × block_size,
// or whatever the engine's reader reads it from.
func (v *view) kvPoolFact() *Fact {
	last := rate.Num{}
	for i := range v.t.Polls.Len() {
		if c := v.t.Polls.KVCapacity(i); c.Valid {
			last = c
		}
	}
	// Not published: no pool.
	if !last.Valid {
		return nil
	}
	f := &Fact{Name: FactKVPool, Value: last, Unit: "tokens", Derived: true,
		Source: v.source(engine.KVCacheCapacityTokens, "")}
	f.Text = fmt.Sprintf("KV pool %s tokens", thousands(last.V))
	sets := v.t.Info[CacheConfigInfo]
	if len(sets) == 0 {
		return f
	}
	f.Source = "computed:num_gpu_blocks × block_size of " + CacheConfigInfo
	var parts []string
	f.By = map[string]float64{}
	for _, ls := range sets {
		b, e1 := strconv.ParseFloat(ls["num_gpu_blocks"], 64)
		s, e2 := strconv.ParseFloat(ls["block_size"], 64)
		if e1 != nil || e2 != nil {
			continue
		}
		key := "engine " + ls["engine"]
		if ls["engine"] == "" {
			key = "engine"
		}
		f.By[key] += b * s
		parts = append(parts, fmt.Sprintf("%s blocks × %s", thousands(b), num(s)))
	}
	if len(parts) > 0 {
		f.Text += " = " + strings.Join(parts, " + ")
	}
	return f
}

// flopsFacts: a FLOPs counter that never left 0 is unimplemented, not
// zero work, and is withheld from every efficiency figure.
func (v *view) flopsFacts() []Fact {
	var names []string
	for n := range v.t.Counters {
		if IsFlops(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []Fact
	for _, n := range names {
		c := v.t.Counters[n]
		f := Fact{Name: FactFLOPs, Unit: "FLOP/s", Source: n}
		if c.Max == 0 {
			f.Status, f.Reason = "unimplemented", "unimplemented"
			f.Text = fmt.Sprintf("%s stayed at 0 over %d poll(s): unimplemented, not zero work; withheld from every efficiency figure", n, c.Polls)
			out = append(out, f)
			continue
		}
		f.Status, f.Derived = "published", true
		f.Source = "computed:Δ" + n + "/Δt"
		if w := c.LastT - c.FirstT; w > 0 {
			f.Value, f.Window = rate.Some(c.Increase/w), rate.Some(w)
			f.Text = fmt.Sprintf("%s: %.4g FLOP/s over the run", n, f.Value.V)
		} else {
			f.Reason = rate.ReasonNoBaseline
			f.Text = n + ": a single poll, no rate"
		}
		out = append(out, f)
	}
	return out
}

// specFacts are speculative decoding's acceptance over the run: accepted
// over drafted tokens, and the mean acceptance length 1 + accepted/drafts.
func (v *view) specFacts() (acc, length *Fact) {
	an, dn, rn := engine.SpecCounters(v.t.Engine)
	a, d, r := v.counter(an), v.counter(dn), v.counter(rn)
	// Speculative decoding not configured: its counters are absent.
	if a == nil || d == nil {
		return nil, nil
	}
	acc = &Fact{Name: FactSpecAccept, Unit: "fraction", Derived: true,
		Source: "computed:Δ" + a.name + " / Δ" + d.name}
	switch {
	case d.c.Increase > 0:
		acc.Value = rate.Some(a.c.Increase / d.c.Increase)
		acc.Window = rate.Some(d.c.LastT - d.c.FirstT)
		acc.Text = fmt.Sprintf("speculative decoding accepted %.1f %% of %s drafted tokens over the run", 100*acc.Value.V, thousands(d.c.Increase))
	case d.c.Last > 0:
		acc.Source = "computed:" + a.name + " / " + d.name + " (lifetime, as read)"
		acc.Value = rate.Some(a.c.Last / d.c.Last)
		acc.Text = fmt.Sprintf("speculative decoding accepted %.1f %% of %s drafted tokens over the counters' lifetime (none drafted during the run)",
			100*acc.Value.V, thousands(d.c.Last))
	default:
		acc.Reason = rate.ReasonEmpty
		acc.Text = "speculative decoding: no token drafted"
	}
	if r == nil || r.c.Increase <= 0 {
		return acc, nil
	}
	length = &Fact{Name: FactSpecLength, Unit: "tokens per draft", Derived: true,
		Source: "computed:1 + Δ" + a.name + " / Δ" + r.name, Value: rate.Some(1 + a.c.Increase/r.c.Increase),
		Window: rate.Some(r.c.LastT - r.c.FirstT)}
	length.Text = fmt.Sprintf("mean acceptance length %.2f tokens per draft over the run", length.Value.V)
	return acc, length
}

type named struct {
	name string
	c    *Counter
}

// counter is the first of names the target published.
func (v *view) counter(names []string) *named {
	for _, n := range names {
		if c, ok := v.t.Counters[n]; ok {
			return &named{n, c}
		}
	}
	return nil
}

// thousands formats a number with thousands separators when it is whole.
func thousands(x float64) string {
	if x != math.Trunc(x) || math.Abs(x) >= 1e15 {
		return num(x)
	}
	s := strconv.FormatFloat(math.Abs(x), 'f', 0, 64)
	var b strings.Builder
	if x < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
