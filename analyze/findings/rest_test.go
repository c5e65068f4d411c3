package findings

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

func TestParseCap(t *testing.T) {
	for in, want := range map[string]Cap{
		"decode=5000":                       {Cell: engine.DecodeTokensPerSecond, Max: 5000},
		"llamacpp.decode = 300":             {Engine: engine.LlamaCpp, Cell: engine.DecodeTokensPerSecond, Max: 300},
		"vllm.prompt_tokens_per_second=2e5": {Engine: engine.VLLM, Cell: engine.PromptTokensPerSecond, Max: 2e5},
	} {
		got, err := ParseCap(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"decode":           "want [ENGINE.]CELL=MAX",
		"decode=-1":        "positive number",
		"decode=x":         "positive number",
		"kv=3":             "not a rate cell",
		"foo.decode=3":     "not an engine id",
		"ttft=NaN":         "positive number",
		"vllm.gauge:x=100": "not a rate cell",
	} {
		if _, err := ParseCap(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	caps := []Cap{{Cell: "c", Max: 1}, {Engine: "e", Cell: "c", Max: 2}, {Cell: "c", Max: 3}}
	if capFor(caps, "e", "c").V != 2 || capFor(caps, "x", "c").V != 1 || capFor(caps, "e", "d").Valid {
		t.Error("cap precedence")
	}
}

// Rollups: per calendar minute the max and mean of the published values
// and the largest naive one; above the cap, published and naive apart.
func TestRollups(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1019, 0, cat(rep(100, 50), []float64{9000}, rep(100, 10))...)
	v.ps[51].Rates[Decode] = Value{Reason: rate.ReasonJump}
	r := &Run{Gates: rate.Config{}.WithDefaults(), Caps: []Cap{{Cell: engine.DecodeTokensPerSecond, Max: 5000}}}
	r.Targets = []*Target{v.target()}
	f := Analyze(r)
	if len(f.Rollups) != 1 {
		t.Fatalf("rollups %+v", f.Rollups)
	}
	ro := f.Rollups[0]
	if ro.Cap.V != 5000 || ro.AboveCap != 0 || ro.NaiveAboveCap != 1 || ro.NaiveMax.V != 9000 || ro.Max.V != 100 ||
		ro.Values != 60 || ro.Naive != 61 {
		t.Errorf("rollup %+v", ro)
	}
	if len(ro.Minutes) != 2 || ro.Minutes[0].T != 1020 || ro.Minutes[0].N != 59 || ro.Minutes[0].Mean.V != 100 ||
		ro.Minutes[0].NaiveMax.V != 9000 || ro.Minutes[1].N != 1 || ro.MinuteMeanMax.V != 100 {
		t.Errorf("minutes %+v", ro.Minutes)
	}
}

// The fleet adds up the engines that answered each tick, each at its own
// cadence; KV pressure is the fullest, never the sum; a live engine
// without a value is named.
func TestFleet(t *testing.T) {
	a := newTarget("a", engine.VLLM)
	a.series(1000, 0, rep(100, 5)...)
	b := newTarget("b", engine.SGLang)
	b.t.Interval = 2
	for i, s := range []float64{1000, 1002, 1004} {
		p := b.poll(s, float64(i)*400)
		p.Rates[Decode] = Value{V: rate.Some(200)}
		p.KV, p.Waiting, p.Running, p.TokensTotal = rate.Some(0.9), rate.Some(2), rate.Some(3), rate.Some(10)
	}
	for i := range a.ps {
		a.ps[i].KV, a.ps[i].TokensTotal = rate.Some(0.5), rate.Some(5)
	}
	dcgm := newTarget("dcgm", engine.Generic)
	dcgm.series(1000, 0, 0)
	r := &Run{Gates: rate.Config{}.WithDefaults(), KeepPolls: true, Targets: []*Target{a.target(), b.target(), dcgm.target()}}
	fl := Analyze(r).Fleet
	if strings.Join(fl.Targets, ",") != "a,b" || strings.Join(fl.Other, ",") != "dcgm" || len(fl.Polls) != 6 {
		t.Fatalf("fleet %+v", fl)
	}
	p := fl.Polls[1] // 1001: a answered, b's last poll is 1 s old at its 2 s cadence
	if p.Live != 2 || p.Decode.V != 300 || p.DecodeOf != 2 || p.KVMax.V != 0.9 || p.Waiting.V != 2 || p.TokensTotal.V != 15 {
		t.Errorf("point %+v", p)
	}
	if p0 := fl.Polls[0]; p0.Live != 2 || p0.DecodeOf != 1 || len(p0.Missing) != 1 || p0.Missing[0] != "a (no_baseline)" {
		t.Errorf("first point %+v", p0)
	}
	s := fl.Summary
	if s.Points != 6 || s.AllLive != 6 || s.DecodeMax.V != 300 || s.KVMax.V != 0.9 || s.TokensTotal.V != 15 {
		t.Errorf("summary %+v", s)
	}
	if fl := fleet(nil, true); len(fl.Targets) != 0 || fl.Summary.Points != 0 {
		t.Errorf("no fleet %+v", fl)
	}
}

// A fleet sum that leaves float64's range (engines serving counters near
// 1e308) is unknown, never +Inf.
func TestFleetOverflowIsUnknown(t *testing.T) {
	a := newTarget("a", engine.VLLM)
	a.series(1000, 0, rep(1.5e308, 3)...)
	b := newTarget("b", engine.VLLM)
	b.series(1000, 0, rep(1.5e308, 3)...)
	for _, x := range []*builder{a, b} {
		for i := range x.ps {
			x.ps[i].TokensTotal = rate.Some(1.5e308)
		}
	}
	fl := Analyze(&Run{Gates: rate.Config{}.WithDefaults(), KeepPolls: true, Targets: []*Target{a.target(), b.target()}}).Fleet
	for _, p := range fl.Polls {
		if p.Decode.Valid || p.TokensTotal.Valid {
			t.Errorf("point %+v: an overflowed sum published", p)
		}
	}
	if s := fl.Summary; s.DecodeMax.Valid || s.TokensTotal.Valid || math.IsInf(s.DecodeMedian.V, 0) {
		t.Errorf("summary %+v", s)
	}
}

// Seams need two engines and name the targets on each side.
func TestSeams(t *testing.T) {
	mk := func(name, eng, model string, fams ...string) *builder {
		b := newTarget(name, eng)
		b.series(1000, 0, 10)
		b.t.Model, b.t.Families = model, fams
		for _, c := range []string{engine.PromptTokensTotal, engine.GenerationTokensTotal, engine.KVCacheUsageRatio,
			engine.RequestsWaiting} {
			b.t.Cells[c] = CellCount{Valued: 1}
		}
		return b
	}
	v := mk("v", engine.VLLM, "m1", "vllm:request_prefill_time_seconds")
	v.t.Histograms["vllm:time_to_first_token_seconds"] = []float64{0.001, 0.5, math.Inf(1)}
	s := mk("s", engine.SGLang, "m2")
	s.t.Histograms["sglang:time_to_first_token_seconds"] = []float64{0.1, 0.5, math.Inf(1)}
	l := mk("l", engine.LlamaCpp, "")
	f := run(v, s, l)
	ids := map[string]Seam{}
	for _, sm := range f.Seams {
		ids[sm.ID] = sm
	}
	for _, id := range []string{"prompt_cache_hits", "counter_timing", "per_request_seconds", "tokenizers", "kv_usage", "queue",
		"buckets:" + engine.TTFT} {
		if _, ok := ids[id]; !ok {
			t.Errorf("no seam %s in %v", id, f.Seams)
		}
	}
	if g := ids["counter_timing"].Targets; strings.Join(g["at request completion"], ",") != "l,s" || g["every engine step"][0] != "v" {
		t.Errorf("counter timing %v", g)
	}
	if g := ids["tokenizers"].Targets; len(g) != 3 || g["unknown"][0] != "l" {
		t.Errorf("tokenizers %v", g)
	}
	if g := ids["per_request_seconds"].Targets; g["per-request seconds"][0] != "v" || len(g["none"]) != 2 {
		t.Errorf("per-request seconds %v", g)
	}
	if seams([]*view{newView(v.target(), rate.Config{})}); len(seams([]*view{newView(v.target(), rate.Config{})})) != 0 {
		t.Error("a seam with one engine")
	}
	if s := layoutText([]float64{math.Inf(1)}); s != "+Inf only" {
		t.Errorf("layout %s", s)
	}
}

// Facts state only what the engine published: the queue's ceiling, prefill
// per stream over the run, prefix caching off making the cached fraction a
// known 0, the KV pool from the cache config, FLOPs left at 0 withheld, and
// speculative decoding over the run.
func TestFacts(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, rep(100, 5)...)
	for i := range v.ps {
		p := &v.ps[i]
		p.Capacity, p.Deferred = rate.Some(0), rate.Some(float64(i%2))
		if i >= 3 {
			p.Capacity = rate.Some(float64(i))
		}
		p.PrefixCaching, p.KVCapacity = rate.Some(0), rate.Some(2*7281*16)
	}
	v.t.Info[CacheConfigInfo] = []map[string]string{
		{"engine": "0", "num_gpu_blocks": "7281", "block_size": "16", "enable_prefix_caching": "False"},
		{"engine": "1", "num_gpu_blocks": "7281", "block_size": "16", "enable_prefix_caching": "False"},
		{"engine": "2", "num_gpu_blocks": "None", "block_size": "16"},
	}
	obs := func(name string, vals ...float64) {
		c := &Counter{}
		for i, x := range vals {
			c.Observe(1000+float64(i), 0, x)
		}
		c.Done()
		v.t.Counters[name] = c
	}
	obs(PrefillComputedSum, 1000, 1000+802418)
	obs(PrefillTimeSum, 10, 10+294.7)
	obs(PrefillComputedCnt, 5, 15)
	obs(PrefillTimeCnt, 5, 16)
	obs("vllm:estimated_flops_per_gpu_total", 0, 0, 0)
	obs("vllm:other_flops_total", 0, 1e12)
	obs("vllm:spec_decode_num_accepted_tokens_total", 10, 70)
	obs("vllm:spec_decode_num_draft_tokens_total", 20, 100)
	obs("vllm:spec_decode_num_drafts_total", 5, 35)
	f := run(v)
	got := map[string]Fact{}
	var order []string
	for _, x := range f.Facts[0].Facts {
		got[x.Name] = x
		order = append(order, x.Name)
	}
	if order[0] != FactCeiling {
		t.Errorf("the ceiling is not first: %v", order)
	}
	if c := got[FactCeiling]; c.T.V != 1003 || c.Value.V != 3 {
		t.Errorf("ceiling %+v", c)
	}
	if q := got[FactQueueReason]; q.By["capacity_max"] != 5 || q.By["deferred_polls"] != 3 || math.Abs(q.Value.V-0.8) > 1e-12 {
		t.Errorf("queue reason %+v", q)
	}
	if p := got[FactPrefillStream]; math.Abs(p.Value.V-802418/294.7) > 1e-6 || !strings.Contains(p.Text, "per prefilling stream") ||
		!strings.Contains(p.Text, "not quite the same population") || p.Window.V != 1 {
		t.Errorf("prefill %+v", p)
	}
	if c := got[FactCachedFraction]; !c.Value.Valid || c.Value.V != 0 || !strings.Contains(c.Text, "nominal prefill equals computed") {
		t.Errorf("cached fraction %+v", c)
	}
	if c := got[FactPrefixCaching]; c.By["engine 0"] != 0 || len(c.By) != 2 {
		t.Errorf("prefix caching %+v", c)
	}
	if k := got[FactKVPool]; k.Value.V != 232992 || k.By["engine 1"] != 116496 || !strings.Contains(k.Text, "7,281 blocks × 16") {
		t.Errorf("KV pool %+v", k)
	}
	var flops []Fact
	for _, x := range f.Facts[0].Facts {
		if x.Name == FactFLOPs {
			flops = append(flops, x)
		}
	}
	if len(flops) != 2 || flops[0].Status != "unimplemented" || flops[0].Value.Valid || flops[1].Value.V != 1e12 {
		t.Errorf("flops %+v", flops)
	}
	if a := got[FactSpecAccept]; a.Value.V != 0.75 {
		t.Errorf("spec accept %+v", a)
	}
	if l := got[FactSpecLength]; l.Value.V != 3 {
		t.Errorf("spec length %+v", l)
	}

	// Nothing moved during the run: the lifetime values, said so; nothing at all: why not.
	w := newTarget("w", engine.VLLM)
	w.series(1000, 0, 0)
	for i := range w.ps {
		w.ps[i].Capacity, w.ps[i].PrefixCaching = rate.Some(0), rate.Some(1)
	}
	w.ps[1].KVCapacity = rate.Some(100)
	w.t.Sources[engine.KVCacheCapacityTokens] = "sglang:max_total_num_tokens"
	same := func(name string, x float64) {
		c := &Counter{}
		c.Observe(1000, 0, x)
		c.Observe(1001, 0, x)
		c.Done()
		w.t.Counters[name] = c
	}
	same(PrefillComputedSum, 500)
	same(PrefillTimeSum, 2)
	same("vllm:spec_decode_num_accepted_tokens_total", 3)
	same("vllm:spec_decode_num_draft_tokens_total", 4)
	one := &Counter{}
	one.Observe(1000, 0, 5)
	one.Done()
	w.t.Counters["x_flops_total"] = one
	got = map[string]Fact{}
	for _, x := range run(w).Facts[0].Facts {
		got[x.Name] = x
	}
	if c := got[FactCeiling]; c.Value.V != 0 || !strings.Contains(c.Text, "under the ceiling") {
		t.Errorf("no ceiling %+v", c)
	}
	if q := got[FactQueueReason]; q.Value.Valid || q.Reason != rate.ReasonEmpty {
		t.Errorf("empty queue %+v", q)
	}
	if p := got[FactPrefillStream]; p.Value.V != 250 || !strings.Contains(p.Source, "lifetime") {
		t.Errorf("lifetime prefill %+v", p)
	}
	if _, ok := got[FactCachedFraction]; ok || !strings.Contains(got[FactPrefixCaching].Text, "enabled") {
		t.Errorf("caching on %+v", got)
	}
	if k := got[FactKVPool]; k.Source != "sglang:max_total_num_tokens" || k.Text != "KV pool 100 tokens" {
		t.Errorf("pool %+v", k)
	}
	if a := got[FactSpecAccept]; a.Value.V != 0.75 || !strings.Contains(a.Source, "lifetime") {
		t.Errorf("lifetime spec %+v", a)
	}
	if x := got[FactFLOPs]; x.Reason != rate.ReasonNoBaseline {
		t.Errorf("one-poll flops %+v", x)
	}
	same(PrefillComputedSum, 0)
	same(PrefillTimeSum, 0)
	same("vllm:spec_decode_num_draft_tokens_total", 0)
	got = map[string]Fact{}
	for _, x := range run(w).Facts[0].Facts {
		got[x.Name] = x
	}
	if got[FactPrefillStream].Reason != rate.ReasonEmpty || got[FactSpecAccept].Reason != rate.ReasonEmpty {
		t.Errorf("empty facts %+v", got)
	}
	if n := len(run(newTarget("x", engine.VLLM)).Facts[0].Facts); n != 0 {
		t.Errorf("%d facts invented for a target that published none", n)
	}
}

// A counter of many label sets (past the few it keeps in a slice) adds up
// each set's rises and resets as one set alone would, whatever the order
// the sets come in a poll.
func TestCounterManySets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, sets := range []int{1, fewSets, fewSets + 1, 3 * fewSets} {
		c := &Counter{}
		last := map[int32]float64{}
		inc, resets := 0.0, 0
		for poll := range 200 {
			order := r.Perm(sets)
			for _, k := range order {
				// A set joins late at times: it adds nothing until then.
				if poll < k {
					continue
				}
				set := int32(k*7 + 3)
				v := last[set] + float64(r.IntN(5))
				if r.IntN(40) == 0 {
					v = float64(r.IntN(3)) // a reset
				}
				if p, ok := last[set]; ok {
					if v >= p {
						inc += v - p
					} else {
						inc += v
						resets++
					}
				}
				last[set] = v
				c.Observe(float64(poll), set, v)
			}
		}
		c.Done()
		if c.Increase != inc || c.Resets != resets {
			t.Fatalf("%d sets: increase %v resets %d, want %v and %d", sets, c.Increase, c.Resets, inc, resets)
		}
	}
}

