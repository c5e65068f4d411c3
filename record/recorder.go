// Package record scrapes every target on a fixed cadence and writes each
// capture through package capture: the body byte-exact, its send, first-byte
// and end times, and its parsed samples.
//
// Scheduling rules:
//   - each target has its own cadence from one monotonic start: tick k
//     fires at start + k*interval;
//   - a slow or hung target never delays another (one goroutine per target,
//     one per scrape);
//   - a tick that finds the same endpoint's previous scrape still running is
//     a missed tick, written as a row, never fired late; so is a tick that
//     finds maxParsesBehind of the endpoint's pages still waiting for their
//     parse (journaled: a page's parse does not hold its endpoint's next
//     tick);
//   - ticks the recorder itself slept through (a stalled host) are missed
//     ticks too: after a stall only the current tick fires, no catch-up burst;
//   - the targets' ticks are spread over the interval: target i of n ticks
//     at start + i*interval/n + k*interval (its phase, in the manifest), so
//     many targets do not all fire at one instant;
//   - a tick loop never waits for the writer: its missed-tick rows are
//     handed over without blocking;
//   - with discovery (file_sd, resolve_dns; see discovery.go) a target that
//     joins while recording is scraped from the next tick of its own
//     schedule (its phase from its name), one that leaves fires no tick
//     after and its scrape in flight is written as any other.
//
// Shutdown rules: when the run stops (ctx done or Options.Duration passed)
// no tick fires any more; scrapes in flight get StopGrace to finish, then
// are cancelled, each written as a row saying it was cancelled by shutdown,
// and the open segment is sealed. Closing Options.Abort stops at once: the
// scrapes are cancelled, the rows already finished are journaled and the
// journal synced, nothing is sealed (the next reader recovers it), and Run
// returns ErrAborted.
package record

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/redact"
)

// Options of one recording session.
type Options struct {
	Dir      string
	Duration time.Duration // 0: until ctx is cancelled
	// Progress receives progress lines; nil for none. Live, when true,
	// redraws one line per target in place (a terminal).
	Progress io.Writer
	Live     bool
	// ProgressEvery is the period of progress output (default 1 s live,
	// 10 s otherwise).
	ProgressEvery time.Duration
	// Abort, when closed, stops the run at once (see the package comment);
	// nil for never. It is meant for a second Ctrl-C.
	Abort <-chan struct{}

	// For tests: the rows channel's capacity (0: 256) and a hook the
	// writer goroutine calls before each append (a slow disk).
	rowsBuffer   int
	beforeAppend func()

	// Warnings receives warnings the recording goes on after (a journal
	// removed by hand); nil for none.
	Warnings io.Writer
	// Resolver looks up the names of targets with resolve_dns; nil for
	// net.DefaultResolver.
	Resolver Resolver
}

// StopGrace is how long scrapes in flight when the run stops may go on
// before they are cancelled. With the seal it makes the shutdown bound.
const StopGrace = 500 * time.Millisecond

// ErrAborted is returned by Run when Options.Abort was closed.
var ErrAborted = errors.New("stopped at once: the open segment was not sealed; its journal is synced and is recovered by the next record or read of the folder")

// errShutdown is the cause of scrapes cancelled because the run stopped.
var errShutdown = errors.New("cancelled by shutdown")

// abortWait bounds how long an aborted Run waits for the writer to journal
// the finished rows and sync: a writer inside a long seal is not waited
// for (rows already journaled survive the process exiting).
const abortWait = time.Second

// abortDrain is how long an aborted Run waits for the rows of the scrapes
// it cancelled.
const abortDrain = 200 * time.Millisecond

// Summary is what a finished recording reports.
type Summary struct {
	RunID    string
	Dir      string
	Segments []string
	Bytes    int64
	Targets  []TargetStats
	Elapsed  time.Duration
}

