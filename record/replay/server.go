package replay

import (
	"context"
	"fmt"
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
	// Listen is a loopback host ("127.0.0.1", "localhost", "::1") or
	// host:port. With a port, the targets listen on it and the ports after
	// it, in name order; without one each gets a free port.
	Listen string
	// Speed is recording seconds per wall second (20 plays a minute in 3 s);
	// 0 means 1.
	Speed float64
	// Loop starts the recording over after its end instead of holding its
	// last answers.
	Loop bool
	// From is where in the recording the replay begins, after its first
	// request (0: at its start).
	From time.Duration
	// Now starts the timeline when Serve returns; by default it starts
	// with the first request any target gets, so that a scraper started
	// after the replay still sees the recording from From on.
	Now bool
}

// Served is one target as it is served.
type Served struct {
	Name string
	URL  string // base URL, e.g. http://127.0.0.1:41234
	// MetricsURL is URL + the metrics endpoint's path ("" when the target's
	// metrics endpoint was not recorded).
	MetricsURL string
	// Paths are the endpoints' paths with their number of answers.
	Paths   []string
	Answers []int
}

// Server serves a Recording; see [Serve].
type Server struct {
	rec     *Recording
	opts    Options
	started chan struct{}
	startMu sync.Mutex
	clock   Clock // set once, when the timeline starts (started closed)
	served  []Served
	group   *loopback.Group
	stop    <-chan struct{} // the group's Stopping
}

// Serve starts one HTTP listener per target of rec and returns at once.
// The recording's first request time is now; every request is answered
// with the answer in force at the recording time it arrives at (see
// [Clock]), after the answer's recorded latency (scaled). The server stops
// when ctx is done or Close is called.
func Serve(ctx context.Context, rec *Recording, opts Options) (*Server, error) {
	if opts.Speed < 0 {
		return nil, fmt.Errorf("replay: speed %g: want a positive factor", opts.Speed)
	}
	host, port, err := listenAddr(opts.Listen)
	if err != nil {
		return nil, err
	}
	if opts.From < 0 || int64(opts.From) > rec.End-rec.Start {
		return nil, fmt.Errorf("replay: from %s: want an offset inside the recording's %s", opts.From, time.Duration(rec.End-rec.Start))
	}
	s := &Server{rec: rec, opts: opts, started: make(chan struct{}), group: loopback.New(ctx)}
	s.stop = s.group.Stopping()
	var names []string
	var handlers []http.Handler
	for _, t := range rec.Targets {
		names = append(names, t.Name)
		handlers = append(handlers, s.handler(t))
	}
	if opts.Now {
		s.at(time.Now())
	}
	urls, err := s.group.Serve(host, port, names, handlers)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	for i, t := range rec.Targets {
		sv := Served{Name: t.Name, URL: urls[i]}
		for _, ep := range t.Endpoints {
			sv.Paths = append(sv.Paths, ep.Path)
			sv.Answers = append(sv.Answers, len(ep.Answers))
			if ep.Name == "metrics" {
				sv.MetricsURL = sv.URL + ep.Path
			}
		}
		s.served = append(s.served, sv)
	}
	return s, nil
}

// listenAddr splits a loopback host or host:port.
func listenAddr(listen string) (host string, port int, err error) {
	host = listen
	if host == "" {
		host = "127.0.0.1"
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		host = h
		if port, err = strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
			return "", 0, fmt.Errorf("replay: listen %q: port %q is not a number from 0 to 65535", listen, p)
		}
	}
	if err := loopback.Check(host); err != nil {
		return "", 0, fmt.Errorf("replay: %w", err)
	}
	return host, port, nil
}

// Targets are the served targets, by name.
func (s *Server) Targets() []Served { return append([]Served(nil), s.served...) }

// at is the recording time at wall time t, starting the timeline at t
// when it has not started.
func (s *Server) at(t time.Time) int64 {
	s.startMu.Lock()
	select {
	case <-s.started:
	default:
		s.clock = Clock{Wall: t, Rec: s.rec.Start + int64(s.opts.From), Speed: s.opts.Speed}
		if s.opts.Loop {
			s.clock.Period = s.rec.loopPeriod()
			s.clock.Rec = s.rec.Start
			s.clock.Wall = t.Add(-s.clock.WallDur(int64(s.opts.From)))
		}
		close(s.started)
	}
	c := s.clock
	s.startMu.Unlock()
	return c.At(t)
}

// Started is closed when the timeline starts (see Options.Now).
func (s *Server) Started() <-chan struct{} { return s.started }

// Clock is the server's mapping of wall time onto the recording, once
// Started is closed.
func (s *Server) Clock() Clock {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	return s.clock
}

// Ends is the wall time the replay reaches the recording's last request
// (with Loop, the end of the first pass), once Started is closed.
func (s *Server) Ends() time.Time {
	c := s.Clock()
	return c.Wall.Add(c.WallDur(s.rec.End - c.Rec))
}

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.group.Done() }

// Close stops the server, abandoning held requests, and waits for it.
func (s *Server) Close() error {
	s.group.Stop()
	return nil
}

// handler answers t's recorded paths; any other path is a 404.
func (s *Server) handler(t *Target) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ep *Endpoint
		for _, e := range t.Endpoints {
			if e.Path == r.URL.Path || e.Path == r.URL.RequestURI() {
				ep = e
				break
			}
		}
		if ep == nil {
			http.Error(w, "404 page not found: this replay of "+t.Name+" serves "+pathList(t), http.StatusNotFound)
			return
		}
		a := &ep.Answers[pick(ep.Answers, s.at(time.Now()))]
		s.answer(w, r, a)
	})
}

func pathList(t *Target) string {
	var ps []string
	for _, ep := range t.Endpoints {
		ps = append(ps, ep.Path)
	}
	return strings.Join(ps, ", ")
}

// answer serves a as it was recorded: after its latency, its status,
// headers and body; a failed attempt holds the connection as long as it
// lasted and closes it.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, a *Answer) {
	// A failure without a status: the connection is held and closed, the
	// recorder's own timeout (or a cut) ends it.
	if a.Failed && a.Status == 0 {
		s.sleep(r.Context(), s.Clock().WallDur(a.Lasted))
		panic(http.ErrAbortHandler)
	}
	if !s.sleep(r.Context(), s.Clock().WallDur(a.Latency)) {
		return
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	// An engine that sent no Date gets none (net/http would add one).
	if _, ok := a.Header["Date"]; !ok {
		w.Header()["Date"] = nil
	}
	body := a.Body
	if a.Gzip && loopback.AcceptsGzip(r) && len(body) > 0 {
		body = loopback.Gzip(body)
		w.Header().Set("Content-Encoding", "gzip")
	}
	// A cut answer goes out without a length, so that closing the
	// connection after what was kept is a cut the client sees.
	if !a.Failed {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(cmpStatus(a.Status))
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	// A failure after a status (a body cut short, too large): the
	// connection closes after what was kept.
	if a.Failed {
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
}

func cmpStatus(st int) int {
	if st == 0 {
		return http.StatusOK
	}
	return st
}

// sleep waits d; false when the request or the server ended first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.stop:
		return false
	}
}