// A counter's increase over a run: a reset counts from 0, a joining label
// set adds nothing until it has a baseline.
func TestCounter(t *testing.T) {
	c := &Counter{}
	c.Observe(1, 0, 10)
	c.Observe(2, 0, 15)
	c.Observe(2, 1, 1000)
	c.Observe(3, 0, 3)
	c.Observe(3, 1, 1010)
	c.Done()
	c.Done()
	if c.Increase != 5+3+10 || c.Resets != 1 || c.Polls != 3 || c.First != 10 || c.Last != 1013 || c.Max != 1015 ||
		c.FirstT != 1 || c.LastT != 3 {
		t.Errorf("%+v", c)
	}
	if !Watched(PrefillTimeCnt) || !Watched("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") || !Watched("llamacpp:n_drafted_total") ||
		Watched("DCGM_FI_DEV_POWER_USAGE") || Watched("vllm:generation_tokens_total") {
		t.Error("watched")
	}
	if _, ok := EnergySourceOf("x"); ok {
		t.Error("energy source x")
	}
}

// Drift: what the engine and its version should publish and did not,
// series under renamed names placed in their deprecation, and unknown
// series that look like a missing one.
func TestDrift(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, 1)
	v.t.Version, v.t.VersionSource = "0.12.1", "/version"
	v.t.Cells[engine.KVCacheUsageRatio] = CellCount{Absent: 2}
	v.t.Cells[engine.ITL+engine.SuffixCount] = CellCount{Absent: 2}
	v.t.Cells[engine.RequestsRunning] = CellCount{Valued: 2}
	v.t.Families = []string{"vllm:gpu_prefix_cache_hits_total", "vllm:time_per_output_token_seconds", "vllm:prefix_cache_hits_total"}
	v.t.Unknown = []string{"vllm:kv_cache_usage_fraction", "vllm:something_else"}
	d := run(v).Drift[0]
	if len(d.Missing) != 2 || d.Missing[0].Cell != engine.KVCacheUsageRatio || len(d.Missing[0].Series) != 2 ||
		!strings.Contains(d.Missing[1].Note, "since 0.11") {
		t.Errorf("missing %+v", d.Missing)
	}
	if len(d.Renamed) != 2 || d.Renamed[0].Published != "both" || !strings.Contains(d.Renamed[0].Note, "removed it") ||
		!strings.Contains(d.Renamed[1].Note, "only with --show-hidden") {
		t.Errorf("renamed %+v", d.Renamed)
	}
	if len(d.Lookalikes) != 1 || d.Lookalikes[0].Series != "vllm:kv_cache_usage_fraction" {
		t.Errorf("lookalikes %+v", d.Lookalikes)
	}
	for ver, want := range map[string]string{"": "version is unknown", "0.11.0": "deprecated in this version",
		"v0.8.5": "the current name"} {
		v.t.Version = ver
		d := run(v).Drift[0]
		if !strings.Contains(d.Renamed[1].Note, want) {
			t.Errorf("%q: %q", ver, d.Renamed[1].Note)
		}
	}
	l := newTarget("l", engine.LlamaCpp)
	l.series(1000, 0, 1)
	l.t.Families = []string{"llamacpp:n_past_max"}
	if d := run(l).Drift[0]; len(d.Renamed) != 1 || d.Renamed[0].Note != "renamed to llamacpp:n_tokens_max" {
		t.Errorf("llama renamed %+v", d.Renamed)
	}
	if v, ok := parseVersion("b5942-81ff7abe"); ok {
		t.Errorf("a build string read as version %v", v)
	}
	if v, _ := parseVersion("0.10.1rc2"); !less(v, []int{0, 10, 2}) || less(v, []int{0, 10, 1}) {
		t.Errorf("version %v", v)
	}
	if similar("", "x") {
		t.Error("similar to nothing")
	}
}

