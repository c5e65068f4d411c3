// Package load drives an OpenAI-compatible completions endpoint at fixed
// concurrency levels and records every request as the client saw it, in
// AIPerf's profile_export.jsonl (its 0.3 schema) or a generic JSONL, the
// files analyze/client reads.
//
// A run is a warmup (phase "warmup", at the first stage's concurrency)
// and then one phase per stage. Each phase runs N workers, each sending
// one streaming request after another while the phase lasts; requests in
// flight when it ends get a grace period to finish and are then
// cancelled (was_cancelled, error 499). The next phase starts when the
// last request of the one before has finished, so that phases never
// overlap and each one's bounds hold only its own requests.
//
// Times are Unix epoch ns from one wall-clock reading per request plus
// monotonic time (start, first response, end), so a clock step cannot
// reorder them.
package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

// Stage is one concurrency level held for a duration.
type Stage struct {
	Concurrency int
	Duration    time.Duration
}

// Output formats.
const (
	FormatAIPerf = "aiperf" // AIPerf profile_export.jsonl, its 0.3 schema
	FormatJSONL  = "jsonl"  // generic JSONL: start_ns, first_token_ns, end_ns, tokens, status, error, phase, url
)

// Phase names: "warmup", then "profiling" for a single stage (AIPerf's
// name) or "concurrency N" per stage.
const (
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
)

// Options configure [Run].
type Options struct {
	// URL is the engine's base URL (http://127.0.0.1:8000) or its
	// /v1/completions or /v1/chat/completions URL; the host must be a
	// loopback address unless AllowRemote is set.
	URL string
	// AllowRemote lets URL name any host (an engine on a GPU node), over
	// http or https.
	AllowRemote bool
	// Stages are the concurrency levels, in order.
	Stages []Stage
	// Warmup is how long to send at the first stage's concurrency before
	// the stages, in phase "warmup"; zero for none.
	Warmup time.Duration
	// PromptTokens is the prompt's length in words (one token each on the
	// simulator); OutputTokens the max_tokens asked for.
	PromptTokens, OutputTokens int
	// Model is the request's model; "" leaves it out (the server's).
	Model string
	// Grace is how long requests in flight at a phase's end may take to
	// finish before they are cancelled.
	Grace time.Duration
	// Format is FormatAIPerf or FormatJSONL.
	Format string
	// Out receives the records, one JSON line per request as it finishes.
	Out io.Writer
	// Mark, if set, is called as each phase starts and ends (a recorder's
	// mark endpoint, see [MarkURL]). An error at the first mark ends the
	// run before any request; later ones go to Warn.
	Mark func(ctx context.Context, name string, end bool) error
	// Warn, if set, receives a line about each problem that does not stop
	// the run.
	Warn func(string)
	// Progress, if set, receives each phase's summary as it ends.
	Progress func(PhaseSummary)
}

// PhaseSummary counts one phase's requests.
type PhaseSummary struct {
	Name         string
	Concurrency  int
	Start, End   time.Time // the first request's start, the last's end
	Requests     int
	OK           int
	Errors       int
	Cancelled    int
	OutputTokens int // of the requests that ended ok
}

// Summary is a run's phases.
type Summary struct {
	Phases []PhaseSummary
}

// Check checks the options; its errors name the option.
func (o *Options) Check() error {
	switch {
	case o.URL == "":
		return errors.New("url: missing")
	case len(o.Stages) == 0:
		return errors.New("stages: none")
	case o.PromptTokens < 1:
		return fmt.Errorf("prompt tokens: %d is not positive", o.PromptTokens)
	case o.OutputTokens < 1:
		return fmt.Errorf("output tokens: %d is not positive", o.OutputTokens)
	case o.Warmup < 0:
		return errors.New("warmup: negative")
	case o.Grace < 0:
		return errors.New("grace: negative")
	case o.Format != FormatAIPerf && o.Format != FormatJSONL:
		return fmt.Errorf("format: %q is not %s or %s", o.Format, FormatAIPerf, FormatJSONL)
	case o.Out == nil:
		return errors.New("out: missing")
	}
	for i, s := range o.Stages {
		if s.Concurrency < 1 || s.Duration <= 0 {
			return fmt.Errorf("stage %d: want a concurrency >= 1 and a positive duration, got %d:%s", i+1, s.Concurrency, s.Duration)
		}
	}
	_, _, err := endpoint(o.URL, o.AllowRemote)
	return err
}