// TargetStats counts one target's scrape attempts (all endpoints).
type TargetStats struct {
	Name   string
	OK     int64
	Failed int64
	// Unparsed counts pages the target answered that were stored unparsed
	// (over a parse limit, or malformed): answered, not failed.
	Unparsed    int64
	Missed      int64
	LastLatency time.Duration
	LastError   string
	Up          bool
	BodyBytes   int64
	// Answered is true once the target's /metrics answered 200 (parsed or
	// not): a target never answered points at a wrong URL.
	Answered bool
	URL      string // redacted
	// Left is true for a discovered target no longer in the target set.
	Left bool
	// LastUnparsed is true when the target's last answer was stored
	// unparsed.
	LastUnparsed bool
	warned       bool // the first failure was said
}

// NewRunID returns a sortable, unique run id: UTC time and 4 random bytes.
func NewRunID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Run records until ctx is done or opt.Duration has passed, then closes the
// open segment and the manifest. A write error (disk full) stops the run
// and is returned; segments closed before it stay intact.
func Run(ctx context.Context, cfg *Config, opt Options) (*Summary, error) {
	if len(cfg.Targets) == 0 {
		return nil, errors.New("no targets: give --target NAME=URL or a config file with [[target]] tables")
	}
	// --duration and the first SIGINT hold from here: every step of the
	// start (names resolved, files read) ends with ctx.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opt.Duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, opt.Duration)
		defer c2()
	}
	// With discovery the targets of the start are those found now (names
	// resolved), and the set is followed while recording.
	targets := cfg.Targets
	var disc *discovery
	if cfg.discovers() {
		disc = newDiscovery(cfg, opt.Resolver, opt.Warnings)
		targets = disc.targets(ctx)
		if disc.refused != "" {
			return nil, fmt.Errorf("the targets found at start: %s", disc.refused)
		}
	}
	hc, err := clients(targets)
	if err != nil {
		return nil, err
	}
	runID := NewRunID(time.Now())
	w, err := capture.NewWriter(opt.Dir, runID, cfg.Rotate.D())
	if err != nil {
		return nil, err
	}
	w.SetCompactEvery(cfg.CompactEvery)
	w.SetLimits(cfg.Limits())
	host, _ := os.Hostname()
	m := capture.Manifest{
		SchemaVersion: capture.SchemaVersion, RunID: runID,
		Host: host, Version: capture.Version, Config: cfg.Redacted(),
		Warnings: insecureWarnings(targets),
	}
	for _, wn := range m.Warnings {
		if opt.Warnings != nil {
			fmt.Fprintf(opt.Warnings, "warning: %s\n", wn)
		}
	}
	phases := Phases(targets)
	m.Targets = []capture.ManifestTarget{}
	// Scrapes run on their own context: the end of the run cancels them
	// only after StopGrace (or at once on Abort), with a cause.
	scrapeCtx, stopScrapes := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopScrapes(nil)
	rec := &recorder{runID: runID, maxBody: cfg.MaxBody, limits: cfg.Limits(), scrapeCtx: scrapeCtx,
		abort: opt.Abort, rows: make(chan queued, cmp.Or(opt.rowsBuffer, 256)),
		bodies: newBodyReader(), parses: newParseGate(), slots: newParseSlots(), warn: opt.Warnings,
		shapes: &expo.Shapes{}}
	// Rows read back from the journal at a seal are read against the same
	// shapes as the pages parsed here.
	w.SetShapes(rec.shapes)
	stop := func(cause error) {
		rec.stoppedNs.CompareAndSwap(0, rec.clock.Ns(time.Now()))
		stopScrapes(cause)
	}
	runDone := make(chan struct{})
	defer close(runDone)
	go func() {
		select {
		case <-opt.Abort:
			cancel()
			stop(ErrAborted)
		case <-runDone:
		}
	}()

	// The writer goroutine owns w. It only journals: sealing and compaction
	// run in the background (see capture.Writer), so a row waits in rec.rows
	// for no longer than the journal writes ahead of it.
	writeErr := make(chan error, 1)
	go func() {
		var err error
		var seals int64
		for {
			var row queued
			var ok bool
			select {
			case row, ok = <-rec.rows:
			case <-opt.Abort:
				writeErr <- abandon(w, rec.rows, err)
				return
			}
			if !ok {
				break
			}
			if err != nil {
				continue // drain; the run is stopping
			}
			if opt.beforeAppend != nil {
				opt.beforeAppend()
			}
			err = w.AppendPending(row.s, row.p)
			if errors.Is(err, capture.ErrJournalReplaced) {
				if opt.Warnings != nil {
					fmt.Fprintf(opt.Warnings, "warning: %v\n", err)
				}
				err = nil
			}
			if err != nil {
				rec.written.Store(w.BytesWritten())
				cancel()
				continue
			}
			// The closed files change only when a segment was sealed.
			if n := w.Seals(); n != seals {
				seals = n
				rec.written.Store(w.BytesWritten())
			}
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		writeErr <- err
	}()

	// The first seconds' heap grows from nothing: collected at a floor,
	// not at each doubling from 4 MB.
	shortest := time.Duration(0)
	for _, t := range targets {
		if d := t.Interval.D(); shortest == 0 || d < shortest {
			shortest = d
		}
	}
	defer holdStartHeap(len(targets), shortest)()

	rec.scraped, rec.scrapedOnce = make(chan int, len(targets)), make([]sync.Once, len(targets))

	var manifestMu sync.Mutex
	// Tick 0 is now: the clock starts as the loops do, and the manifest is
	// written beside the first ticks.
	clock := NewClock()
	rec.clock = clock
	var wg sync.WaitGroup
	ms := newMembers(ctx, rec, &wg, hc.shared, disc != nil, opt.Warnings)
	manifestMu.Lock()
	for i, t := range targets {
		ms.join(&m, t, hc.of[i], phases[i], clock.Start())
	}
	manifestMu.Unlock()
	var progressDone chan struct{}
	if opt.Progress != nil {
		progressDone = make(chan struct{})
		go rec.progress(ctx, opt, progressDone)
	}
	manifestMu.Lock()
	m.Start, m.StartNs = clock.Start().UTC().Format(time.RFC3339Nano), clock.Ns(clock.Start())
	startErr := capture.WriteManifest(opt.Dir, m)
	manifestMu.Unlock()
	if startErr != nil {
		cancel()
	}
	if disc != nil {
		wg.Go(func() { ms.follow(ctx, disc, cfg.Interval.D(), opt.Dir, &m, &manifestMu) })
	}
	// What the engines say about themselves is fetched after each one's
	// first scrape, not before the first ticks, so a hung engine cannot
	// delay the cadence.
	infoDone := make(chan struct{})
	go func() {
		defer close(infoDone)
		engines := engineInfo(ctx, hc.of, targets, rec.scraped)
		manifestMu.Lock()
		defer manifestMu.Unlock()
		m.Engines = mergeInfo(engines, m.Engines)
		_ = capture.WriteManifest(opt.Dir, m) // written again at the end, where an error counts
	}()

	wg.Wait()
	// No tick fires any more: the pages waiting for their parse take every
	// processor.
	rec.slots.widen()
	grace := time.AfterFunc(StopGrace, func() { stop(errShutdown) })
	inflightDone := make(chan struct{})
	go func() {
		rec.inflight.Wait()
		close(inflightDone)
	}()
	select {
	case <-inflightDone:
		grace.Stop()
		close(rec.rows)
	case <-opt.Abort:
		// A scrape may still be parsing a large page: not waited for. The
		// rows channel stays open for the rows finishing meanwhile.
	}
	err = cmp.Or(waitWriter(writeErr, opt.Abort), startErr)
	if errors.Is(err, ErrAborted) {
		// Sealing was skipped; the manifest keeps no end, as after a crash.
		return &Summary{RunID: runID, Dir: opt.Dir, Elapsed: time.Since(clock.Start())}, err
	}
	if progressDone != nil {
		<-progressDone
	}

	<-infoDone
	ms.infos.Wait()
	manifestMu.Lock()
	defer manifestMu.Unlock()
	end := time.Now()
	es, ens := end.UTC().Format(time.RFC3339Nano), clock.Ns(end)
	m.End, m.EndNs = &es, &ens
	if merr := capture.WriteManifest(opt.Dir, m); err == nil {
		err = merr
	}
	s := &Summary{RunID: runID, Dir: opt.Dir, Segments: w.Segments(), Bytes: w.BytesWritten(),
		Elapsed: end.Sub(clock.Start())}
	rec.mu.Lock()
	s.Targets = append(s.Targets, rec.stats...)
	rec.mu.Unlock()
	if err != nil {
		return s, fmt.Errorf("recording stopped: %w", err)
	}
	return s, nil
}