// Energy: joules per generated token over the busy windows, from an
// energy counter (or power gauges, integrated); nothing without a source.
func TestEnergy(t *testing.T) {
	l := newTarget("l", engine.LlamaCpp)
	l.series(1000, 0, cat(rep(0, 10), rep(100, 20), rep(0, 10))...)
	mk := func(counter bool) *builder {
		d := newTarget("dcgm", engine.Generic)
		e := 0.0
		for s := 1000.0; s <= 1040; s++ {
			p := d.poll(s, 0)
			w := 100.0
			if s > 1010 && s <= 1030 {
				w = 300
			}
			if s > 1000 {
				e += w
			}
			if counter {
				p.Energy = rate.Some(e)
			} else {
				p.Power = rate.Some(w)
			}
		}
		d.t.Families = []string{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"}
		if !counter {
			d.t.Families = []string{"DCGM_FI_DEV_POWER_USAGE"}
		}
		return d
	}
	e := run(l, mk(true)).Energy
	if e == nil || e.Method != "counter" || e.Busy != 20 || e.Joules.V != 6000 || e.Tokens.V != 2000 || e.JoulesPerToken.V != 3 {
		t.Fatalf("energy %+v", e)
	}
	p := run(l, mk(false)).Energy
	// Power samples at whole seconds: trapezoids smear the steps by half a second each side.
	if p.Method != "power" || math.Abs(p.Joules.V-(300*19+200)) > 1e-9 || p.Series[0] != "DCGM_FI_DEV_POWER_USAGE" {
		t.Fatalf("power %+v", p)
	}
	if run(l).Energy != nil {
		t.Error("energy without a source")
	}
	idle := newTarget("idle", engine.LlamaCpp)
	idle.series(1000, 0, rep(0, 40)...)
	if e := run(idle, mk(true)).Energy; e.Reason != rate.ReasonEmpty || e.Joules.Valid {
		t.Errorf("no busy window %+v", e)
	}
	// Busy time past the energy source's polls is not counted, and said so.
	late := newTarget("late", engine.LlamaCpp)
	late.series(1030, 0, rep(100, 20)...)
	short := mk(true)
	short.ps = short.ps[:35]
	if e := run(late, short).Energy; !strings.Contains(strings.Join(e.Notes, " "), "outside an energy source") {
		t.Errorf("coverage %+v", e)
	}
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, rep(0, 40)...)
	v.t.Counters["vllm:estimated_flops_per_gpu_total"] = &Counter{}
	if e := run(v, l, mk(true)).Energy; !strings.Contains(strings.Join(e.Notes, " "), "no FLOPs per joule") {
		t.Errorf("flops note %+v", e.Notes)
	}
	one := newTarget("one", engine.Generic)
	one.poll(1000, 0).Energy = rate.Some(1)
	if e := run(l, one).Energy; e.Joules.V != 0 {
		t.Errorf("one point %+v", e)
	}
}

