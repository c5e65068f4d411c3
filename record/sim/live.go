package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// ServeSpec is how an engine serves real requests on its OpenAI-compatible
// endpoints (see [Serve]). Every served request is admitted into the
// simulated engine's batch like the scenario's synthetic load: it moves
// the running and waiting gauges, the KV usage, the token, step and
// request counters and every histogram, so that /metrics follows the
// requests really served.
type ServeSpec struct {
	// Batch is the most requests in the batch at once (vLLM max_num_seqs,
	// llama.cpp slots); more wait in the engine's queue, counted by its
	// waiting gauge. Zero means Slots for llama.cpp, 256 for vLLM.
	Batch int
	// Step is the time of one engine step with one request in the batch;
	// StepPerRequest is added per further request. Each step gives every
	// request in the batch one token. Zero means 15 ms and 1 ms. A step
	// that admits requests also takes their prompt tokens ÷ PrefillSpeed.
	Step, StepPerRequest time.Duration
	// FrontThreads, when positive, is how many completion requests the
	// HTTP server handles at once (llama.cpp's HTTP threads): more wait
	// before the engine sees them, invisible to its waiting gauge and to
	// every server-side latency. /metrics and the info endpoints are not
	// held by it.
	FrontThreads int
}

// Defaults of [ServeSpec].
const (
	DefaultStep           = 15 * time.Millisecond
	DefaultStepPerRequest = time.Millisecond
	DefaultVLLMBatch      = 256
)

// fileServe mirrors [engine.serve] in TOML.
type fileServe struct {
	Batch          int          `toml:"batch"`
	Step           tomlDuration `toml:"step"`
	StepPerRequest tomlDuration `toml:"step_per_request"`
	FrontThreads   int          `toml:"front_threads"`
}

func (f *fileServe) spec() ServeSpec {
	return ServeSpec{Batch: f.Batch, Step: time.Duration(f.Step), StepPerRequest: time.Duration(f.StepPerRequest),
		FrontThreads: f.FrontThreads}
}

// normalizeServe fills in the serving defaults and checks them.
func (es *EngineSpec) normalizeServe() error {
	sv := &es.Serve
	switch {
	case sv.Batch < 0:
		return fmt.Errorf("serve.batch: %d is negative", sv.Batch)
	case sv.Step < 0:
		return errors.New("serve.step: negative")
	case sv.StepPerRequest < 0:
		return errors.New("serve.step_per_request: negative")
	case sv.FrontThreads < 0:
		return fmt.Errorf("serve.front_threads: %d is negative", sv.FrontThreads)
	}
	if sv.Batch == 0 {
		sv.Batch = DefaultVLLMBatch
		if es.Format == FormatLlamaCpp {
			sv.Batch = es.Slots
		}
	}
	if es.Format == FormatLlamaCpp && sv.Batch > es.Slots {
		return fmt.Errorf("serve.batch: %d exceeds slots = %d", sv.Batch, es.Slots)
	}
	if sv.Step == 0 {
		sv.Step = DefaultStep
	}
	if sv.StepPerRequest == 0 {
		sv.StepPerRequest = DefaultStepPerRequest
	}
	return nil
}

// liveToken is one generated token handed to the request's handler.
type liveToken struct {
	at     time.Time
	reason string // on the last token: "length" or "abort"
}

// liveReq is one real request inside the simulated engine.
type liveReq struct {
	ctx      context.Context
	prompt   int
	maxTok   int
	arrived  time.Time // entered the engine's queue
	admitted time.Time // entered the batch
	first    time.Time // first token
	last     time.Time // latest token
	gen      int
	out      chan liveToken // buffered for every token: the engine never blocks
}

// liveLoad is the load of real requests on one engine: its queue, its
// batch and what they added to the counters and histograms since the
// counter segment began.
type liveLoad struct {
	e     *Engine
	wake  chan struct{}
	front chan struct{} // serve.front_threads; nil without

	mu      sync.Mutex
	seg     int // the piece where the counted segment began
	acc     acc // the additive part only
	waiting []*liveReq
	running []*liveReq
	nTokMax float64
	// The gauges as the engine publishes them: set when a step has
	// scheduled its batch (vLLM's scheduler stats), zero once it is idle.
	// A request that arrives during a step and gets a place at the next
	// one is never seen waiting.
	gRunning, gWaiting int
	gKV                float64
}

