package sim

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Counter indexes of an accumulator. Every counter is additive over pieces.
const (
	cGen       = iota // generated tokens
	cPrompt           // prompt tokens, cached included
	cHits             // prefix-cache hit tokens
	cReqs             // finished requests
	cAbort            // finished with reason abort
	cLength           // finished with reason length
	cStop             // finished with reason stop
	cSteps            // engine steps (llama_decode calls)
	cPreempt          // preemptions
	cITL              // inter-token intervals = generated - requests
	cPredicted        // generated tokens of finished requests
	cPromptSec        // per-request prompt seconds (llama.cpp)
	cGenSec           // per-request generation seconds (llama.cpp)
	cCPU              // process CPU seconds
	cPromptReq        // evaluated prompt tokens of the requests whose prompt is done (request-sized)
	nCounter
)

// Histogram indexes.
const (
	hTTFT = iota
	hTPOT
	hE2E
	hQueue
	hInference
	hPrefill
	hDecode
	hPromptTok
	hGenTok
	hIterTok
	hMaxGenTok
	hParamsN
	hParamsMaxTok
	hReqTPOT
	hHTTPHighr
	hHTTPDur
	hHTTPReqSize
	hHTTPRespSize
	nHist
)

const (
	maxBuckets = 22 // bounds of the largest histogram (TTFT), +Inf excluded
	hStride    = 2 + maxBuckets
	accAdd     = nCounter + nHist*hStride // the additive part of an accumulator
)

// Per-render values after the additive part.
const (
	xRunning = accAdd + iota
	xWaiting // capacity + deferred
	xWaitCap
	xWaitDef
	xKV
	xCreated
	xProcStart
	xZero
	xGC0
	xGC1
	xGC2
	xGCC0
	xGCC1
	xGCC2
	xCPU
	xNTokMax
	xPromptTPS
	xPredTPS
	xBusy
	xEvalPrompt
	xKVTok // llama.cpp kv_cache_tokens
	accLen
)

func hCount(h int) int     { return nCounter + h*hStride }
func hSum(h int) int       { return nCounter + h*hStride + 1 }
func hBucket(h, k int) int { return nCounter + h*hStride + 2 + k }

// acc holds the values of one label set: counters, histograms and, after
// accAdd, per-render gauges.
type acc [accLen]float64

// Bucket bounds of vLLM V1 (as in the real capture and vllm/v1/metrics).
var (
	ttftBounds = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBounds = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1, 2.5, 5, 7.5, 10, 20, 40, 80}
	requestLatencyBounds = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60,
		120, 240, 480, 960, 1920, 7680}
	iterationBounds = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	paramsNBounds   = []float64{1, 2, 5, 10, 20}
	highrBounds     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3,
		3.5, 4, 4.5, 5, 7.5, 10, 30, 60}
	httpDurBounds = []float64{0.1, 0.5, 1}
)

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, ... up to max.
func buckets125(limit int) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * exp
			if v > float64(limit) || len(out) == maxBuckets {
				return out
			}
			out = append(out, v)
		}
	}
}

// histSigma is the log-normal spread of each histogram's observations.
var histSigma = [nHist]float64{
	hTTFT: 0.5, hTPOT: 0.25, hE2E: 0.35, hQueue: 0.8, hInference: 0.35, hPrefill: 0.5,
	hDecode: 0.35, hPromptTok: 0.6, hGenTok: 0.5, hIterTok: 0.35, hMaxGenTok: 0.5,
	hReqTPOT: 0.2, hHTTPHighr: 0.35, hHTTPDur: 0.35,
}

// phaseRes is a phase with everything derived from it.
type phaseRes struct {
	Phase
	reqRate   float64 // finished requests per second
	promptLen float64 // prompt tokens per request
	tpot      float64 // seconds per output token of one request
	queue     float64
	prefill   float64
	ttft      float64
	decodeT   float64 // decode seconds per request
	e2e       float64
	stepRate  float64 // engine steps per second
	kv        float64
	ctxMax    float64 // llama.cpp n_tokens_max candidate
	fl2       float64 // length share among the non-aborted
	mean      [nHist]float64
	cdf       [nHist][maxBuckets]float64
}

// piece is a stretch of the timeline under one phase, cut at phase starts,
// restarts and label joins.
type piece struct {
	start      time.Duration
	phase      int
	restart    bool // a restart happens at start
	seg        int  // the piece where the current counter segment began
	segRestart bool // that piece begins with a restart
}