// The text: incidents with their counterfactuals, edges per span, rates
// against caps, the fleet and its seams, drift and energy.
func TestWriteText(t *testing.T) {
	v := newTarget("v", engine.VLLM)
	v.series(1000, 0, cat(rep(0, 5), []float64{400}, rep(1000, 8), []float64{300}, rep(0, 8))...)
	v.fail(1024, "http_error", "HTTP 500")
	v.fail(1025, "http_error", "HTTP 500")
	v.poll(1026, 10600)
	v.t.Version = "0.13"
	v.t.Families = []string{"vllm:gpu_cache_usage_perc"}
	v.t.Cells[engine.KVCacheUsageRatio] = CellCount{Absent: 3}
	v.t.Unknown = []string{"vllm:kv_cache_usage_fraction"}
	v.ps[3].Capacity = rate.Some(2)
	l := newTarget("l", engine.LlamaCpp)
	l.series(1000, 0, rep(10, 26)...)
	for _, b := range []*builder{v, l} {
		b.t.Cells[engine.GenerationTokensTotal] = CellCount{Valued: 1}
	}
	s := short(l)
	r := &Run{Gates: rate.Config{}.WithDefaults(), Spans: []float64{2}, Caps: []Cap{{Cell: engine.DecodeTokensPerSecond, Max: 5000}},
		Targets: []*Target{v.target(), l.target(), s.target()}}
	f := Analyze(r)
	var b bytes.Buffer
	f.WriteText(&b)
	out := b.String()
	for _, want := range []string{"incidents (", "gap ", "load edges (2, 2 judged)", "10 s: settle poll 2", "2 s window: settled",
		"above the 5000 cap: 0 published", "fleet of 2 engine targets", "seams", "drift of v (vllm 0.13 from )",
		"missing kv_cache_usage_ratio", "looks like", "renamed vllm:gpu_cache_usage_perc", "energy (counter of dcgm)",
		"% of the old level at poll 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if lines := f.TargetLines("v"); len(lines) != 2 || !strings.HasPrefix(lines[0], "ceiling:") {
		t.Errorf("target lines %v", lines)
	}
	var e bytes.Buffer
	(&Findings{}).WriteText(&e)
	if !strings.Contains(e.String(), "incidents (0):\n  none") {
		t.Errorf("empty text %q", e.String())
	}
}