type recorder struct {
	warn    io.Writer // Options.Warnings; nil for none
	clock   Clock
	clients []*http.Client // of each target
	runID   string
	maxBody int64
	limits  capture.Limits
	// scrapeCtx is cancelled when the run has stopped and StopGrace has
	// passed, or on Abort; stoppedNs is when (0 until then).
	scrapeCtx context.Context
	stoppedNs atomic.Int64
	abort     <-chan struct{}
	rows      chan queued
	bodies    *bodyReader
	parses    parseGate
	slots     parseSlots
	// shapes are the page shapes the endpoints' Interners share: a
	// target's first page of a shape another's first page had is read by
	// its values (see expo.Shapes).
	shapes   *expo.Shapes
	inflight sync.WaitGroup
	written  atomic.Int64
	// lastSize is the size of the last body any endpoint read: the size
	// hint of an endpoint's first body (see bodyReader.read), which grew
	// its buffer from 512 bytes, 175 KB allocated for a 47 KB page, 175 MB
	// in the first second at 1,000 targets, where the pages of a fleet are
	// mostly alike.
	lastSize atomic.Int64
	// scraped receives ti when the first scrape of target ti (of those
	// at the start) has finished, once: its engine information is asked
	// then (engineInfo). It holds one place a target.
	scraped     chan int
	scrapedOnce []sync.Once

	mu    sync.Mutex
	stats []TargetStats
}

