package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// serverScenario has a vLLM engine whose load starts at 0 and one behaviour
// window from 0, plus a plain llama.cpp engine.
func serverScenario(t *testing.T, event string) *Scenario {
	t.Helper()
	toml := `
[[engine]]
name = "v"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 1000.0
  prompt_tps = 2000.0
  running = 8
` + event + `
[[engine]]
name = "l"
format = "llamacpp"
  [[engine.phase]]
  at = "0s"
  decode_tps = 50.0
  prompt_tps = 100.0
  running = 2
`
	sc, err := ParseScenario([]byte(toml), "server.toml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startServer(t *testing.T, sc *Scenario, truth io.Writer) *Server {
	t.Helper()
	srv, err := Serve(t.Context(), sc, Options{Truth: truth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// closedLog stops the server, which waits for its handlers, and returns the
// log: an entry is logged after the response's last byte, so possibly after
// the client has read it.
func closedLog(t *testing.T, srv *Server) []LogEntry {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	log := srv.Log()
	if len(log) == 0 {
		t.Fatal("empty log")
	}
	return log
}

// rawClient does not ask for or undo gzip by itself.
var rawClient = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 5 * time.Second}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// Each engine is its own target on 127.0.0.1; /metrics honours gzip; the
// info endpoints answer small JSON; the truth log holds one line per
// request with the counters the body carried.
func TestServe(t *testing.T) {
	truth := &syncBuffer{}
	srv := startServer(t, serverScenario(t, ""), truth)
	targets := srv.Targets()
	if len(targets) != 2 || targets[0].Name != "v" || targets[1].Name != "l" || targets[0].URL == targets[1].URL {
		t.Fatalf("targets %+v", targets)
	}
	for _, tg := range targets {
		if !strings.HasPrefix(tg.URL, "http://127.0.0.1:") || tg.MetricsURL != tg.URL+"/metrics" {
			t.Errorf("target URL %s / %s", tg.URL, tg.MetricsURL)
		}
	}
	v, l := targets[0], targets[1]

	resp, gz := get(t, v.MetricsURL, "Accept-Encoding", "gzip")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip request: status %d, encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	fams := parseBody(t, plain)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}

	resp, body := get(t, v.MetricsURL)
	if resp.Header.Get("Content-Encoding") != "" {
		t.Error("gzip without Accept-Encoding")
	}
	parseBody(t, body)
	resp, body = get(t, l.MetricsURL, "Accept-Encoding", "gzip;q=0")
	if resp.Header.Get("Content-Encoding") != "" || !bytes.Contains(body, []byte("llamacpp:tokens_predicted_total")) {
		t.Errorf("llama.cpp metrics: encoding %q body %q", resp.Header.Get("Content-Encoding"), body)
	}

	for _, c := range []struct{ url, want string }{
		{v.URL + "/version", `"version"`},
		{v.URL + "/v1/models", `"max_model_len":8192`},
		{l.URL + "/props", `"total_slots":4`},
		{l.URL + "/slots", `"is_processing":true`},
		{l.URL + "/health", `"ok"`},
	} {
		resp, body := get(t, c.url)
		var x any
		if resp.StatusCode != 200 || json.Unmarshal(body, &x) != nil || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: status %d body %s", c.url, resp.StatusCode, body)
		}
	}
	if resp, _ := get(t, v.URL+"/nope"); resp.StatusCode != 404 {
		t.Errorf("unknown path: status %d", resp.StatusCode)
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	log := srv.Log()
	if len(log) != 9 {
		t.Fatalf("%d log entries, want 9", len(log))
	}
	lines := strings.Split(strings.TrimSpace(truth.String()), "\n")
	if len(lines) != len(log) {
		t.Fatalf("%d truth lines, %d entries", len(lines), len(log))
	}
	var first LogEntry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Engine != "v" || first.Path != "/metrics" || first.Status != 200 || !first.Gzip || first.Truth == nil ||
		first.Bytes != len(plain) || first.WireBytes != len(gz) {
		t.Errorf("first truth line: %+v", first)
	}
	if !(first.ReceivedNs <= first.RenderedNs && first.RenderedNs <= first.FirstByteSentNs && first.FirstByteSentNs <= first.SentNs) {
		t.Errorf("times out of order: %+v", first)
	}
	gen := val(t, fams, "vllm:generation_tokens_total", map[string]string{"engine": "0"})
	if first.Truth.Sets[0].Counters.GenerationTokens != gen {
		t.Errorf("truth log carries %v generated tokens, body %v", first.Truth.Sets[0].Counters.GenerationTokens, gen)
	}
	if first.Truth.At != first.Offset {
		t.Errorf("truth offset %v, render offset %v", first.Truth.At, first.Offset)
	}
}

// A request received during a hang is held until the hang ends.
func TestServeHang(t *testing.T) {
	srv := startServer(t, serverScenario(t, "[[engine.event]]\nat = \"0s\"\nkind = \"hang\"\nfor = \"400ms\"\n"), nil)
	resp, body := get(t, srv.Targets()[0].MetricsURL)
	if since := time.Since(srv.Start()); resp.StatusCode != 200 || since < 400*time.Millisecond {
		t.Errorf("hang: status %d after %v, want 200 after 400ms", resp.StatusCode, since)
	}
	tr := parseBody(t, body)
	// The other engine is not affected.
	if resp, _ := get(t, srv.Targets()[1].MetricsURL); resp.StatusCode != 200 {
		t.Errorf("llama.cpp status %d", resp.StatusCode)
	}
	var ent LogEntry
	for _, e := range closedLog(t, srv) {
		if e.Engine == "v" {
			ent = e
		}
	}
	if ent.Behaviour != EventHang || ent.Offset < 400*time.Millisecond {
		t.Errorf("log entry %+v", ent)
	}
	if g := val(t, tr, "vllm:generation_tokens_total", map[string]string{"engine": "0"}); g != ent.Truth.Sets[0].Counters.GenerationTokens || g < 400 {
		t.Errorf("generated %v; truth %+v", g, ent.Truth.Sets[0].Counters)
	}
}

func TestServeStatus(t *testing.T) {
	srv := startServer(t, serverScenario(t, "[[engine.event]]\nat = \"0s\"\nkind = \"status\"\ncode = 503\nfor = \"1m\"\n"), nil)
	resp, body := get(t, srv.Targets()[0].MetricsURL)
	if resp.StatusCode != 503 || !strings.Contains(string(body), "Service Unavailable") {
		t.Errorf("status %d body %q", resp.StatusCode, body)
	}
	if ent := closedLog(t, srv)[0]; ent.Status != 503 || ent.Behaviour != EventStatus || ent.Truth != nil {
		t.Errorf("log entry %+v", ent)
	}
}

// A stale body is rendered at receipt and sent after the delay.
func TestServeStale(t *testing.T) {
	srv := startServer(t, serverScenario(t, "[[engine.event]]\nat = \"0s\"\nkind = \"stale\"\ndelay = \"300ms\"\nfor = \"1m\"\n"), nil)
	t0 := time.Now()
	resp, body := get(t, srv.Targets()[0].MetricsURL, "Accept-Encoding", "gzip")
	if el := time.Since(t0); resp.StatusCode != 200 || el < 300*time.Millisecond {
		t.Errorf("stale: status %d after %v", resp.StatusCode, el)
	}
	if len(body) == 0 {
		t.Fatal("empty body")
	}
	ent := closedLog(t, srv)[0]
	if ent.Behaviour != EventStale || time.Duration(ent.FirstByteSentNs-ent.RenderedNs) < 300*time.Millisecond ||
		time.Duration(ent.RenderedNs-ent.ReceivedNs) > 100*time.Millisecond {
		t.Errorf("stale log entry: render after %v, first byte %v after render",
			time.Duration(ent.RenderedNs-ent.ReceivedNs), time.Duration(ent.FirstByteSentNs-ent.RenderedNs))
	}
	if ent.Offset > 100*time.Millisecond {
		t.Errorf("stale body rendered for offset %v, want the receipt", ent.Offset)
	}
}

// A slow body starts at once and trickles out over the delay.
func TestServeSlow(t *testing.T) {
	srv := startServer(t, serverScenario(t, "[[engine.event]]\nat = \"0s\"\nkind = \"slow\"\ndelay = \"300ms\"\nfor = \"1m\"\n"), nil)
	resp, body := get(t, srv.Targets()[0].MetricsURL)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	parseBody(t, body)
	ent := closedLog(t, srv)[0]
	if ent.Behaviour != EventSlow || time.Duration(ent.SentNs-ent.FirstByteSentNs) < 250*time.Millisecond ||
		time.Duration(ent.FirstByteSentNs-ent.ReceivedNs) > 100*time.Millisecond || ent.WireBytes != len(body) {
		t.Errorf("slow log entry: first byte after %v, last %v later, %d bytes",
			time.Duration(ent.FirstByteSentNs-ent.ReceivedNs), time.Duration(ent.SentNs-ent.FirstByteSentNs), ent.WireBytes)
	}
}

// Closing the server abandons held requests at once; cancelling the
// context stops it too.
func TestServeStop(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := Serve(ctx, serverScenario(t, "[[engine.event]]\nat = \"0s\"\nkind = \"hang\"\nfor = \"1m\"\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := rawClient.Get(srv.Targets()[0].MetricsURL)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(150 * time.Millisecond) // let the request reach the handler and be held
	t0 := time.Now()
	cancel()
	select {
	case <-srv.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("server did not stop")
	}
	<-done
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("stopping took %v", el)
	}
	log := srv.Log()
	if len(log) != 1 || log[0].Error == "" || log[0].Status != 0 {
		t.Errorf("log %+v, want the abandoned request with an error", log)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
}

func TestServeRejectsNonLoopback(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "192.0.2.1", "example.com"} {
		if srv, err := Serve(t.Context(), serverScenario(t, ""), Options{Host: host}); err == nil {
			srv.Close()
			t.Errorf("host %s accepted", host)
		}
	}
}

// Concurrent scrapes are all logged, each as one line of the truth log.
func TestServeConcurrentLog(t *testing.T) {
	truth := &syncBuffer{}
	srv := startServer(t, serverScenario(t, ""), truth)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			resp, err := rawClient.Get(srv.Targets()[i%2].MetricsURL)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(truth.String()))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var e LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
	}
	if n != 16 || len(srv.Log()) != 16 {
		t.Errorf("%d truth lines, %d entries, want 16", n, len(srv.Log()))
	}
}

// Options.Listen puts an engine at the address given (the others at ports
// the system picks); a name not in the scenario or a host not loopback is
// refused, naming it, before anything listens.
func TestServeListenFixedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv, err := Serve(t.Context(), serverScenario(t, ""), Options{Listen: map[string]string{"v": addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tg := srv.Targets()
	if tg[0].Name != "v" || tg[0].URL != "http://"+addr || tg[1].URL == tg[0].URL {
		t.Fatalf("targets %+v, want v at %s", tg, addr)
	}
	resp, err := rawClient.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "vllm:") {
		t.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	for listen, want := range map[string]string{"nope=127.0.0.1:0": `no engine "nope" in the scenario (its engines: v, `,
		"v=10.0.0.1:8000": `"10.0.0.1" is not a loopback address`, "v=8000": "want HOST:PORT"} {
		name, a, _ := strings.Cut(listen, "=")
		if srv, err := Serve(t.Context(), serverScenario(t, ""), Options{Listen: map[string]string{name: a}}); err == nil {
			srv.Close()
			t.Errorf("listen %s accepted", listen)
		} else if !strings.Contains(err.Error(), want) {
			t.Errorf("listen %s: %v, want %q", listen, err, want)
		}
	}
}