// short is an energy source over l's polls.
func short(l *builder) *builder {
	d := newTarget("dcgm", engine.Generic)
	for i, p := range l.ps {
		d.poll(p.T, 0).Energy = rate.Some(float64(i) * 100)
	}
	return d
}

// A target whose recording does not state its cadence gets the median
// spacing of its ticks, else of its polls, else 1 s; a host stall of three
// targets names them all.
func TestCadenceAndNames(t *testing.T) {
	a := newTarget("a", engine.VLLM)
	a.series(1000, 0, rep(0, 5)...)
	a.t.Interval = 0
	if c := cadence(a.target()); c != 1 {
		t.Errorf("cadence from ticks %v", c)
	}
	for i := range a.t.Rows {
		a.t.Rows[i].Scheduled = 0
	}
	a.ps[3].T = 1002.5
	if c := cadence(a.target()); c != 1 {
		t.Errorf("cadence from polls %v", c)
	}
	if c := cadence(&Target{}); c != 1 {
		t.Errorf("cadence of nothing %v", c)
	}
	if s := targetsText([]string{"a", "b", "c"}, 3); s != "all 3 targets (a, b, c)" {
		t.Errorf("%q", s)
	}
	if stampNum(rate.Num{}) != "—" || numText(rate.Num{}) != "—" {
		t.Error("null texts")
	}
	var bs []byte
	bs, _ = Name("x").MarshalJSON()
	if string(bs) != `"x"` {
		t.Errorf("%s", bs)
	}
}
