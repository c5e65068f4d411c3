package findings

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// fleetFields are the numbers of a poll the fleet adds up: decode,
// prompt, running, waiting, KV.
var fleetFields = [...]Field{FieldRate(Decode), FieldRate(Prompt), FieldRunning, FieldWaiting, FieldKV}

// fleet totals the engine targets at every tick of the recording.
func fleet(views []*view, keep bool) Fleet {
	f := Fleet{Targets: []string{}, Other: []string{}, Polls: []FleetPoint{}}
	var eng []*view
	for _, v := range views {
		if v.t.Engine == engine.Generic {
			f.Other = append(f.Other, v.t.Name)
			continue
		}
		eng = append(eng, v)
		f.Targets = append(f.Targets, v.t.Name)
	}
	// No engine, no fleet.
	if len(eng) == 0 {
		return f
	}
	// Sized to every row at once: grown by appends, a day of polls
	// allocated several times what it keeps.
	n := 0
	for _, v := range eng {
		n += len(v.t.Rows)
	}
	ticks := make([]fleetTick, 0, n)
	ends := make([]int, len(eng)) // engine vi's ticks end at ends[vi]
	sorted := true
	for vi, v := range eng {
		from := len(ticks)
		for i := range v.t.Rows {
			t := rowTime(&v.t.Rows[i])
			// A row without any time cannot be placed.
			if t <= 0 {
				continue
			}
			t = math.Round(t*1e3) / 1e3
			sorted = sorted && (len(ticks) == from || !cmp.Less(t, ticks[len(ticks)-1].t))
			ticks = append(ticks, fleetTick{t, vi, v.rowPoll[i]})
		}
		ends[vi] = len(ticks)
	}
	if sorted {
		// Each engine's ticks are in order (its rows are, but for a clock
		// that stepped back): merged, they are what the stable sort makes.
		ticks = mergeTicks(ticks, ends)
	} else {
		slices.SortStableFunc(ticks, func(a, b fleetTick) int { return cmp.Compare(a.t, b.t) })
	}
	last := make([]fleetTick, len(eng))
	for i := range last {
		last[i].poll = -1
		last[i].t = math.Inf(-1)
	}
	s := &f.Summary
	s.MinLive = len(eng)
	decodes := make([]float64, 0, len(ticks)) // a point per tick at most
	if keep {
		// Sized to the points at once: grown by appends, a day of 8
		// engines' 345,600 points (64 MB) held the old array and the new
		// at the last growth.
		n := 0
		for i := range ticks {
			if i == 0 || ticks[i].t != ticks[i-1].t {
				n++
			}
		}
		f.Polls = make([]FleetPoint, 0, n)
	}
	// Each engine's latest poll is read once, when it becomes the latest:
	// the ticks after it until the next reuse what it gave.
	type reading struct {
		poll                                 int
		decode, prompt, running, waiting, kv rate.Num
		missing                              string
	}
	got := make([]reading, len(eng))
	for i := range got {
		got[i].poll = -1
	}
	for i := 0; i < len(ticks); {
		t := ticks[i].t
		for ; i < len(ticks) && ticks[i].t == t; i++ {
			last[ticks[i].v] = ticks[i]
		}
		p := FleetPoint{T: t, Total: len(eng)}
		for vi, v := range eng {
			l := last[vi]
			// An engine answered the tick when its latest row is a poll, recent for its cadence.
			if l.poll < 0 || t-l.t > HoleFactor*v.interval {
				// One discovery had not added yet or had removed is absent:
				// not down, not missing, not in the total.
				if !v.presentAt(t) {
					p.Total--
					p.Absent = append(p.Absent, v.t.Name)
				}
				continue
			}
			p.Live++
			r := &got[vi]
			if r.poll != l.poll {
				ps, q := &v.t.Polls, l.poll
				var xs [len(fleetFields)]rate.Num
				ps.Read(q, fleetFields[:], xs[:])
				*r = reading{poll: q, decode: xs[0], prompt: xs[1], running: xs[2], waiting: xs[3], kv: xs[4]}
				if !r.decode.Valid {
					r.missing = fmt.Sprintf("%s (%s)", v.t.Name, ps.Reasons(q)[Decode])
				}
			}
			if d := r.decode; d.Valid {
				p.Decode = addNum(p.Decode, d.V)
				p.DecodeOf++
			} else {
				p.Missing = append(p.Missing, r.missing)
			}
			if x := r.prompt; x.Valid {
				p.Prompt = addNum(p.Prompt, x.V)
				p.PromptOf++
			}
			if x := r.running; x.Valid {
				p.Running = addNum(p.Running, x.V)
			}
			if x := r.waiting; x.Valid {
				p.Waiting = addNum(p.Waiting, x.V)
			}
			// KV pressure is the fullest engine's, never a sum.
			if x := r.kv; x.Valid {
				p.KVMax = maxNum(p.KVMax, x.V)
			}
			if x := v.lifetime[l.poll]; x.Valid {
				p.TokensTotal = addNum(p.TokensTotal, x.V)
			}
		}
		// A sum that left float64's range is no total (engines serving
		// counters near 1e308): unknown, never +Inf.
		for _, n := range []*rate.Num{&p.Decode, &p.Prompt, &p.Running, &p.Waiting, &p.TokensTotal} {
			if n.Valid && (math.IsInf(n.V, 0) || math.IsNaN(n.V)) {
				*n = rate.Num{}
			}
		}
		s.Points++
		if len(p.Absent) > 0 {
			s.AbsentPoints++
		}
		if p.Live == p.Total {
			s.AllLive++
		}
		s.MinLive = min(s.MinLive, p.Live)
		if p.Decode.Valid {
			decodes = append(decodes, p.Decode.V)
			s.DecodeMax = maxNum(s.DecodeMax, p.Decode.V)
		}
		if p.Waiting.Valid {
			s.WaitingMax = maxNum(s.WaitingMax, p.Waiting.V)
		}
		if p.KVMax.Valid {
			s.KVMax = maxNum(s.KVMax, p.KVMax.V)
		}
		if p.TokensTotal.Valid {
			s.TokensTotal = p.TokensTotal
		}
		if keep {
			f.Polls = append(f.Polls, p)
		}
	}
	s.DecodeMedian = median(decodes)
	for _, v := range eng {
		for _, pr := range v.t.Presence {
			if !pr.AtStart {
				s.Joins++
			}
			if pr.Leave > 0 {
				s.Leaves++
			}
		}
	}
	for _, v := range eng {
		if v.runTokens.Valid {
			s.TokensRun = addNum(s.TokensRun, v.runTokens.V)
		}
	}
	if math.IsInf(s.TokensRun.V, 0) || math.IsNaN(s.TokensRun.V) {
		s.TokensRun = rate.Num{}
	}
	return f
}