// endpointState is the per-endpoint scheduling state.
type endpointState struct {
	name    string
	url     string
	busy    atomic.Bool
	running atomic.Int64 // seq of the scrape in flight
	// parsing counts this endpoint's pages fetched and journaled whose
	// parse has not finished (see maxParsesBehind).
	parsing atomic.Int64
	// interner is the parser's memory of this endpoint's pages, used by
	// one parse at a time (parseMu).
	parseMu  sync.Mutex
	interner expo.Interner
	// lastSize is the size of the endpoint's last body (see bodyReader.read).
	lastSize atomic.Int64
	// scraped, when not nil, is called when a scrape of the endpoint has
	// finished (recorder.scraped).
	scraped func()
}

// maxParsesBehind is how many of an endpoint's pages may wait for their
// parse (journaled, not parsed) before its ticks are missed: the tick loop
// fires on time while the parses catch up (a recorder's first pages, each
// parsed in full, take a few seconds to go through the parse slots with a
// thousand targets), and the pages waiting are bounded (their bodies are
// in memory).
const maxParsesBehind = 4

func (r *recorder) loop(ctx context.Context, ti int, t *Target, phase time.Duration, k0 int64) {
	eps := []*endpointState{r.endpoint(capture.EndpointMetrics, t.URL)}
	if ti < len(r.scrapedOnce) {
		// Once per target: a target that left and joined again has
		// been scraped before.
		eps[0].scraped = func() { r.scrapedOnce[ti].Do(func() { r.scraped <- ti }) }
	}
	for _, e := range t.Endpoints {
		// The endpoint is named as its path is written down: redacted as a
		// URL (/slots?token=<redacted>).
		u, name := joinPath(t.URL, e.Path), redact.URL(e.Path)
		if e.Once {
			r.fire(ti, t, r.endpoint(name, u), k0, time.Now())
			continue
		}
		eps = append(eps, r.endpoint(name, u))
	}
	interval := t.Interval.D()
	start := r.clock.Start().Add(phase)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for k := k0; ; {
		at := start.Add(time.Duration(k) * interval)
		timer.Reset(time.Until(at))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		// Ticks slept through by the recorder itself (a stalled host, a
		// SIGSTOP) are missed, not fired late: after a stall the next tick
		// fires on time, with no catch-up.
		now := time.Now()
		if now.Sub(at) > lateTolerance(interval) {
			for ; !start.Add(time.Duration(k) * interval).After(now); k++ {
				due := start.Add(time.Duration(k) * interval)
				for _, ep := range eps {
					r.missed(ti, t, ep, k, due, fmt.Sprintf("recorder stalled: tick due %s ago was not fired", now.Sub(due).Round(time.Millisecond)))
				}
			}
			continue
		}
		for _, ep := range eps {
			if ep.busy.Load() {
				r.missed(ti, t, ep, k, at, fmt.Sprintf("previous scrape (seq %d) still running", ep.running.Load()))
				continue
			}
			if n := ep.parsing.Load(); n >= maxParsesBehind {
				r.missed(ti, t, ep, k, at, fmt.Sprintf("the parses of the %d pages before (seq %d the last) not finished", n, ep.running.Load()))
				continue
			}
			r.fire(ti, t, ep, k, at)
		}
		k++
	}
}

