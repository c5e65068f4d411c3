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
//     a missed tick, written as a row, never fired late;
//   - ticks the recorder itself slept through (a stalled host) are missed
//     ticks too: after a stall only the current tick fires, no catch-up burst.
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
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
	// Warnings receives warnings the recording goes on after (a journal
	// removed by hand); nil for none.
	Warnings io.Writer
}

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
	Name        string
	OK          int64
	Failed      int64
	Missed      int64
	LastLatency time.Duration
	LastError   string
	Up          bool
	BodyBytes   int64
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
	runID := NewRunID(time.Now())
	w, err := capture.NewWriter(opt.Dir, runID, cfg.Rotate.D())
	if err != nil {
		return nil, err
	}
	w.SetCompactEvery(cfg.CompactEvery)
	w.SetLimits(cfg.Limits())
	client := newClient()
	host, _ := os.Hostname()
	m := capture.Manifest{
		SchemaVersion: capture.SchemaVersion, RunID: runID,
		Host: host, Version: capture.Version, Config: cfg.Redacted(),
	}
	for _, t := range cfg.Targets {
		mt := capture.ManifestTarget{Name: t.Name, URL: RedactURL(t.URL), Engine: t.Engine,
			IntervalNs: int64(t.Interval), TimeoutNs: int64(t.Timeout)}
		for _, e := range t.Endpoints {
			mt.Endpoints = append(mt.Endpoints, e.Path)
		}
		m.Targets = append(m.Targets, mt)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opt.Duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, opt.Duration)
		defer c2()
	}
	rec := &recorder{client: client, runID: runID, maxBody: cfg.MaxBody, limits: cfg.Limits(),
		rows: make(chan capture.Scrape, 256), stats: make([]TargetStats, len(cfg.Targets))}
	for i, t := range cfg.Targets {
		rec.stats[i].Name = t.Name
	}

	// The writer goroutine owns w. It only journals: sealing and compaction
	// run in the background (see capture.Writer), so a row waits in rec.rows
	// for no longer than the journal writes ahead of it.
	writeErr := make(chan error, 1)
	go func() {
		var err error
		var seals int64
		for row := range rec.rows {
			if err != nil {
				continue // drain; the run is stopping
			}
			err = w.Append(row)
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

	var manifestMu sync.Mutex
	// Tick 0 is now: the clock starts as the loops do, and the manifest is
	// written beside the first ticks.
	clock := NewClock()
	rec.clock = clock
	var wg sync.WaitGroup
	for i := range cfg.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec.loop(ctx, i, &cfg.Targets[i])
		}()
	}
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
	// What the engines say about themselves is fetched beside the first
	// ticks, not before them, so a hung engine cannot delay the cadence.
	infoDone := make(chan struct{})
	go func() {
		defer close(infoDone)
		engines := engineInfo(ctx, client, cfg.Targets)
		manifestMu.Lock()
		defer manifestMu.Unlock()
		m.Engines = engines
		_ = capture.WriteManifest(opt.Dir, m) // written again at the end, where an error counts
	}()

	wg.Wait()
	rec.inflight.Wait()
	close(rec.rows)
	err = cmp.Or(<-writeErr, startErr)
	if progressDone != nil {
		<-progressDone
	}

	<-infoDone
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
	clock    Clock
	client   *http.Client
	runID    string
	maxBody  int64
	limits   capture.Limits
	rows     chan capture.Scrape
	inflight sync.WaitGroup
	written  atomic.Int64

	mu    sync.Mutex
	stats []TargetStats
}

// endpointState is the per-endpoint scheduling state.
type endpointState struct {
	name    string
	url     string
	busy    atomic.Bool
	running atomic.Int64 // seq of the scrape in flight
	// interner is the parser's memory of this endpoint's pages, used by
	// one scrape at a time (busy).
	interner expo.Interner
}