// fleetTick is an engine's row at time t: engine v's, its poll (-1 none).
type fleetTick struct {
	t    float64
	v    int
	poll int
}

// mergeTicks merges the runs of xs that end at ends, each in order by
// time (cmp.Compare's order, NaN first), into one in that order: of equal
// ones, the earlier run's first, as a stable sort of xs orders them. It
// returns a new slice. (The times are compared in line: through a
// comparison function the merge was a third of the fleet's time.)
func mergeTicks(xs []fleetTick, ends []int) []fleetTick {
	out := make([]fleetTick, 0, len(xs))
	heads := make([]int, len(ends))
	for r := range heads {
		if r > 0 {
			heads[r] = ends[r-1]
		}
	}
	for {
		best, bt := -1, 0.0
		for r, h := range heads {
			if h < ends[r] && (best < 0 || cmp.Less(xs[h].t, bt)) {
				best, bt = r, xs[h].t
			}
		}
		// Every run is used up.
		if best < 0 {
			return out
		}
		out = append(out, xs[heads[best]])
		heads[best]++
	}
}

func addNum(n rate.Num, x float64) rate.Num { return rate.Some(n.V + x) }

// atCompletion is how a decode counter that moves when requests finish is
// described.
const atCompletion = "at request completion"

// everyStep is how a decode counter that moves on every engine step is
// described.
const everyStep = "every engine step"

