package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmrec/llmrec/internal/loopback"
)

// Options configure [Serve].
type Options struct {
	// Host is the address to listen on; it must be a loopback address or
	// "localhost". Empty means 127.0.0.1. Each engine gets its own port.
	Host string
	// Truth, if set, receives one JSON line (a [LogEntry]) per request.
	Truth io.Writer
	// NoMemoryLog stops the server keeping the entries for [Server.Log],
	// for long runs.
	NoMemoryLog bool
	// Listen gives engines (by name) a fixed address, "127.0.0.1:8000";
	// its host must be loopback or "localhost". The others listen on Host
	// at a port the system picks.
	Listen map[string]string
}

// Target is one served engine.
type Target struct {
	// Name is the engine name.
	Name string
	// Format is the engine's exposition format.
	Format Format
	// URL is the base URL, e.g. http://127.0.0.1:41234.
	URL string
	// MetricsURL is URL + "/metrics".
	MetricsURL string
}

// LogEntry is the truth about one request the server answered.
type LogEntry struct {
	// Engine is the engine name.
	Engine string `json:"engine"`
	// Method and Path are the request's.
	Method string `json:"method"`
	Path   string `json:"path"`
	// ReceivedNs is when the handler got the request (Unix ns).
	ReceivedNs int64 `json:"received_ns"`
	// RenderedNs is when the body was rendered (Unix ns), 0 if none was.
	RenderedNs int64 `json:"rendered_ns,omitempty"`
	// Offset is the scenario offset the body was rendered for (or, without
	// a body, the offset of receipt).
	Offset time.Duration `json:"offset_ns"`
	// FirstByteSentNs is when the first body bytes were handed to the
	// connection and flushed (Unix ns); SentNs when the last were.
	FirstByteSentNs int64 `json:"first_byte_sent_ns,omitempty"`
	SentNs          int64 `json:"sent_ns,omitempty"`
	// Status is the HTTP status sent; 0 if the request was abandoned.
	Status int `json:"status"`
	// Bytes is the body size before compression; WireBytes as sent.
	Bytes     int  `json:"bytes"`
	WireBytes int  `json:"wire_bytes"`
	Gzip      bool `json:"gzip,omitempty"`
	// Behaviour is the event behaviour applied (hang, status, slow, stale).
	Behaviour EventKind `json:"behaviour,omitempty"`
	// Error says why the request was abandoned or cut short.
	Error string `json:"error,omitempty"`
	// Truth holds the true values the /metrics body carried.
	Truth *Truth `json:"truth,omitempty"`
	// Completion is the truth of a completion request (openai.go).
	Completion *CompletionLog `json:"completion,omitempty"`
}

// Server serves simulated engines; see [Serve].
type Server struct {
	start   time.Time
	engines []*Engine
	targets []Target
	group   *loopback.Group
	stop    <-chan struct{} // the group's Stopping
	truth   io.Writer
	keep    bool

	mu   sync.Mutex
	log  []LogEntry
	werr error
}

var errServerClosed = errors.New("sim: server closed")

// listenAddrs is each engine's listen address: its Listen entry, else
// host at port 0. A Listen name no engine has, or a host not loopback, is
// an error naming it.
func listenAddrs(sc *Scenario, host string, listen map[string]string) (map[string]string, error) {
	addrs := map[string]string{}
	var names []string
	for _, e := range sc.Engines {
		addrs[e.Name] = net.JoinHostPort(host, "0")
		names = append(names, e.Name)
	}
	for name, a := range listen {
		if _, ok := addrs[name]; !ok {
			return nil, fmt.Errorf("sim: listen: no engine %q in the scenario (its engines: %s)", name, strings.Join(names, ", "))
		}
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("sim: listen %s=%s: want HOST:PORT such as 127.0.0.1:8000", name, a)
		}
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("sim: listen %s=%s: %q is not a loopback address", name, a, h)
		}
		addrs[name] = a
	}
	return addrs, nil
}