func (r *recorder) loop(ctx context.Context, ti int, t *Target) {
	eps := []*endpointState{{name: capture.EndpointMetrics, url: t.URL}}
	for _, e := range t.Endpoints {
		u := joinPath(t.URL, e.Path)
		if e.Once {
			r.fire(ctx, ti, t, &endpointState{name: e.Path, url: u}, 0, time.Now())
			continue
		}
		eps = append(eps, &endpointState{name: e.Path, url: u})
	}
	interval := t.Interval.D()
	start := r.clock.Start()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for k := int64(0); ; {
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
			r.fire(ctx, ti, t, ep, k, at)
		}
		k++
	}
}

// lateTolerance is how late a tick may fire and still count as on time:
// half the interval, at most 100 ms. Timers on a loaded host wake tens of
// milliseconds late; a tick later than this would land close to the next
// one, a catch-up, so it is missed instead.
func lateTolerance(interval time.Duration) time.Duration {
	return min(interval/2, 100*time.Millisecond)
}

func (r *recorder) fire(ctx context.Context, ti int, t *Target, ep *endpointState, k int64, at time.Time) {
	ep.busy.Store(true)
	ep.running.Store(k)
	r.inflight.Add(1)
	go func() {
		defer r.inflight.Done()
		// A scrape in flight when the run stops is finished, not abandoned:
		// it runs on a context that only its own timeout ends.
		row := scrape(context.WithoutCancel(ctx), r.client, r.clock, request{target: t, endpoint: ep.name, url: ep.url,
			seq: k, scheduled: at, maxBody: r.maxBody, limits: r.limits, runID: r.runID, interner: &ep.interner})
		ep.busy.Store(false)
		r.account(ti, &row)
		r.rows <- row
	}()
}

func (r *recorder) missed(ti int, t *Target, ep *endpointState, k int64, at time.Time, why string) {
	row := capture.Scrape{RunID: r.runID, Target: t.Name, Engine: t.Engine, Endpoint: ep.name,
		URL: RedactURL(ep.url), Seq: k, ScheduledNs: r.clock.Ns(at), Outcome: capture.OutcomeMissed, Error: &why}
	r.account(ti, &row)
	r.rows <- row
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
	default:
		s.Failed++
	}
	if row.Endpoint != capture.EndpointMetrics {
		return
	}
	s.Up = row.Outcome == capture.OutcomeOK
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
	u.Path, u.RawQuery, u.RawPath = path, "", ""
	return u.String()
}

// engineInfoPaths are fetched once at start: vLLM, SGLang and TGI answer
// /version or /info; OpenAI-compatible servers /v1/models; llama.cpp /props.
var engineInfoPaths = []string{"/version", "/v1/models", "/props", "/info"}

func engineInfo(ctx context.Context, client *http.Client, targets []Target) map[string][]capture.EngineInfo {
	out := make(map[string][]capture.EngineInfo, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range targets {
		t := &targets[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos := make([]capture.EngineInfo, len(engineInfoPaths))
			var pw sync.WaitGroup
			for j, p := range engineInfoPaths {
				pw.Go(func() { infos[j] = fetchInfo(ctx, client, t, p) })
			}
			pw.Wait()
			mu.Lock()
			out[t.Name] = infos
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func fetchInfo(ctx context.Context, client *http.Client, t *Target, path string) capture.EngineInfo {
	info := capture.EngineInfo{Path: path}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinPath(t.URL, path), nil)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	if t.BearerTokenEnv != "" {
		req.Header.Set("Authorization", "Bearer "+os.Getenv(t.BearerTokenEnv))
	}
	resp, err := client.Do(req)
	if err != nil {
		info.Error = describe(err, t.Timeout.D()).Error()
		return info
	}
	defer resp.Body.Close()
	info.Status = resp.StatusCode
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		info.Error = err.Error()
		return info
	}
	if resp.StatusCode != http.StatusOK {
		return info
	}
	if json.Valid(b) {
		info.JSON = b
	} else {
		info.Text = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return info
}