// Engine classes behind the seams (metric catalog §7).
var (
	promptIncludesHits = map[string]string{
		engine.VLLM: "include prefix-cache hits", engine.SGLang: "include prefix-cache hits",
		engine.TGI: "include cached tokens (input length)", engine.VLLMV0: "not verified for V0",
		engine.NIM: "not verified for V0", engine.LlamaCpp: "exclude reused tokens (evaluated only)",
	}
	decodeMoves = map[string]string{
		engine.VLLM: everyStep, engine.VLLMV0: everyStep, engine.NIM: everyStep,
		engine.LlamaCpp: atCompletion, engine.SGLang: atCompletion, engine.TGI: atCompletion,
	}
	kvMeaning = map[string]string{
		engine.VLLM: "KV blocks in use (evictable cached blocks count free)", engine.VLLMV0: "KV blocks in use",
		engine.NIM: "KV blocks in use", engine.SGLang: "KV tokens in use (evictable cached tokens count free)",
		engine.TRTLLM: "KV blocks in use", engine.LlamaCpp: "KV cells in use (forks only)",
	}
	queueMeaning = map[string]string{
		engine.VLLM: "waiting, deferred requests included", engine.VLLMV0: "waiting", engine.NIM: "waiting",
		engine.LlamaCpp: "tasks deferred for want of a slot (requests held in its HTTP threads are counted nowhere)", engine.SGLang: "queued (grammar and PD queues apart)",
		engine.TGI: "router queue", engine.TRTLLM: "batcher waiting, else Triton pending",
		engine.Triton: "Triton pending requests",
	}
	// perRequestSeconds are families of summed per-request seconds.
	perRequestSeconds = []string{
		"llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_seconds_total",
		"vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds",
		"tgi_request_inference_duration", "nv_inference_request_duration_us", "nv_inference_compute_infer_duration_us",
	}
)