// labelSet is one exported label set (vLLM engine label).
type labelSet struct {
	label     string
	joinAt    time.Duration
	joinPiece int
	carry     acc // counters carried in at the join
	carryDur  time.Duration
}

// Engine is a compiled simulated engine. It is immutable and safe for
// concurrent use.
type Engine struct {
	spec      EngineSpec
	anchorSec float64 // Unix seconds of offset 0
	phases    []phaseRes
	pieces    []piece
	prefix    []acc // prefix[j]: sum of the contributions of pieces before j
	sets      []labelSet
	tmpls     []template // tmpls[n-1] renders n label sets
	bounds    [nHist][]float64
	windows   []Event // hang, status, slow, stale
	pool      sync.Pool
	live      *liveLoad // real requests served (openai.go); nil outside Serve
	// build is the llama.cpp build's page (llamacpp_builds.go).
	build llamaBuild
}

// renderState is the scratch space of one evaluation.
type renderState struct {
	piece int
	ph    *phaseRes
	n     int // active label sets
	sets  [maxLabelSets]struct{ v acc }
	agg   acc
	part  acc
}

// Build compiles the engines of the scenario; anchor is the wall-clock
// instant of offset 0 (zero means sc.Start).
func (sc *Scenario) Build(anchor time.Time) ([]*Engine, error) {
	if err := sc.Normalize(); err != nil {
		return nil, err
	}
	if anchor.IsZero() {
		anchor = sc.Start
	}
	out := make([]*Engine, len(sc.Engines))
	for i := range sc.Engines {
		out[i] = newEngine(sc.Engines[i], anchor)
	}
	return out, nil
}

// NewEngine compiles one engine; anchor is the wall-clock instant of offset 0
// (zero means [DefaultStart]).
func NewEngine(spec EngineSpec, anchor time.Time) (*Engine, error) {
	spec.Phases = append([]Phase(nil), spec.Phases...)
	spec.Events = append([]Event(nil), spec.Events...)
	if err := spec.normalize(); err != nil {
		return nil, fmt.Errorf("engine %q: %w", spec.Name, err)
	}
	if anchor.IsZero() {
		anchor = DefaultStart
	}
	return newEngine(spec, anchor), nil
}