// Host is the host (and port) of the engine's URL, as errors name it;
// "" when the URL does not parse.
func (o *Options) Host() string {
	u, err := url.Parse(o.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// endpoint is the completions URL of u and whether it is the chat one:
// a loopback http URL, or with remote any http(s) URL with a host.
func endpoint(raw string, remote bool) (string, bool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, fmt.Errorf("url: %w", err)
	}
	host := u.Hostname()
	switch {
	case remote && (u.Scheme == "http" || u.Scheme == "https") && host != "":
	case remote:
		return "", false, fmt.Errorf("url %s: want http(s)://HOST:PORT", redact.URL(raw))
	case u.Scheme != "http":
		return "", false, fmt.Errorf("url %s: want http://HOST:PORT on this machine (or --allow-remote for another host)", redact.URL(raw))
	}
	if ip := net.ParseIP(host); !remote && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", false, fmt.Errorf("url %s: %s is not a loopback address (llmrec load drives engines on this machine unless --allow-remote)", redact.URL(raw), host)
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	switch strings.TrimSuffix(u.Path, "/") {
	case "", "/v1":
		u.Path = "/v1/completions"
	case "/v1/completions":
	case "/v1/chat/completions":
		return u.String(), true, nil
	default:
		return "", false, fmt.Errorf("url %s: want a base URL or its /v1/completions or /v1/chat/completions", redact.URL(raw))
	}
	return u.String(), false, nil
}

// ParseStages reads "1:30s,4:30s": concurrency and duration per stage.
func ParseStages(s string) ([]Stage, error) {
	var out []Stage
	for i, part := range strings.Split(s, ",") {
		c, d, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("stage %d %q: want CONCURRENCY:DURATION such as 4:30s", i+1, part)
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("stage %d %q: concurrency %q is not a whole number >= 1", i+1, part, c)
		}
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("stage %d %q: duration %q is not a positive duration such as 30s", i+1, part, d)
		}
		out = append(out, Stage{n, dur})
	}
	return out, nil
}

// MarkURL returns a Mark function that POSTs name (and end=1) to a
// recorder's mark endpoint, e.g. http://127.0.0.1:9464/mark.
func MarkURL(raw string) (func(ctx context.Context, name string, end bool) error, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mark url %s: want http://HOST:PORT/mark", redact.URL(raw))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mark"
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	return func(ctx context.Context, name string, end bool) error {
		v := url.Values{"name": {name}}
		if end {
			v.Set("end", "1")
		}
		mu := *u
		mu.RawQuery = v.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, mu.String(), nil)
		if err != nil {
			return fmt.Errorf("mark %q: %w", name, err)
		}
		// The endpoint takes only requests a web page cannot forge.
		req.Header.Set(capture.MarkHeader, "1")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("mark %q: %s", name, redact.Text(err.Error()))
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("mark %q: %s: %s", name, resp.Status, redact.Text(strings.TrimSpace(string(body))))
		}
		return nil
	}, nil
}

// phase is one phase to run.
type phase struct {
	name        string
	concurrency int
	duration    time.Duration
}

// plan is the run's phases: the warmup, then each stage.
func (o *Options) plan() []phase {
	var ps []phase
	if o.Warmup > 0 {
		ps = append(ps, phase{PhaseWarmup, o.Stages[0].Concurrency, o.Warmup})
	}
	seen := map[string]int{}
	for _, s := range o.Stages {
		name := PhaseProfiling
		if len(o.Stages) > 1 {
			name = "concurrency " + strconv.Itoa(s.Concurrency)
			seen[name]++
			if k := seen[name]; k > 1 {
				name += " (" + strconv.Itoa(k) + ")"
			}
		}
		ps = append(ps, phase{name, s.Concurrency, s.Duration})
	}
	return ps
}