// endpoint is the scheduling state of a target's endpoint, its Interner
// reading against the recording's shapes.
func (r *recorder) endpoint(name, url string) *endpointState {
	ep := &endpointState{name: name, url: url}
	ep.interner.Shapes = r.shapes
	return ep
}

// lateTolerance is how late a tick may fire and still count as on time:
// half the interval, at most 100 ms. Timers on a loaded host wake tens of
// milliseconds late; a tick later than this would land close to the next
// one, a catch-up, so it is missed instead.
func lateTolerance(interval time.Duration) time.Duration {
	return min(interval/2, 100*time.Millisecond)
}

func (r *recorder) fire(ti int, t *Target, ep *endpointState, k int64, at time.Time) {
	ep.busy.Store(true)
	ep.running.Store(k)
	r.inflight.Add(1)
	go func() {
		defer r.inflight.Done()
		q := request{target: t, endpoint: ep.name, url: ep.url, seq: k, scheduled: at, maxBody: r.maxBody,
			limits: r.limits, runID: r.runID, interner: &ep.interner, bodies: r.bodies, parses: r.parses,
			sizeHint: cmp.Or(ep.lastSize.Load(), r.lastSize.Load())}
		row := fetch(r.scrapeCtx, r.client(ti), r.clock, q)
		if row.Body != nil {
			ep.lastSize.Store(int64(len(row.Body)))
			r.lastSize.Store(int64(len(row.Body)))
		}
		r.markShutdown(&row, t.Timeout.D())
		// Journaled before it is parsed: a kill during a long parse loses
		// nothing. The parse's result follows through p. The endpoint's
		// next tick may fire while this page waits for its parse (at most
		// maxParsesBehind pages wait); its interner parses one page at a
		// time.
		var p *capture.Pending
		if row.Outcome == capture.OutcomeOK {
			p = capture.NewPending()
			ep.parsing.Add(1)
		}
		r.put(queued{s: row, p: p})
		ep.busy.Store(false)
		if ep.scraped != nil {
			ep.scraped()
		}
		if p != nil {
			ep.parseMu.Lock()
			r.slots.parse(q.parses, &row, q.interner, q.limits)
			ep.parseMu.Unlock()
			p.Done(&row)
			ep.parsing.Add(-1)
		}
		r.account(ti, &row)
	}()
}

// client is the HTTP client of target ti (discovery adds targets while
// recording).
func (r *recorder) client(ti int) *http.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clients[ti]
}

// queued is a row on its way to the writer, with the parse still to come
// when p is not nil.
type queued struct {
	s capture.Scrape
	p *capture.Pending
}

// markShutdown says so in the error of a scrape that the end of the run
// cut short: an error row that ended after the scrapes were cancelled,
// which happened before the scrape's own timeout.
func (r *recorder) markShutdown(row *capture.Scrape, timeout time.Duration) {
	stopped := r.stoppedNs.Load()
	if stopped == 0 || row.Outcome != capture.OutcomeError || row.EndNs < stopped {
		return
	}
	if row.StartNs != 0 && stopped >= row.StartNs+int64(timeout) {
		return // its own timeout came first
	}
	msg := fmt.Sprintf("%v after %s in flight (timeout %s)", errShutdown,
		time.Duration(row.EndNs-row.StartNs).Round(time.Millisecond), timeout)
	if row.StartNs == 0 {
		msg = fmt.Sprintf("%v before the request was sent", errShutdown)
	}
	row.Error = &msg
}