// seams names where the fleet's engines count similar things differently;
// each needs two engine targets.
func seams(views []*view) []Seam {
	var eng []*view
	for _, v := range views {
		if v.t.Engine != engine.Generic {
			eng = append(eng, v)
		}
	}
	out := []Seam{}
	// One engine adds up with nothing: no seam.
	if len(eng) < 2 {
		return out
	}
	group := func(meaning map[string]string, has func(*view) bool) map[string][]string {
		g := map[string][]string{}
		for _, v := range eng {
			if m, ok := meaning[v.t.Engine]; ok && (has == nil || has(v)) {
				g[m] = append(g[m], v.t.Name)
			}
		}
		return g
	}
	valued := func(cell string) func(*view) bool {
		return func(v *view) bool { return v.t.Cells[cell].Valued > 0 }
	}
	if g := group(promptIncludesHits, valued(engine.PromptTokensTotal)); len(g) > 1 {
		out = append(out, Seam{ID: "prompt_cache_hits", Targets: g,
			Cells: []string{engine.PromptTokensPerSecond, engine.PromptTokensTotal, engine.TokensTotal},
			Note:  "llama.cpp's prompt tokens exclude the tokens reused from its cache while vLLM and SGLang count every prompt token, cache hits included: a fleet prompt sum adds different things; compare prompt_tokens_computed_per_second"})
	}
	if g := group(decodeMoves, valued(engine.GenerationTokensTotal)); len(g) > 1 {
		out = append(out, Seam{ID: "counter_timing", Targets: g, Cells: []string{engine.DecodeTokensPerSecond},
			Note: "some decode counters move every engine step, others only when a request finishes: over windows shorter than a request the latter read 0 and then spike, so the fleet sum is smooth only where every engine's is"})
	}
	g := map[string][]string{}
	for _, v := range eng {
		for _, fam := range perRequestSeconds {
			if slices.Contains(v.t.Families, fam) {
				g["per-request seconds"] = append(g["per-request seconds"], v.t.Name)
				break
			}
		}
	}
	if len(g) > 0 {
		var rest []string
		for _, v := range eng {
			if !slices.Contains(g["per-request seconds"], v.t.Name) {
				rest = append(rest, v.t.Name)
			}
		}
		if len(rest) > 0 {
			g["none"] = rest
		}
		out = append(out, Seam{ID: "per_request_seconds", Targets: g,
			Cells: []string{engine.PerRequestDecodeTokensPerSecond, FactPrefillStream},
			Note:  "these seconds are each request's own, summed: concurrent requests overlap, so they run faster than the wall clock. Tokens over them are a per-stream speed, never a throughput; throughput divides by wall seconds (the poll stamps)"})
	}
	out = append(out, bucketSeams(eng)...)
	models := map[string][]string{}
	for _, v := range eng {
		models[cmp.Or(v.t.Model, "unknown")] = append(models[cmp.Or(v.t.Model, "unknown")], v.t.Name)
	}
	// Two known models at least: an unknown one may be either.
	if known := len(models) - min(1, len(models["unknown"])); known > 1 {
		out = append(out, Seam{ID: "tokenizers", Targets: models,
			Cells: []string{engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond, engine.TokensTotal},
			Note:  "different models have different tokenizers: a token of one is not a token of another, so token sums and rates across them add unlike units"})
	}
	if g := group(kvMeaning, valued(engine.KVCacheUsageRatio)); len(g) > 1 {
		out = append(out, Seam{ID: "kv_usage", Targets: g, Cells: []string{engine.KVCacheUsageRatio},
			Note: "KV usage is a fraction of different pools and units: the fleet reports the fullest engine, never a sum"})
	}
	if g := group(queueMeaning, valued(engine.RequestsWaiting)); len(g) > 1 {
		out = append(out, Seam{ID: "queue", Targets: g, Cells: []string{engine.RequestsWaiting},
			Note: "each engine's queue counts different waits: the fleet's waiting sum adds them as they are"})
	}
	for i := range out {
		for _, ts := range out[i].Targets {
			slices.Sort(ts)
		}
	}
	return out
}

// bucketSeams compares the bucket bounds of each canonical histogram
// across the targets that publish it.
func bucketSeams(eng []*view) []Seam {
	var out []Seam
	// Each engine's catalog is built (and sorted) once, not once a histogram.
	cats := make([][]engine.Known, len(eng))
	for i, v := range eng {
		cats[i], _ = engine.Catalog(v.t.Engine)
	}
	for _, base := range engine.Histograms {
		layouts := map[string][]string{}
		for i, v := range eng {
			for _, k := range cats[i] {
				bs, ok := v.t.Histograms[k.Family]
				if !ok || !feeds(k.Feeds, base) {
					continue
				}
				key := layoutText(bs)
				layouts[key] = append(layouts[key], v.t.Name)
				break
			}
		}
		if len(layouts) > 1 {
			out = append(out, Seam{ID: "buckets:" + base, Targets: layouts, Cells: []string{base + "__p50", base + "__p95", base + "__p99"},
				Note: "different bucket bounds: quantiles interpolated in different buckets are not comparable, and a fleet quantile would need one layout"})
		}
	}
	return out
}

func feeds(list, cell string) bool {
	for _, f := range strings.Fields(list) {
		if f == cell {
			return true
		}
	}
	return false
}

// layoutText describes bucket bounds: "22 bounds 0.001..2560 #1a2b3c4d",
// the hash telling apart layouts that share their count and ends.
func layoutText(bs []float64) string {
	var fin []float64
	h := fnv.New32a()
	for _, b := range bs {
		if !math.IsInf(b, 1) {
			fin = append(fin, b)
			fmt.Fprintf(h, "%g,", b)
		}
	}
	if len(fin) == 0 {
		return "+Inf only"
	}
	return fmt.Sprintf("%d bounds %g..%g #%08x", len(fin), fin[0], fin[len(fin)-1], h.Sum32())
}
