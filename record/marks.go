package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// MarkServer is the recorder's mark endpoint: a load generator POSTs the
// name of a phase it starts or ends, and the mark is appended to the run
// folder's marks file (capture.AppendMark) at the moment it arrives.
//
//	POST /mark?name=NAME          start phase NAME
//	POST /mark?name=NAME&end=1    end it
//
// The name may also come as the body: plain text, or JSON
// {"name": "...", "end": true}. The answer is the mark written, as JSON.
//
// Only requests a web page cannot forge are taken: each must carry the
// header capture.MarkHeader (a page can send it cross-site only after a
// CORS preflight, which is never answered), no Origin (a browser's), and a
// Host that is an IP address or localhost with the endpoint's port (a
// page's DNS name rebound to this address is refused). The endpoint sends
// no CORS headers.
type MarkServer struct {
	Dir  string
	srv  *http.Server
	ln   net.Listener
	port string
}

// ListenMarks starts the mark endpoint on addr. A host that is not a
// loopback address is refused unless public is set: marks change what an
// analysis reports, and the endpoint has no authentication.
func ListenMarks(addr, dir string, public bool) (*MarkServer, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mark endpoint: %w", err)
	}
	if !public {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("mark endpoint: %s is not a loopback address (add --mark-public to listen on it)", host)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mark endpoint: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	m := &MarkServer{Dir: dir, ln: ln, port: port}
	mux := http.NewServeMux()
	mux.HandleFunc("/mark", m.handle)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go m.srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed on Close
	return m, nil
}

// Addr is the address the endpoint listens on.
func (m *MarkServer) Addr() string { return m.ln.Addr().String() }

// Close stops the endpoint, letting marks being written finish.
func (m *MarkServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.srv.Shutdown(ctx)
}

func (m *MarkServer) handle(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	if code, err := m.allowed(r); err != nil {
		if code == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodPost)
		}
		http.Error(w, err.Error(), code)
		return
	}
	mk, err := markOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	mk.TNs, mk.Source = now, "http"
	mk, err = capture.AppendMark(m.Dir, mk)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(mk) //nolint:errcheck // the mark is written; a lost answer is the client's
}

// allowed refuses, with its status, a request a web page could have made:
// not a POST (a preflight's OPTIONS included), without the mark header,
// from a browser (Origin), or to a Host that is not this endpoint by
// address (DNS rebinding).
func (m *MarkServer) allowed(r *http.Request) (int, error) {
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, errors.New("POST a phase name to /mark")
	}
	if r.Header.Get(capture.MarkHeader) == "" {
		return http.StatusForbidden, fmt.Errorf("a mark needs the header %s: 1 (llmrec load --mark sends it; curl -H '%s: 1')", capture.MarkHeader, capture.MarkHeader)
	}
	if r.Header.Get("Origin") != "" {
		return http.StatusForbidden, errors.New("marks are not taken from a web page (Origin is set)")
	}
	if !hostIsAddress(r.Host, m.port) {
		return http.StatusForbidden, fmt.Errorf("the Host %q is not this endpoint's address and port %s", r.Host, m.port)
	}
	return 0, nil
}

// hostIsAddress reports whether a request's Host names an IP address or
// localhost, with port: what a name rebound to this address by a web
// page's DNS never is.
func hostIsAddress(host, port string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != port {
		return false
	}
	return strings.EqualFold(h, "localhost") || net.ParseIP(h) != nil
}

// markOf reads a mark's name and end flag from the query or the body.
func markOf(r *http.Request) (capture.Mark, error) {
	q := r.URL.Query()
	mk := capture.Mark{Name: q.Get("name")}
	switch strings.ToLower(q.Get("end")) {
	case "", "0", "false":
	case "1", "true":
		mk.End = true
	default:
		return mk, errors.New("end: want 1, true, 0 or false")
	}
	if mk.Name != "" {
		return mk, capture.CheckMarkName(mk.Name)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		return mk, fmt.Errorf("read body: %w", err)
	}
	text := strings.TrimSpace(string(body))
	if strings.HasPrefix(text, "{") {
		var doc struct {
			Name string `json:"name"`
			End  bool   `json:"end"`
		}
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			return mk, fmt.Errorf("body: %w", err)
		}
		mk.Name, mk.End = doc.Name, mk.End || doc.End
	} else {
		mk.Name = text
	}
	return mk, capture.CheckMarkName(mk.Name)
}