// put hands a finished row to the writer; after Abort, a row that finds
// the channel full is dropped.
func (r *recorder) put(row queued) {
	select {
	case r.rows <- row:
		return
	default:
	}
	select {
	case r.rows <- row:
	case <-r.abort:
	}
}

// missed writes a missed tick. It is called by a tick loop, which must not
// wait for the writer: when the rows channel is full the row is handed to
// a goroutine.
func (r *recorder) missed(ti int, t *Target, ep *endpointState, k int64, at time.Time, why string) {
	row := capture.Scrape{RunID: r.runID, Target: t.Name, Engine: t.Engine, Endpoint: ep.name,
		URL: redact.URL(ep.url), Seq: k, ScheduledNs: r.clock.Ns(at), Outcome: capture.OutcomeMissed, Error: &why}
	r.account(ti, &row)
	select {
	case r.rows <- queued{s: row}:
	default:
		r.inflight.Add(1)
		go func() {
			defer r.inflight.Done()
			r.put(queued{s: row})
		}()
	}
}

// Phases spreads the first ticks of n targets over their intervals: target
// i of n starts i*interval/n after the session start.
func Phases(targets []Target) []time.Duration {
	out := make([]time.Duration, len(targets))
	for i, t := range targets {
		out[i] = time.Duration(int64(t.Interval) * int64(i) / int64(len(targets)))
	}
	return out
}

// abandon journals the rows finished by now or within abortDrain (the
// scrapes cancelled by Abort, with their times), syncs the journal and
// leaves it unsealed, for a Run aborted; err is the writer's earlier error.
func abandon(w *capture.Writer, rows <-chan queued, err error) error {
	deadline := time.After(abortDrain)
drain:
	for {
		select {
		case row, ok := <-rows:
			if !ok {
				break drain
			}
			if err == nil {
				err = w.AppendPending(row.s, row.p)
			}
		case <-deadline:
			break drain
		}
	}
	if aerr := w.Abandon(); err == nil {
		err = aerr
	}
	if err != nil {
		return fmt.Errorf("%w; writing had failed: %w", ErrAborted, err)
	}
	return ErrAborted
}

// waitWriter waits for the writer goroutine's result; after Abort, for at
// most abortWait.
func waitWriter(writeErr <-chan error, abort <-chan struct{}) error {
	select {
	case err := <-writeErr:
		return err
	case <-abort:
	}
	select {
	case err := <-writeErr:
		return err
	case <-time.After(abortWait):
		return ErrAborted
	}
}

func (r *recorder) account(ti int, row *capture.Scrape) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.stats[ti]
	switch row.Outcome {
	case capture.OutcomeOK:
		s.OK++
	case capture.OutcomeMissed:
		s.Missed++
		return
	case capture.OutcomeParseError:
		s.Unparsed++
	default:
		s.Failed++
	}
	if row.Endpoint != capture.EndpointMetrics {
		return
	}
	answered := row.Outcome == capture.OutcomeOK || row.Outcome == capture.OutcomeParseError
	// A wrong URL is said at once, not at the first progress line: the
	// first failed scrape of a target that has never answered.
	if !answered && !s.Answered && !s.warned && r.warn != nil && row.Error != nil {
		s.warned = true
		fmt.Fprintf(r.warn, "warning: %s (%s): first scrape failed: %s\n", s.Name, row.URL, *row.Error)
	}
	s.Answered = s.Answered || answered
	s.URL = row.URL
	// A page stored unparsed was answered: the target is up.
	s.Up, s.LastUnparsed = answered, row.Outcome == capture.OutcomeParseError
	if row.Error != nil {
		s.LastError = *row.Error
	} else if row.ParseError != nil {
		s.LastError = *row.ParseError
	}
	if row.StartNs != 0 && row.EndNs != 0 {
		s.LastLatency = time.Duration(row.EndNs - row.StartNs)
	}
	s.BodyBytes += int64(len(row.Body))
}

// joinPath puts an endpoint path on the target's scheme and host.
func joinPath(target, path string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	// A path's query is the request's query, not part of the path.
	p, q, _ := strings.Cut(path, "?")
	u.Path, u.RawQuery, u.RawPath = p, q, ""
	return u.String()
}