func newLiveLoad(e *Engine) *liveLoad {
	return &liveLoad{e: e, wake: make(chan struct{}, 1), front: frontQueue(e.spec.Serve.FrontThreads)}
}

// sync starts a new count at a restart: a restart resets the real
// requests' counters with the synthetic ones. Requests in flight go on.
func (l *liveLoad) sync(at time.Duration) {
	seg := l.e.pieces[l.e.pieceAt(max(at, 0))].seg
	if seg != l.seg {
		l.seg = seg
		clear(l.acc[:accAdd])
		l.nTokMax = 0
	}
}

// addTo adds the real load at offset at to one label set's values v.
func (l *liveLoad) addTo(at time.Duration, v *acc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sync(at)
	for i := range accAdd {
		v[i] += l.acc[i]
	}
	v[xRunning] += float64(l.gRunning)
	v[xWaiting] += float64(l.gWaiting)
	v[xWaitCap] += float64(l.gWaiting)
	v[xKV] = min(1, v[xKV]+l.gKV)
}

func (l *liveLoad) tokMax() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nTokMax
}

// kv is the share of the KV cache the running requests hold.
func (l *liveLoad) kv() float64 {
	sp := &l.e.spec
	used := 0.0
	for _, r := range l.running {
		n := float64(r.prompt + r.gen)
		if sp.Format == FormatVLLM {
			used += math.Ceil(n / float64(sp.BlockSize))
		} else {
			used += n
		}
	}
	if sp.Format == FormatVLLM {
		return used / float64(sp.NumGPUBlocks)
	}
	return used / float64(sp.MaxModelLen)
}

// observe adds one observation of x to histogram h.
func (l *liveLoad) observe(h int, x float64) {
	l.acc[hCount(h)]++
	l.acc[hSum(h)] += x
	for k, b := range l.e.bounds[h] {
		if x <= b {
			l.acc[hBucket(h, k)]++
		}
	}
}

// submit puts a request into the engine's queue.
func (l *liveLoad) submit(ctx context.Context, prompt, maxTok int) *liveReq {
	r := &liveReq{ctx: ctx, prompt: prompt, maxTok: maxTok, arrived: time.Now(), out: make(chan liveToken, maxTok+1)}
	l.mu.Lock()
	l.waiting = append(l.waiting, r)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return r
}

// observeHTTP counts a completion request's HTTP duration and sizes, as
// vLLM's HTTP instrumentation does.
func (l *liveLoad) observeHTTP(d time.Duration, reqBytes, respBytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observe(hHTTPHighr, d.Seconds())
	l.observe(hHTTPDur, d.Seconds())
	l.observe(hHTTPReqSize, float64(reqBytes))
	l.observe(hHTTPRespSize, float64(respBytes))
}

// run is the engine loop: step after step, it admits waiting requests
// into free places of the batch, gives every request in the batch one
// token and finishes those that reached their max_tokens, until stop.
func (l *liveLoad) run(start time.Time, stop <-chan struct{}) {
	sp := &l.e.spec
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		l.mu.Lock()
		for len(l.running) == 0 && len(l.waiting) == 0 {
			l.mu.Unlock()
			select {
			case <-l.wake:
			case <-stop:
				return
			}
			l.mu.Lock()
		}
		now := time.Now()
		l.sync(now.Sub(start))
		l.dropGone(now)
		newPrompt := 0
		for len(l.running) < sp.Serve.Batch && len(l.waiting) > 0 {
			r := l.waiting[0]
			l.waiting = l.waiting[1:]
			r.admitted = now
			l.observe(hQueue, now.Sub(r.arrived).Seconds())
			newPrompt += r.prompt
			l.running = append(l.running, r)
		}
		n := len(l.running)
		l.gRunning, l.gWaiting, l.gKV = n, len(l.waiting), l.kv()
		d := sp.Serve.Step + time.Duration(n-1)*sp.Serve.StepPerRequest +
			time.Duration(float64(newPrompt)/sp.PrefillSpeed*float64(time.Second))
		l.mu.Unlock()
		if n == 0 {
			continue
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-stop:
			timer.Stop()
			l.closeAll()
			return
		}
		l.step(time.Now(), start, newPrompt)
	}
}

