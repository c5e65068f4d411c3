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
type MarkServer struct {
	Dir string
	srv *http.Server
	ln  net.Listener
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
	m := &MarkServer{Dir: dir, ln: ln}
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
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a phase name to /mark", http.StatusMethodNotAllowed)
		return
	}
	now := time.Now().UnixNano()
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