// engineInfoPaths are fetched once at start: vLLM, SGLang and TGI answer
// /version or /info; OpenAI-compatible servers /v1/models; llama.cpp /props.
var engineInfoPaths = []string{"/version", "/v1/models", "/props", "/info"}

// infoFetches bounds the targets whose engine information is being
// fetched: with thousands of targets, fetching all at once would bury the
// first ticks.
const infoFetches = 16

// engineInfo fetches each target's engineInfoPaths, at most infoFetches
// targets at a time. A target's paths are asked one after another, so
// they go over one connection (the one its scrapes use when it is idle):
// asked together they opened a connection each, three more a target,
// each kept idle for the run (MaxIdleConnsPerHost) with its two
// goroutines and buffers.
//
// ready, when not nil, gives the index of each target whose first scrape
// has finished, in that order: its paths are asked then, not before, so
// a thousand targets' 4,000 requests follow their first ticks over the
// interval (each on the connection its scrape just left idle) instead of
// running as fast as the processors allow beside them; a target whose
// first scrape hangs holds no other's. At the run's end the targets not
// given yet are asked at once (and fail at once). Nil: every target now,
// in order.
func engineInfo(ctx context.Context, clients []*http.Client, targets []Target, ready <-chan int) map[string][]capture.EngineInfo {
	out := make(map[string][]capture.EngineInfo, len(targets))
	slots := make(chan struct{}, infoFetches)
	var mu sync.Mutex
	var wg sync.WaitGroup
	asked := make([]bool, len(targets))
	// next is the next target not asked yet.
	next := func() int {
		for ready != nil {
			select {
			case i := <-ready:
				if asked[i] { // asked at the run's end before its scrape finished
					continue
				}
				return i
			case <-ctx.Done():
			}
			break
		}
		return slices.Index(asked, false)
	}
	// Every target once: the manifest is written with them as soon as
	// the last answers, not at the run's end.
	for range targets {
		i := next()
		asked[i] = true
		t := &targets[i]
		// The goroutines are started as slots free up, not all at once: a
		// thousand goroutines waiting for a slot were a thousand stacks.
		// After the run's end each is asked at once (and fails at once).
		held := true
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			held = false
		}
		wg.Go(func() {
			if held {
				defer func() { <-slots }()
			}
			infos := make([]capture.EngineInfo, len(engineInfoPaths))
			for j, p := range engineInfoPaths {
				infos[j] = fetchInfo(ctx, clients[i], t, p)
			}
			mu.Lock()
			out[t.Name] = infos
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// MaxInfoBytes caps each engine-information answer kept in the manifest.
const MaxInfoBytes = 256 << 10

func fetchInfo(ctx context.Context, client *http.Client, t *Target, path string) capture.EngineInfo {
	info := capture.EngineInfo{Path: path}
	ctx, cancel := context.WithTimeout(withRedirects(ctx, t.follows()), t.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinPath(t.URL, path), nil)
	if err != nil {
		info.Error = redact.Text(err.Error())
		return info
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	if t.BearerTokenEnv != "" {
		req.Header.Set("Authorization", "Bearer "+os.Getenv(t.BearerTokenEnv))
	}
	if t.Host != "" {
		req.Host = t.Host
	}
	resp, err := client.Do(req)
	if err != nil {
		info.Error = redact.Text(describe(err, t.Timeout.D()).Error())
		return info
	}
	defer resp.Body.Close()
	info.Status = resp.StatusCode
	if isRedirect(resp) {
		info.Error = redact.Text(redirectError(resp, t.follows()).Error())
		return info
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxInfoBytes+1))
	if err != nil {
		info.Error = redact.Text(err.Error())
		return info
	}
	if resp.StatusCode != http.StatusOK {
		return info
	}
	// An engine's description of itself is a few KB (llama.cpp's /props with
	// its chat template the largest); a bigger answer is not stored, so a
	// hostile target cannot grow the manifest.
	if len(b) > MaxInfoBytes {
		info.Error = fmt.Sprintf("answer over the %d-byte cap for engine information; not stored", MaxInfoBytes)
		return info
	}
	if json.Valid(b) {
		info.JSON = b
	} else {
		info.Text = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return info
}