// Serve starts one HTTP listener per engine of sc on a loopback address and
// returns at once. Offsets run on the wall clock from the moment Serve is
// called. The server stops when ctx is done or Close is called.
//
// Each engine answers GET /metrics (gzip when asked for) and /health, plus
// /version and /v1/models (vLLM) or /props and /slots (llama.cpp), and
// serves real requests on POST /v1/completions and /v1/chat/completions
// (openai.go): each is admitted into the engine's batch and counted in its
// /metrics like the scenario's load (see [ServeSpec]). The hang and status
// events apply to every path, slow and stale to all but the completions.
func Serve(ctx context.Context, sc *Scenario, opts Options) (*Server, error) {
	host := cmp.Or(opts.Host, "127.0.0.1")
	if err := loopback.Check(host); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	addrs, err := listenAddrs(sc, host, opts.Listen)
	if err != nil {
		return nil, err
	}
	s := &Server{start: time.Now(), truth: opts.Truth, keep: !opts.NoMemoryLog}
	engines, err := sc.Build(s.start)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s.engines = engines
	s.group = loopback.New(ctx)
	s.stop = s.group.Stopping()
	var names []string
	var handlers []http.Handler
	for _, e := range engines {
		e.live = newLiveLoad(e)
		go e.live.run(s.start, s.stop)
		names = append(names, e.Name())
		handlers = append(handlers, s.handler(e))
	}
	var at []string
	for _, e := range engines {
		at = append(at, addrs[e.Name()])
	}
	urls, err := s.group.ServeAt(at, names, handlers)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	for i, e := range engines {
		s.targets = append(s.targets, Target{Name: e.Name(), Format: e.Format(), URL: urls[i], MetricsURL: urls[i] + "/metrics"})
	}
	return s, nil
}

// Targets lists the served engines in scenario order.
func (s *Server) Targets() []Target { return append([]Target(nil), s.targets...) }

// Engines returns the compiled engines, anchored at the server's start.
func (s *Server) Engines() []*Engine { return append([]*Engine(nil), s.engines...) }

// Start is the wall-clock instant of offset 0.
func (s *Server) Start() time.Time { return s.start }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.group.Done() }

// Close stops the server, abandoning held requests, and waits for it. It
// returns the first error writing the truth log.
func (s *Server) Close() error {
	s.group.Stop()
	return s.Err()
}

// Err returns the first error writing the truth log.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

// Log returns a copy of the entries logged so far, in the order the
// requests finished.
func (s *Server) Log() []LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]LogEntry(nil), s.log...)
}

func (s *Server) record(ent *LogEntry) {
	var line []byte
	if s.truth != nil {
		var err error
		line, err = json.Marshal(ent)
		if err != nil {
			line = nil
		} else {
			line = append(line, '\n')
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keep {
		s.log = append(s.log, *ent)
	}
	if line != nil && s.werr == nil {
		if _, err := s.truth.Write(line); err != nil {
			s.werr = fmt.Errorf("sim: truth log: %w", err)
		}
	}
}

// sleep waits d, or less if the request or the server ends.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client gone: %w", ctx.Err())
	case <-s.stop:
		return errServerClosed
	}
}

func (s *Server) handler(e *Engine) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recv := time.Now()
		ent := LogEntry{Engine: e.Name(), Method: r.Method, Path: r.URL.Path, ReceivedNs: recv.UnixNano()}
		defer func() { s.record(&ent) }()
		off := recv.Sub(s.start)
		ent.Offset = off
		if h, v := e.startHeader(off, r.URL.Path); h != "" {
			w.Header().Set(h, v)
		}
		b := e.BehaviourAt(off)
		for b.Kind == EventHang {
			ent.Behaviour = EventHang
			if err := s.sleep(r.Context(), time.Until(s.start.Add(b.Until))); err != nil {
				ent.Error = err.Error()
				return
			}
			off = time.Since(s.start)
			ent.Offset = off
			b = e.BehaviourAt(off)
		}
		if b.Kind == EventStatus {
			ent.Behaviour = EventStatus
			ct, body := StatusAnswer(b)
			s.send(w, r, &ent, b.Code, ct, body, 0, 0)
			return
		}
		if p := r.URL.Path; p == "/v1/completions" || p == "/v1/chat/completions" {
			s.completion(w, r, e, &ent)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.send(w, r, &ent, http.StatusMethodNotAllowed, "text/plain; charset=utf-8", []byte("method not allowed\n"), 0, 0)
			return
		}
		var body []byte
		ctype := "application/json"
		switch r.URL.Path {
		case "/metrics":
			body = e.Render(off)
			ent.RenderedNs = time.Now().UnixNano()
			tr := e.Truth(off)
			ent.Truth = &tr
			ctype = e.ContentType()
		case "/health":
			if e.Format() == FormatLlamaCpp {
				body = []byte(`{"status":"ok"}`)
			} else {
				ctype = ""
			}
		default:
			body = e.infoJSON(r.URL.Path, off, s.start)
			if body == nil {
				s.send(w, r, &ent, http.StatusNotFound, "text/plain; charset=utf-8", []byte("404 page not found\n"), 0, 0)
				return
			}
			ent.RenderedNs = time.Now().UnixNano()
		}
		var hold, trickle time.Duration
		switch b.Kind {
		case EventStale:
			hold = b.Delay
		case EventSlow:
			trickle = b.Delay
		}
		if b.Kind != "" {
			ent.Behaviour = b.Kind
		}
		s.send(w, r, &ent, http.StatusOK, ctype, body, hold, trickle)
	})
}