// Run sends the load and writes the records. It returns when every phase
// has ended, or early when ctx is done (requests in flight are then
// cancelled and recorded as such). An error writing Out ends the run.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	target, chat, _ := endpoint(o.URL, o.AllowRemote)
	maxC := 1
	for _, s := range o.Stages {
		maxC = max(maxC, s.Concurrency)
	}
	d := &driver{
		o: o, url: target, chat: chat,
		hc: &http.Client{Transport: &http.Transport{
			Proxy: nil, MaxIdleConnsPerHost: maxC, MaxConnsPerHost: 0, DisableCompression: true,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		}},
		w: bufio.NewWriter(o.Out),
	}
	defer d.hc.CloseIdleConnections()
	d.body = d.requestBody()
	sum := &Summary{}
	for i, p := range o.plan() {
		if ctx.Err() != nil {
			break
		}
		if o.Mark != nil {
			if err := o.Mark(ctx, p.name, false); err != nil {
				if i == 0 {
					return nil, fmt.Errorf("load: %w", err)
				}
				d.warn(err.Error())
			}
		}
		ps := d.phase(ctx, p)
		if o.Mark != nil && ctx.Err() == nil {
			if err := o.Mark(ctx, p.name, true); err != nil {
				d.warn(err.Error())
			}
		}
		sum.Phases = append(sum.Phases, ps)
		if o.Progress != nil {
			o.Progress(ps)
		}
		if err := d.flush(); err != nil {
			return sum, err
		}
	}
	if err := d.flush(); err != nil {
		return sum, err
	}
	return sum, nil
}

type driver struct {
	o    Options
	url  string
	chat bool
	hc   *http.Client
	body []byte

	mu      sync.Mutex
	w       *bufio.Writer
	werr    error
	session int
}

func (d *driver) warn(s string) {
	if d.o.Warn != nil {
		d.o.Warn(s)
	}
}

func (d *driver) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.werr == nil {
		if err := d.w.Flush(); err != nil {
			d.werr = fmt.Errorf("load: write records: %w", err)
		}
	}
	return d.werr
}

// promptWords are the prompt's words: one token each on the simulator.
var promptWords = strings.Fields("the quick brown fox jumps over a lazy dog while seven small birds sing")

func (d *driver) requestBody() []byte {
	words := make([]string, d.o.PromptTokens)
	for i := range words {
		words[i] = promptWords[i%len(promptWords)]
	}
	text := strings.Join(words, " ")
	req := map[string]any{"max_tokens": d.o.OutputTokens, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "ignore_eos": true}
	if d.chat {
		req["messages"] = []any{map[string]any{"role": "user", "content": text}}
	} else {
		req["prompt"] = text
	}
	if d.o.Model != "" {
		req["model"] = d.o.Model
	}
	b, _ := json.Marshal(req)
	return b
}

// phase runs one phase: workers send requests until its end, those in
// flight get the grace period, then are cancelled.
func (d *driver) phase(ctx context.Context, p phase) PhaseSummary {
	ps := PhaseSummary{Name: p.name, Concurrency: p.concurrency}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	end := began.Add(p.duration)
	grace := time.AfterFunc(p.duration+d.o.Grace, cancel)
	defer grace.Stop()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range p.concurrency {
		worker := "worker_" + randHex(4)
		wg.Go(func() {
			for time.Now().Before(end) && pctx.Err() == nil {
				r := d.send(pctx, p.name, worker)
				mu.Lock()
				ps.Requests++
				switch {
				case r.cancelled:
					ps.Cancelled++
				case r.errCode != 0:
					ps.Errors++
				default:
					ps.OK++
					ps.OutputTokens += r.outputTokens
				}
				if ps.Start.IsZero() || r.start.Before(ps.Start) {
					ps.Start = r.start
				}
				if r.end.After(ps.End) {
					ps.End = r.end
				}
				mu.Unlock()
				d.write(&r)
				// A refused connection is not retried in a tight loop.
				if r.errType == errConnection {
					select {
					case <-time.After(connBackoff):
					case <-pctx.Done():
					}
				}
			}
		})
	}
	wg.Wait()
	return ps
}