// step ends one engine step at now: a token for every request in the
// batch, the counters of the step and the requests it finished.
func (l *liveLoad) step(now, start time.Time, newPrompt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sync(now.Sub(start))
	n := float64(len(l.running))
	a := &l.acc
	a[cGen] += n
	a[cITL] += n
	a[cPrompt] += float64(newPrompt)
	a[cPromptReq] += float64(newPrompt) // a live request's prompt is done at the end of its first step
	a[cSteps]++
	a[cCPU] += 0.0004*n + 0.00002*float64(newPrompt)
	l.observe(hIterTok, float64(newPrompt)+n)
	keep := l.running[:0]
	for _, r := range l.running {
		r.gen++
		if r.gen == 1 {
			r.first = now
			a[cITL]--
			l.observe(hTTFT, now.Sub(r.arrived).Seconds())
			l.observe(hPrefill, now.Sub(r.admitted).Seconds())
		} else {
			l.observe(hTPOT, now.Sub(r.last).Seconds())
		}
		r.last = now
		l.nTokMax = max(l.nTokMax, float64(r.prompt+r.gen))
		if r.gen < r.maxTok {
			r.out <- liveToken{at: now}
			keep = append(keep, r)
			continue
		}
		r.out <- liveToken{at: now, reason: "length"}
		close(r.out)
		a[cLength]++
		l.finish(r, now)
	}
	clear(l.running[len(keep):])
	l.running = keep
	if len(l.running) == 0 && len(l.waiting) == 0 {
		l.gRunning, l.gWaiting, l.gKV = 0, 0, 0
	}
}

// finish counts a request that left the engine at now.
func (l *liveLoad) finish(r *liveReq, now time.Time) {
	sp := &l.e.spec
	a := &l.acc
	a[cReqs]++
	a[cPredicted] += float64(r.gen)
	a[cPromptSec] += float64(r.prompt) / sp.PrefillSpeed
	if r.gen > 0 {
		a[cGenSec] += r.last.Sub(r.first).Seconds()
	}
	l.observe(hE2E, now.Sub(r.arrived).Seconds())
	l.observe(hPromptTok, float64(r.prompt))
	l.observe(hGenTok, float64(r.gen))
	l.observe(hMaxGenTok, float64(r.maxTok))
	l.observe(hParamsN, 1)
	l.observe(hParamsMaxTok, float64(r.maxTok))
	if !r.admitted.IsZero() {
		l.observe(hInference, now.Sub(r.admitted).Seconds())
	}
	if r.gen > 0 {
		l.observe(hDecode, r.last.Sub(r.first).Seconds())
	}
	if r.gen > 1 {
		l.observe(hReqTPOT, r.last.Sub(r.first).Seconds()/float64(r.gen-1))
	}
}

// dropGone finishes with reason abort the requests whose client left.
func (l *liveLoad) dropGone(now time.Time) {
	drop := func(rs []*liveReq) []*liveReq {
		keep := rs[:0]
		for _, r := range rs {
			if r.ctx.Err() == nil {
				keep = append(keep, r)
				continue
			}
			r.out <- liveToken{at: now, reason: "abort"}
			close(r.out)
			l.acc[cAbort]++
			l.finish(r, now)
		}
		clear(rs[len(keep):])
		return keep
	}
	l.waiting = drop(l.waiting)
	l.running = drop(l.running)
}

// closeAll ends every request at shutdown: their handlers see the channel
// close without a reason.
func (l *liveLoad) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, rs := range [][]*liveReq{l.waiting, l.running} {
		for _, r := range rs {
			close(r.out)
		}
	}
	l.waiting, l.running = nil, nil
}