// send writes a response: it waits hold, sends the first bytes and then the
// rest spread over trickle.
func (s *Server) send(w http.ResponseWriter, r *http.Request, ent *LogEntry, status int, ctype string, body []byte,
	hold, trickle time.Duration) {
	ent.Bytes = len(body)
	wire := body
	if len(body) > 0 && loopback.AcceptsGzip(r) {
		wire = loopback.Gzip(body)
		ent.Gzip = true
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
	}
	if err := s.sleep(r.Context(), hold); err != nil {
		ent.Error = err.Error()
		return
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(wire)))
	w.WriteHeader(status)
	ent.Status = status
	if r.Method == http.MethodHead {
		ent.SentNs = time.Now().UnixNano()
		return
	}
	rc := http.NewResponseController(w)
	// A normal answer goes out as a first KiB and the rest; a slow one as
	// ten parts spread so that the last leaves trickle after the first.
	var parts [][]byte
	if trickle > 0 {
		size := max((len(wire)+9)/10, 1)
		for p := wire; len(p) > 0; p = p[min(size, len(p)):] {
			parts = append(parts, p[:min(size, len(p))])
		}
	} else {
		parts = [][]byte{wire[:min(len(wire), 1024)], wire[min(len(wire), 1024):]}
	}
	var gap time.Duration
	if trickle > 0 && len(parts) > 1 {
		gap = trickle / time.Duration(len(parts)-1)
	}
	var err error
	for i, p := range parts {
		if i > 0 && gap > 0 {
			if err = s.sleep(r.Context(), gap); err != nil {
				break
			}
		}
		if len(p) > 0 {
			var n int
			n, err = w.Write(p)
			ent.WireBytes += n
			if err == nil {
				err = rc.Flush()
			}
		}
		if i == 0 {
			ent.FirstByteSentNs = time.Now().UnixNano()
		}
		if err != nil {
			break
		}
	}
	ent.SentNs = time.Now().UnixNano()
	if err != nil {
		ent.Error = err.Error()
	}
}

// InfoJSON is the answer of an engine-information endpoint (vLLM /version
// and /v1/models, llama.cpp /props and /slots) at the scenario's start, as
// a recorder fetches them when it starts; nil for other paths.
func (e *Engine) InfoJSON(path string, start time.Time) []byte { return e.infoJSON(path, 0, start) }

// infoJSON renders the engine's info endpoints; nil for unknown paths.
func (e *Engine) infoJSON(path string, off time.Duration, start time.Time) []byte {
	created := start.Unix()
	var v any
	switch {
	case e.spec.Format == FormatVLLM && path == "/version":
		v = map[string]string{"version": cmp.Or(e.spec.Version, "0.10.1.1")}
	case e.spec.Format == FormatVLLM && path == "/v1/models":
		v = map[string]any{"object": "list", "data": []any{map[string]any{
			"id": e.spec.Model, "object": "model", "created": created, "owned_by": "vllm",
			"root": e.spec.Model, "parent": nil, "max_model_len": e.spec.MaxModelLen,
			"permission": []any{map[string]any{
				"id": "modelperm-sim", "object": "model_permission", "created": created,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
				"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
				"organization": "*", "group": nil, "is_blocking": false,
			}},
		}}}
	case e.spec.Format == FormatLlamaCpp && path == "/props":
		v = map[string]any{
			"default_generation_settings": map[string]any{
				"id": 0, "n_ctx": e.spec.MaxModelLen / e.spec.Slots, "speculative": false, "is_processing": false,
				"params": map[string]any{"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95},
			},
			"total_slots": e.spec.Slots, "model_path": e.spec.Model,
			"modalities": map[string]bool{"vision": false, "audio": false},
			"build_info": cmp.Or(e.spec.Version, "b5942-81ff7abe"),
		}
	case e.spec.Format == FormatLlamaCpp && path == "/slots":
		running := e.phases[e.pieces[e.pieceAt(max(off, 0))].phase].Running
		if e.live != nil {
			e.live.mu.Lock()
			running += len(e.live.running)
			e.live.mu.Unlock()
		}
		slots := make([]any, e.spec.Slots)
		for i := range slots {
			slots[i] = map[string]any{
				"id": i, "id_task": -1, "n_ctx": e.spec.MaxModelLen / e.spec.Slots, "speculative": false,
				"is_processing": i < running,
			}
		}
		v = slots
	default:
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