func newEngine(spec EngineSpec, anchor time.Time) *Engine {
	e := &Engine{spec: spec, anchorSec: float64(anchor.UnixNano()) / 1e9, build: llamaBuildOf(spec)}
	e.bounds = [nHist][]float64{
		hTTFT: ttftBounds, hTPOT: itlBounds, hE2E: requestLatencyBounds, hQueue: requestLatencyBounds,
		hInference: requestLatencyBounds, hPrefill: requestLatencyBounds, hDecode: requestLatencyBounds,
		hPromptTok: buckets125(spec.MaxModelLen), hGenTok: buckets125(spec.MaxModelLen),
		hIterTok: iterationBounds, hMaxGenTok: buckets125(spec.MaxModelLen), hParamsN: paramsNBounds,
		hParamsMaxTok: buckets125(spec.MaxModelLen), hReqTPOT: itlBounds, hHTTPHighr: highrBounds,
		hHTTPDur: httpDurBounds,
	}
	phases := spec.Phases
	if len(phases) == 0 || phases[0].At > 0 {
		phases = append([]Phase{{Idle: true, OutputLen: DefaultOutputLen, KVUsage: -1}}, phases...)
	}
	for _, p := range phases {
		e.phases = append(e.phases, e.resolve(p))
	}

	// Cut the timeline.
	cuts := map[time.Duration]bool{}
	for _, p := range phases {
		cuts[p.At] = true
	}
	restarts := map[time.Duration]bool{}
	for _, ev := range spec.Events {
		switch ev.Kind {
		case EventRestart:
			cuts[ev.At] = true
			restarts[ev.At] = true
			// A restart that loads for a while answers "loading" meanwhile.
			if ev.For > 0 {
				e.windows = append(e.windows, ev)
			}
		case EventLabelJoin:
			cuts[ev.At] = true
		default:
			e.windows = append(e.windows, ev)
		}
	}
	starts := make([]time.Duration, 0, len(cuts))
	for t := range cuts {
		starts = append(starts, t)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	pi, seg, segRestart := 0, 0, false
	for j, t := range starts {
		for pi+1 < len(phases) && phases[pi+1].At <= t {
			pi++
		}
		if restarts[t] {
			seg, segRestart = j, true
		}
		e.pieces = append(e.pieces, piece{start: t, phase: pi, restart: restarts[t], seg: seg, segRestart: segRestart})
	}
	e.prefix = make([]acc, len(e.pieces))
	var c acc
	for j := 1; j < len(e.pieces); j++ {
		prev := &e.pieces[j-1]
		e.contrib(&e.phases[prev.phase], e.pieces[j].start-prev.start, &c)
		e.prefix[j] = e.prefix[j-1]
		for i := range accAdd {
			e.prefix[j][i] += c[i]
		}
	}

	// Label sets.
	e.sets = []labelSet{{label: spec.EngineLabel}}
	for _, ev := range spec.Events {
		if ev.Kind != EventLabelJoin {
			continue
		}
		ls := labelSet{label: ev.Label, joinAt: ev.At, joinPiece: e.pieceAt(ev.At), carryDur: ev.Carry}
		// The carried history runs at the rates of the last phase with load
		// at or before the join, so that it is not empty after an idle spell.
		cp := e.pieces[ls.joinPiece].phase
		for p := cp; p >= 0; p-- {
			if e.phases[p].DecodeTPS > 0 || e.phases[p].PromptTPS > 0 {
				cp = p
				break
			}
		}
		e.contrib(&e.phases[cp], ev.Carry, &ls.carry)
		e.sets = append(e.sets, ls)
	}
	for n := 1; n <= len(e.sets); n++ {
		switch spec.Format {
		case FormatVLLM:
			e.tmpls = append(e.tmpls, e.buildVLLM(n))
		default:
			if e.build.page != nil {
				e.tmpls = append(e.tmpls, e.build.page(e))
				break
			}
			e.tmpls = append(e.tmpls, e.buildLlamaCpp())
		}
	}
	e.pool.New = func() any { return new(renderState) }
	return e
}

// resolve derives the per-request figures and bucket distributions of a
// phase.
func (e *Engine) resolve(p Phase) phaseRes {
	sp := e.spec.Speed
	p.DecodeTPS *= factor(sp.Decode)
	p.PromptTPS *= factor(sp.Prompt)
	p.QueueTime = time.Duration(float64(p.QueueTime) * factor(sp.Queue))
	r := phaseRes{Phase: p}
	L := float64(p.OutputLen)
	running := float64(p.Running)
	if p.DecodeTPS > 0 {
		r.reqRate = p.DecodeTPS / L
		r.promptLen = math.Round(p.PromptTPS / r.reqRate)
		r.tpot = max(running, 1) / p.DecodeTPS
		r.stepRate = p.DecodeTPS / max(running, 1)
	} else if p.PromptTPS > 0 {
		r.stepRate = p.PromptTPS / 2048
	}
	if r.promptLen > 0 {
		r.prefill = r.promptLen*(1-p.CachedFraction)/e.spec.PrefillSpeed + 0.002
	}
	switch {
	case p.QueueTime > 0:
		r.queue = p.QueueTime.Seconds()
	case r.reqRate > 0:
		r.queue = float64(p.Waiting+p.Deferred) / r.reqRate * factor(sp.Queue)
	}
	r.ttft = r.queue + r.prefill + 0.005
	if p.TTFT > 0 {
		r.ttft = p.TTFT.Seconds()
	}
	r.ttft *= factor(sp.TTFT)
	r.decodeT = (L - 1) * r.tpot
	r.e2e = r.ttft + r.decodeT
	ctx := r.promptLen + L/2
	if r.promptLen == 0 {
		ctx = L / 2
	}
	switch {
	case p.KVUsage >= 0:
		r.kv = p.KVUsage
	case e.spec.Format == FormatVLLM:
		r.kv = min(0.99, running*ctx/float64(e.spec.NumGPUBlocks*e.spec.BlockSize))
	default:
		r.kv = min(0.99, running*ctx/float64(e.spec.MaxModelLen))
	}
	if p.DecodeTPS > 0 || p.PromptTPS > 0 {
		r.ctxMax = min(float64(e.spec.MaxModelLen/e.spec.Slots), r.promptLen+L)
	}
	if p.AbortFraction < 1 {
		r.fl2 = p.LengthFraction / (1 - p.AbortFraction)
	}
	iterMean := 0.0
	if r.stepRate > 0 {
		iterMean = (p.PromptTPS + p.DecodeTPS) / r.stepRate
	}
	r.mean = [nHist]float64{
		hTTFT: r.ttft, hTPOT: r.tpot, hE2E: r.e2e, hQueue: r.queue, hInference: r.prefill + r.decodeT,
		hPrefill: r.prefill, hDecode: r.decodeT, hPromptTok: r.promptLen, hGenTok: L, hIterTok: iterMean,
		hMaxGenTok: L, hParamsN: 1, hParamsMaxTok: float64(e.spec.MaxTokens), hReqTPOT: r.tpot,
		hHTTPHighr: r.e2e + 0.002, hHTTPDur: r.e2e + 0.002, hHTTPReqSize: 4*r.promptLen + 300,
	}
	for h := range nHist {
		for k, x := range e.bounds[h] {
			switch h {
			case hParamsN, hParamsMaxTok:
				// Point masses.
				if x >= r.mean[h] {
					r.cdf[h][k] = 1
				}
			default:
				r.cdf[h][k] = lognormCDF(x, r.mean[h], histSigma[h])
			}
		}
	}
	return r
}

// lognormCDF is the share of log-normal observations with the given mean and
// log spread that are <= x. A zero mean puts every observation at 0.
func lognormCDF(x, mean, sigma float64) float64 {
	if mean <= 0 {
		return 1
	}
	mu := math.Log(mean) - sigma*sigma/2
	return 0.5 * math.Erfc(-(math.Log(x)-mu)/(sigma*math.Sqrt2))
}

// floorg is floor with a guard against products that miss an integer by a
// rounding error.
func floorg(x float64) float64 { return math.Floor(x*(1+1e-12) + 1e-9) }

// contrib computes what a piece under phase ph adds to the counters in dt.
// It is nondecreasing in dt for every value, which keeps counters and
// buckets monotonic.
func (e *Engine) contrib(ph *phaseRes, dt time.Duration, out *acc) {
	clear(out[:accAdd])
	if dt <= 0 {
		return
	}
	ns := float64(dt)
	g := floorg(ph.DecodeTPS * ns / 1e9)
	p := floorg(ph.PromptTPS * ns / 1e9)
	hits := min(p, floorg(ph.PromptTPS*ph.CachedFraction*ns/1e9))
	L := float64(ph.OutputLen)
	r := math.Floor(g / L)
	abort := floorg(r * ph.AbortFraction)
	length := floorg((r - abort) * ph.fl2)
	steps := floorg(ph.stepRate * ns / 1e9)
	out[cGen] = g
	out[cPrompt] = p
	out[cHits] = hits
	out[cReqs] = r
	out[cAbort] = abort
	out[cLength] = length
	out[cStop] = r - abort - length
	out[cSteps] = steps
	out[cPreempt] = floorg(ph.PreemptionsPerS * ns / 1e9)
	out[cITL] = g - r
	out[cPredicted] = r * L
	out[cPromptSec] = (p - hits) / e.spec.PrefillSpeed
	out[cGenSec] = r * L * ph.tpot
	out[cCPU] = 0.02*ns/1e9 + 0.0004*g + 0.00002*p
	if ph.promptLen > 0 {
		out[cPromptReq] = math.Round(floorg(p/ph.promptLen) * ph.promptLen * (1 - ph.CachedFraction))
	}
	if e.spec.Format != FormatVLLM {
		return
	}
	for h := range nHist {
		c := r
		switch h {
		case hTPOT:
			c = g - r
		case hIterTok:
			c = steps
		}
		if c == 0 {
			continue
		}
		out[hCount(h)] = c
		switch h {
		case hIterTok:
			out[hSum(h)] = p + g
		case hPromptTok:
			out[hSum(h)] = r * ph.promptLen
		case hGenTok, hMaxGenTok:
			out[hSum(h)] = r * L
		default:
			out[hSum(h)] = c * ph.mean[h]
		}
		base := hBucket(h, 0)
		for k := range e.bounds[h] {
			out[base+k] = math.Round(c * ph.cdf[h][k])
		}
	}
}

// pieceAt is the index of the piece in force at offset at.
func (e *Engine) pieceAt(at time.Duration) int {
	j := sort.Search(len(e.pieces), func(i int) bool { return e.pieces[i].start > at })
	return max(j-1, 0)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// eval fills st with every value at offset at.
func (e *Engine) eval(at time.Duration, st *renderState) {
	at = max(at, 0)
	j := e.pieceAt(at)
	pc := &e.pieces[j]
	ph := &e.phases[pc.phase]
	st.piece, st.ph = j, ph
	e.contrib(ph, at-pc.start, &st.part)
	st.n = 0
	for s := range e.sets {
		if e.sets[s].joinAt <= at {
			st.n = s + 1
		}
	}
	segStart := e.segStartSec(pc)
	clear(st.agg[:])
	for s := range st.n {
		ls := &e.sets[s]
		v := &st.sets[s].v
		origin := max(pc.seg, ls.joinPiece)
		cur, org := &e.prefix[j], &e.prefix[origin]
		for i := range accAdd {
			v[i] = cur[i] - org[i] + st.part[i]
		}
		created := segStart
		if s > 0 && (ls.joinPiece > pc.seg || ls.joinPiece == pc.seg && !pc.segRestart) {
			for i := range accAdd {
				v[i] += ls.carry[i]
			}
			created = e.anchorSec + (ls.joinAt - ls.carryDur).Seconds()
		}
		v[xRunning] = float64(ph.Running)
		v[xWaiting] = float64(ph.Waiting + ph.Deferred)
		v[xWaitCap] = float64(ph.Waiting)
		v[xWaitDef] = float64(ph.Deferred)
		v[xKV] = ph.kv
		v[xCreated] = created
		if s == 0 && e.live != nil {
			e.live.addTo(at, v)
		}
		v[xEvalPrompt] = v[cPrompt] - v[cHits]
		if e.build.promptAtDone {
			// The build counts a request's prompt when it is done.
			v[xEvalPrompt] = v[cPromptReq]
			v[cPromptSec] = v[cPromptReq] / e.spec.PrefillSpeed
		}
		for i := range accAdd {
			st.agg[i] += v[i]
		}
	}
	a := &st.agg
	a[xProcStart] = e.procStart(pc)
	a[xGC0] = 21873 + 37*a[cReqs] + math.Floor(a[cSteps]/16)
	a[xGC1] = 1917 + 3*a[cReqs] + math.Floor(a[cSteps]/256)
	a[xGC2] = 1112 + math.Floor(a[cReqs]/8)
	a[xGCC0] = 412 + math.Floor(a[xGC0]/30)
	a[xGCC1] = 37 + math.Floor(a[xGC1]/35)
	a[xGCC2] = 3 + math.Floor(a[xGC2]/220)
	a[xCPU] = round2(11.2 + a[cCPU])
	if e.spec.Format == FormatLlamaCpp {
		v := &st.sets[0].v
		tmax := 0.0
		for i := pc.seg; i <= j; i++ {
			if i < j || at > pc.start {
				tmax = max(tmax, e.phases[e.pieces[i].phase].ctxMax)
			}
		}
		v[xNTokMax] = tmax
		if e.live != nil {
			v[xNTokMax] = max(tmax, e.live.tokMax())
		}
		v[xPromptTPS] = ratio(v[xEvalPrompt], v[cPromptSec])
		v[xPredTPS] = ratio(v[cPredicted], v[cGenSec])
		v[xBusy] = ratio(v[cGen], v[cSteps])
		v[xKVTok] = math.Round(v[xKV] * float64(e.spec.MaxModelLen))
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// segStartSec is the _created base of the counter segment of piece pc.
func (e *Engine) segStartSec(pc *piece) float64 {
	if pc.segRestart {
		return e.anchorSec + e.pieces[pc.seg].start.Seconds()
	}
	return e.anchorSec - 1
}

// procStart is process_start_time_seconds for piece pc.
func (e *Engine) procStart(pc *piece) float64 {
	if pc.segRestart {
		return round2(e.anchorSec + e.pieces[pc.seg].start.Seconds())
	}
	return round2(e.anchorSec - 75)
}

// ProcessStart is process_start_time_seconds at offset at: the start of
// the process serving then.
func (e *Engine) ProcessStart(at time.Duration) float64 {
	return e.procStart(&e.pieces[e.pieceAt(max(at, 0))])
}

// Name is the engine's name.
func (e *Engine) Name() string { return e.spec.Name }

// Format is the exposition format the engine imitates.
func (e *Engine) Format() Format { return e.spec.Format }

// Spec returns a copy of the engine's normalized description.
func (e *Engine) Spec() EngineSpec {
	s := e.spec
	s.Phases = append([]Phase(nil), s.Phases...)
	s.Events = append([]Event(nil), s.Events...)
	return s
}

// ContentType is the Content-Type header of the engine's /metrics.
func (e *Engine) ContentType() string {
	if e.spec.Format == FormatVLLM {
		return "text/plain; version=0.0.4; charset=utf-8"
	}
	return "text/plain; version=0.0.4"
}

// Render returns the /metrics body at offset at from the scenario start.
// Equal offsets give equal bodies.
func (e *Engine) Render(at time.Duration) []byte {
	return e.AppendRender(nil, at)
}

// AppendRender appends the /metrics body at offset at to dst and returns the
// extended slice; with a large enough dst it does not allocate.
func (e *Engine) AppendRender(dst []byte, at time.Duration) []byte {
	st := e.pool.Get().(*renderState)
	e.eval(at, st)
	dst = e.tmpls[st.n-1].render(dst, st)
	e.pool.Put(st)
	return dst
}

// Counters are the true cumulative values of one label set, as served.
type Counters struct {
	// PromptTokens counts prompt tokens, prefix-cache hits included (vLLM
	// prompt_tokens_total and prefix_cache_queries_total).
	PromptTokens float64 `json:"prompt_tokens"`
	// CachedPromptTokens counts prefix-cache hits (vLLM prefix_cache_hits_total).
	CachedPromptTokens float64 `json:"cached_prompt_tokens"`
	// EvaluatedPromptTokens is PromptTokens minus CachedPromptTokens
	// (llama.cpp prompt_tokens_total).
	EvaluatedPromptTokens float64 `json:"evaluated_prompt_tokens"`
	// GenerationTokens counts generated tokens (vLLM generation_tokens_total).
	GenerationTokens float64 `json:"generation_tokens"`
	// CompletedGenerationTokens counts the generated tokens of finished
	// requests (llama.cpp tokens_predicted_total).
	CompletedGenerationTokens float64 `json:"completed_generation_tokens"`
	// Requests counts finished requests; RequestsStop, RequestsLength and
	// RequestsAbort split them by finished_reason.
	Requests       float64 `json:"requests"`
	RequestsStop   float64 `json:"requests_stop"`
	RequestsLength float64 `json:"requests_length"`
	RequestsAbort  float64 `json:"requests_abort"`
	// Preemptions counts vLLM preemptions.
	Preemptions float64 `json:"preemptions"`
	// Steps counts engine steps (vLLM iteration_tokens_total_count, llama.cpp
	// n_decode_total).
	Steps float64 `json:"steps"`
	// PromptSeconds and PredictedSeconds are llama.cpp's per-request
	// seconds (prompt_seconds_total, tokens_predicted_seconds_total), before
	// the six-digit rounding of the output.
	PromptSeconds    float64 `json:"prompt_seconds"`
	PredictedSeconds float64 `json:"predicted_seconds"`
}

// Rates are the true instantaneous rates and gauges of one label set.
type Rates struct {
	// PromptTokens is prompt tokens per second, cached included.
	PromptTokens float64 `json:"prompt_tokens"`
	// CachedPromptTokens is prefix-cache hit tokens per second.
	CachedPromptTokens float64 `json:"cached_prompt_tokens"`
	// GenerationTokens is generated tokens per second.
	GenerationTokens float64 `json:"generation_tokens"`
	// Requests is finished requests per second.
	Requests float64 `json:"requests"`
	// Preemptions is preemptions per second.
	Preemptions float64 `json:"preemptions"`
	// Running, Waiting and Deferred are the request gauges.
	Running  int `json:"running"`
	Waiting  int `json:"waiting"`
	Deferred int `json:"deferred"`
	// KVUsage is the KV-cache usage fraction.
	KVUsage float64 `json:"kv_usage"`
}

// SetTruth is the truth of one exported label set.
type SetTruth struct {
	// Label is the vLLM engine label value ("" for llama.cpp).
	Label string `json:"label,omitempty"`
	// Created is the Unix time in seconds the set's counters count from
	// (the base of its _created values).
	Created float64 `json:"created"`
	// Counters are the cumulative values.
	Counters Counters `json:"counters"`
}

// Truth is what an engine serves at an offset.
type Truth struct {
	// Engine is the engine name.
	Engine string `json:"engine"`
	// At is the offset from the scenario start.
	At time.Duration `json:"at_ns"`
	// Phase is the index of the phase in force in the engine's Phases, -1
	// before the first.
	Phase int `json:"phase"`
	// ProcessStart is process_start_time_seconds.
	ProcessStart float64 `json:"process_start"`
	// Rates are the instantaneous rates of each label set.
	Rates Rates `json:"rates"`
	// Sets are the exported label sets in output order.
	Sets []SetTruth `json:"sets"`
}

// Truth returns the true values behind Render(at).
func (e *Engine) Truth(at time.Duration) Truth {
	st := e.pool.Get().(*renderState)
	defer e.pool.Put(st)
	e.eval(at, st)
	ph := st.ph
	t := Truth{
		Engine: e.spec.Name, At: max(at, 0), ProcessStart: st.agg[xProcStart],
		Phase: e.pieces[st.piece].phase - (len(e.phases) - len(e.spec.Phases)),
		Rates: Rates{
			PromptTokens: ph.PromptTPS, CachedPromptTokens: ph.PromptTPS * ph.CachedFraction,
			GenerationTokens: ph.DecodeTPS, Requests: ph.reqRate, Preemptions: ph.PreemptionsPerS,
			Running: int(st.sets[0].v[xRunning]), Waiting: int(st.sets[0].v[xWaitCap]), Deferred: ph.Deferred,
			KVUsage: st.sets[0].v[xKV],
		},
	}
	for s := range st.n {
		v := &st.sets[s].v
		label := e.sets[s].label
		if e.spec.Format != FormatVLLM {
			label = ""
		}
		t.Sets = append(t.Sets, SetTruth{Label: label, Created: v[xCreated], Counters: Counters{
			PromptTokens: v[cPrompt], CachedPromptTokens: v[cHits], EvaluatedPromptTokens: v[xEvalPrompt],
			GenerationTokens: v[cGen], CompletedGenerationTokens: v[cPredicted], Requests: v[cReqs],
			RequestsStop: v[cStop], RequestsLength: v[cLength], RequestsAbort: v[cAbort],
			Preemptions: v[cPreempt], Steps: v[cSteps], PromptSeconds: v[cPromptSec], PredictedSeconds: v[cGenSec],
		}})
	}
	return t
}

// Behaviour is how the HTTP server answers at an offset.
type Behaviour struct {
	// Kind is hang, status, slow or stale; empty for a normal answer.
	Kind EventKind
	// Until is the end of the event window.
	Until time.Duration
	// Delay is the delay of slow and stale.
	Delay time.Duration
	// Code is the status of a status event.
	Code int
	// Loading marks the status answer of an engine loading its model
	// after a restart (a restart event with For): 503 and the engine's
	// own "Loading model" body.
	Loading bool
}

// loadingBody is llama-server's answer while it loads its model.
const loadingBody = `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`

// StatusAnswer returns the content type and body of a status behaviour's
// answer: the engine's loading body while it loads, else the status text.
func StatusAnswer(b Behaviour) (contentType string, body []byte) {
	if b.Loading {
		return "application/json; charset=utf-8", []byte(loadingBody)
	}
	return "text/plain; charset=utf-8", []byte(http.StatusText(b.Code) + "\n")
}

// BehaviourAt returns the HTTP behaviour in force at offset at. When windows
// overlap, hang wins over status, status over stale and stale over slow.
func (e *Engine) BehaviourAt(at time.Duration) Behaviour {
	var best Behaviour
	for _, ev := range e.windows {
		if at < ev.At || at >= ev.At+ev.For {
			continue
		}
		b := Behaviour{Kind: ev.Kind, Until: ev.At + ev.For, Delay: ev.Delay, Code: ev.Code}
		if ev.Kind == EventRestart {
			b.Kind, b.Code, b.Loading = EventStatus, http.StatusServiceUnavailable, true
		}
		if rank(b.Kind) > rank(best.Kind) {
			best = b
		}
	}
	return best
}

func rank(k EventKind) int {
	switch k {
	case EventHang:
		return 4
	case EventStatus:
		return 3
	case EventStale:
		return 2
	case EventSlow:
		return 1
	}
	return 0
}
