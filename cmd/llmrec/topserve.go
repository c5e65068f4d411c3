package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmrec/llmrec/internal/loopback"
	livetext "github.com/llmrec/llmrec/render/live"
)

// latest keeps the last frame written to it: the frames of topLoop, each
// one Write, for the page to fetch.
type latest struct {
	mu   sync.Mutex
	text []byte
}

func (l *latest) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text = append(l.text[:0], p...)
	return len(p), nil
}

func (l *latest) get() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.text...)
}

// topServer serves the self-updating page of a run folder on loopback.
type topServer struct {
	ln    net.Listener
	srv   *http.Server
	port  string
	frame *latest
	title string
	every time.Duration
}

// listenTop listens on addr, a loopback address, for the page of dir.
func listenTop(addr, dir string, every time.Duration, frame *latest) (*topServer, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: top: --listen %s: %v", errUsage, addr, err)
	}
	if err := loopback.Check(host); err != nil {
		return nil, fmt.Errorf("%w: top: --listen: %v", errUsage, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("top: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := &topServer{ln: ln, port: port, frame: frame, title: dir, every: every}
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.page)
	mux.HandleFunc("/frame", s.frameText)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed on Close
	return s, nil
}

func (s *topServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// allowed checks a request as the mark endpoint does: a Host that is this
// endpoint's own address and port (no DNS rebinding), no other origin's
// page, and for a frame the custom header a foreign page cannot send.
func (s *topServer) allowed(r *http.Request, needHeader bool) (int, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return http.StatusMethodNotAllowed, errors.New("GET only")
	}
	if !hostIsAddress(r.Host, s.port) {
		return http.StatusForbidden, fmt.Errorf("the Host %q is not this endpoint's address and port %s", r.Host, s.port)
	}
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
		return http.StatusForbidden, errors.New("not served to another origin's page")
	}
	if needHeader && r.Header.Get(livetext.FrameHeader) == "" {
		return http.StatusForbidden, fmt.Errorf("a frame needs the header %s: 1 (the page sends it)", livetext.FrameHeader)
	}
	return 0, nil
}

func (s *topServer) page(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if code, err := s.allowed(r, false); err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	livetext.Page(w, s.title, int(s.every/time.Millisecond)) //nolint:errcheck // a lost page is the browser's
}

func (s *topServer) frameText(w http.ResponseWriter, r *http.Request) {
	if code, err := s.allowed(r, true); err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	b := s.frame.get()
	if len(b) == 0 {
		b = []byte("no frame yet\n")
	}
	w.Write(b) //nolint:errcheck // a lost frame is the browser's
}

// topListen serves the page until ctx ends: frames are read as topLoop
// reads them (its budget, its replay), each kept for the page.
func topListen(ctx context.Context, stderr io.Writer, addr string, run func(w io.Writer) error, dir string, every time.Duration) error {
	frame := &latest{}
	s, err := listenTop(addr, dir, every, frame)
	if err != nil {
		return err
	}
	defer s.close()
	fmt.Fprintf(stderr, "top: serving http://%s/ (loopback only); Ctrl-C to stop\n", s.ln.Addr())
	if err := run(frame); err != nil {
		return err
	}
	// A replay's last frame stays served.
	<-ctx.Done()
	return nil
}

// hostIsAddress reports whether a request's Host names an address, not a
// DNS name (localhost aside), with the endpoint's port: a page that
// rebinds a name of its own to 127.0.0.1 sends its name.
func hostIsAddress(host, port string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != port {
		return false
	}
	return strings.EqualFold(h, "localhost") || net.ParseIP(h) != nil
}