// A worker whose request could not connect waits connBackoff before its
// next one.
const (
	errConnection = "ConnectionError"
	connBackoff   = 100 * time.Millisecond
)

// result is one request as the client saw it.
type result struct {
	phase, worker string
	session       int
	start         time.Time
	ack           time.Time   // response headers received
	chunks        []time.Time // each chunk that carried a token
	end           time.Time
	inputTokens   int
	outputTokens  int
	fromUsage     bool // outputTokens is the usage chunk's, else the chunks counted
	ok            bool // read to [DONE] with a token
	cancelled     bool
	errCode       int
	errType       string
	errMsg        string
}

// send sends one request and reads its stream to the end.
func (d *driver) send(ctx context.Context, phaseName, worker string) (r result) {
	d.mu.Lock()
	r = result{phase: phaseName, worker: worker, session: d.session, inputTokens: d.o.PromptTokens}
	d.session++
	d.mu.Unlock()
	r.start = time.Now()
	defer func() {
		r.end = time.Now()
		if !r.ok && r.errCode == 0 && ctx.Err() != nil {
			r.cancelled, r.errCode, r.errType = true, 499, "RequestCancellationError"
			r.errMsg = fmt.Sprintf("Request was cancelled after %.3f seconds", r.end.Sub(r.start).Seconds())
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		r.errCode, r.errType, r.errMsg = 400, "RequestError", err.Error()
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := d.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.errCode, r.errType, r.errMsg = 503, errConnection, redact.Text(err.Error())
		}
		return r
	}
	defer resp.Body.Close()
	r.ack = time.Now()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		r.errCode, r.errType = resp.StatusCode, "HTTPError"
		r.errMsg = redact.Text(strings.TrimSpace(string(body)))
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	done := false
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			done = true
			break
		}
		now := time.Now()
		var c struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			r.errCode, r.errType, r.errMsg = 502, "ResponseError", "a chunk is not JSON: "+err.Error()
			return r
		}
		if c.Error != nil {
			r.errCode, r.errType, r.errMsg = 500, "StreamError", redact.Text(c.Error.Message)
			return r
		}
		if c.Usage != nil && c.Usage.CompletionTokens > 0 {
			r.outputTokens, r.fromUsage = c.Usage.CompletionTokens, true
		}
		for _, ch := range c.Choices {
			if ch.Text != "" || ch.Delta.Content != "" {
				r.chunks = append(r.chunks, now)
				break
			}
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		r.errCode, r.errType, r.errMsg = 502, "ResponseError", redact.Text(err.Error())
		return r
	}
	if !done && ctx.Err() == nil {
		r.errCode, r.errType, r.errMsg = 502, "ResponseError", "the stream ended without [DONE]"
		return r
	}
	if !done {
		return r // cancelled: see the deferred function
	}
	if !r.fromUsage {
		r.outputTokens = len(r.chunks)
	}
	if len(r.chunks) == 0 {
		r.errCode, r.errType, r.errMsg = 502, "ResponseError", "the stream carried no token"
		return r
	}
	r.ok = true
	return r
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// write appends r's record to the output.
func (d *driver) write(r *result) {
	var line []byte
	if d.o.Format == FormatJSONL {
		line = r.generic(d.url)
	} else {
		line = r.aiperf()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.werr != nil {
		return
	}
	if _, err := d.w.Write(append(line, '\n')); err != nil {
		d.werr = fmt.Errorf("load: write records: %w", err)
	}
}
