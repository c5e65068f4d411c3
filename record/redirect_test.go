package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// seen records the requests a loopback server received.
type seen struct {
	mu   sync.Mutex
	reqs []http.Header
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.Header.Clone())
}

func (s *seen) all() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.reqs...)
}

// redirectSetup is a target that redirects /cross to another port,
// /host to the same port under the name localhost, and /same to its own
// /final; the other server and /final count what reached them.
func redirectSetup(t *testing.T) (origin string, other, final *seen) {
	other, final = &seen{}, &seen{}
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		w.Write([]byte(exposition))
	}))
	t.Cleanup(o.Close)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
		switch r.URL.Path {
		case "/cross", "/version":
			http.Redirect(w, r, o.URL+"/metrics?token=LOCSECRET", http.StatusFound)
		case "/host":
			http.Redirect(w, r, "http://localhost"+port+"/final?token=LOCSECRET", http.StatusTemporaryRedirect)
		case "/same":
			http.Redirect(w, r, "/final", http.StatusMovedPermanently)
		case "/final":
			final.add(r)
			w.Write([]byte(exposition))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, other, final
}

func redirectScrape(t *testing.T, u string, follow bool) capture.Scrape {
	t.Helper()
	tg := target(u, time.Second)
	tg.FollowRedirects = &follow
	tg.Headers = map[string]string{"X-Api-Key": "KEYSECRET"}
	t.Setenv("LLMREC_REDIRECT_TOKEN", "BEARERSECRET")
	tg.BearerTokenEnv = "LLMREC_REDIRECT_TOKEN"
	return scrape(context.Background(), newClient(), NewClock(), request{target: tg, endpoint: capture.EndpointMetrics,
		url: u, scheduled: time.Now(), maxBody: 1 << 20, runID: "R"})
}

// By default no redirect is followed, not even to the same origin: the
// row is an http_error with the status and the redacted location, and no
// body.
func TestRedirectNotFollowedByDefault(t *testing.T) {
	origin, other, final := redirectSetup(t)
	for _, path := range []string{"/cross", "/host", "/same"} {
		s := redirectScrape(t, origin+path+"?token=URLSECRET", false)
		if s.Outcome != capture.OutcomeHTTPError || s.Status == nil || *s.Status/100 != 3 || s.Error == nil ||
			!strings.Contains(*s.Error, "not followed: follow_redirects is off") || len(s.Body) != 0 {
			t.Errorf("%s: row %+v error %v", path, s, deref(s.Error))
		}
		if s.Error != nil && (strings.Contains(*s.Error, "LOCSECRET") || strings.Contains(s.URL, "URLSECRET")) {
			t.Errorf("%s: a secret in the row: url %s, error %s", path, s.URL, *s.Error)
		}
	}
	if n := len(other.all()) + len(final.all()); n != 0 {
		t.Errorf("%d requests followed a redirect", n)
	}
}

// With follow_redirects, a redirect to another port or another host name
// (localhost for 127.0.0.1) is still not followed, so no credential
// reaches it; one to the same origin is, without a Referer.
func TestFollowRedirectsSameOriginOnly(t *testing.T) {
	origin, other, final := redirectSetup(t)
	for _, path := range []string{"/cross", "/host"} {
		s := redirectScrape(t, origin+path, true)
		if s.Outcome != capture.OutcomeHTTPError || s.Error == nil || !strings.Contains(*s.Error, "another origin") ||
			strings.Contains(*s.Error, "LOCSECRET") || !strings.Contains(*s.Error, "token=<redacted>") {
			t.Errorf("%s: row outcome %s error %v", path, s.Outcome, deref(s.Error))
		}
	}
	if n := len(other.all()) + len(final.all()); n != 0 {
		t.Fatalf("%d requests reached another origin", n)
	}
	s := redirectScrape(t, origin+"/same?token=URLSECRET", true)
	if s.Outcome != capture.OutcomeOK || string(s.Body) != exposition {
		t.Fatalf("same-origin redirect not followed: %s %v", s.Outcome, deref(s.Error))
	}
	got := final.all()
	if len(got) != 1 || got[0].Get("Referer") != "" || got[0].Get("X-Api-Key") != "KEYSECRET" ||
		got[0].Get("Authorization") != "Bearer BEARERSECRET" {
		t.Errorf("the same origin got headers %v; want the credentials and no Referer", got)
	}
}

// The engine-information fetch obeys the same policy.
func TestEngineInfoRedirectNotFollowed(t *testing.T) {
	origin, other, _ := redirectSetup(t)
	for _, follow := range []bool{false, true} {
		tg := *target(origin+"/metrics", time.Second)
		tg.FollowRedirects = &follow
		tg.Headers = map[string]string{"X-Api-Key": "KEYSECRET"}
		info := fetchInfo(context.Background(), newClient(), &tg, "/version")
		if info.Status != http.StatusFound || !strings.Contains(info.Error, "not followed") || strings.Contains(info.Error, "LOCSECRET") {
			t.Errorf("follow %v: /version info %+v", follow, info)
		}
	}
	if n := len(other.all()); n != 0 {
		t.Errorf("%d engine-info requests reached another origin", n)
	}
}

// Transport errors carry no URL secret: a token alone as user information
// and query values, which Go's client leaves in its error text.
func TestScrapeErrorRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	for _, u := range []string{"http://TOKSECRET@" + host + "/metrics?token=QSECRET", "http://TOKSECRET@" + refused + "/metrics?sig=QSECRET"} {
		tg := target(u, 100*time.Millisecond)
		s := scrape(context.Background(), newClient(), NewClock(), request{target: tg, endpoint: capture.EndpointMetrics,
			url: u, scheduled: time.Now(), maxBody: 1 << 20, runID: "R"})
		if s.Error == nil || strings.Contains(*s.Error, "SECRET") || strings.Contains(s.URL, "SECRET") ||
			!strings.Contains(*s.Error, "=<redacted>") {
			t.Errorf("%s: url %s error %v", u, s.URL, deref(s.Error))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// An engine-information answer over MaxInfoBytes is not stored: a hostile
// target cannot grow the manifest (1 MiB on each of four paths was written
// whole, and cut silently at 1 MiB past that).
func TestEngineInfoCapped(t *testing.T) {
	big := strings.Repeat("x", MaxInfoBytes+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/props" {
			fmt.Fprint(w, big)
			return
		}
		fmt.Fprint(w, `{"version":"0.1"}`)
	}))
	defer srv.Close()
	tg := target(srv.URL+"/metrics", time.Second)
	info := fetchInfo(context.Background(), newClient(), tg, "/props")
	if info.Text != "" || info.JSON != nil || !strings.Contains(info.Error, "cap for engine information") {
		t.Errorf("/props of %d bytes: text %d bytes, json %d bytes, error %q", len(big), len(info.Text), len(info.JSON), info.Error)
	}
	if info := fetchInfo(context.Background(), newClient(), tg, "/version"); string(info.JSON) != `{"version":"0.1"}` || info.Error != "" {
		t.Errorf("/version: %+v", info)
	}
}

// A target's engine-information paths are asked one after another over one
// connection: asked together they opened a connection each, kept idle for
// the run (four a target, 4,000 at 1,000 targets). At most infoFetches
// targets are asked at a time.
func TestEngineInfoOneConnectionATarget(t *testing.T) {
	const n = 3 * infoFetches
	var mu sync.Mutex
	conns := map[string]int{} // new connections by server
	inFlight, most := 0, 0
	var targets []Target
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // long enough for requests asked together to overlap
			mu.Lock()
			inFlight--
			mu.Unlock()
			fmt.Fprint(w, `{"version":"0.1"}`)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				mu.Lock()
				conns[name]++
				mu.Unlock()
			}
		}
		srv.Start()
		defer srv.Close()
		targets = append(targets, *target(srv.URL+"/metrics", time.Second))
		targets[i].Name = name
	}
	client := newClient()
	clients := make([]*http.Client, n)
	for i := range clients {
		clients[i] = client
	}
	out := engineInfo(context.Background(), clients, targets, nil)
	if len(out) != n {
		t.Fatalf("engine information of %d targets, want %d", len(out), n)
	}
	for _, tg := range targets {
		for _, info := range out[tg.Name] {
			if string(info.JSON) != `{"version":"0.1"}` {
				t.Errorf("%s %s: %+v", tg.Name, info.Path, info)
			}
		}
		if conns[tg.Name] != 1 {
			t.Errorf("%s: %d connections for its %d paths, want 1", tg.Name, conns[tg.Name], len(engineInfoPaths))
		}
	}
	if most > infoFetches {
		t.Errorf("%d requests in flight at once, want at most %d", most, infoFetches)
	}
}

// A target's engine information is asked after its first scrape has
// finished, not beside it: at 1,000 targets the requests then follow the
// first ticks over the interval, each on the connection its scrape left
// idle.
func TestEngineInfoAfterFirstScrape(t *testing.T) {
	var mu sync.Mutex
	var scraped time.Time // when the first /metrics answer was written
	var asked []time.Time // when each information request arrived
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			mu.Lock()
			asked = append(asked, time.Now())
			mu.Unlock()
			fmt.Fprint(w, `{"version":"0.1"}`)
			return
		}
		time.Sleep(50 * time.Millisecond) // a first scrape long enough for a request beside it to arrive
		fmt.Fprint(w, "up 1\n")
		mu.Lock()
		if scraped.IsZero() {
			scraped = time.Now()
		}
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := &Config{Interval: Duration(time.Second), Timeout: Duration(time.Second),
		Targets: []Target{{Name: "t", URL: srv.URL + "/metrics"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 400 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != len(engineInfoPaths) {
		t.Fatalf("%d information requests, want %d", len(asked), len(engineInfoPaths))
	}
	for i, at := range asked {
		if at.Before(scraped) {
			t.Errorf("information request %d arrived %v before the first scrape's answer", i, scraped.Sub(at))
		}
	}
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	infos := r.Manifests[0].Engines["t"]
	if len(infos) != len(engineInfoPaths) {
		t.Fatalf("manifest's engine information %+v", infos)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, infos[0].JSON); err != nil || c.String() != `{"version":"0.1"}` {
		t.Errorf("manifest's %s: %q", infos[0].Path, infos[0].JSON)
	}
}

// A target whose first scrape hangs holds no other target's engine
// information: each target's is asked when its own first scrape has
// finished.
func TestEngineInfoNotHeldByAHungTarget(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			<-release
		}
		fmt.Fprint(w, `{"version":"hung"}`)
	}))
	defer hung.Close()
	defer close(release)
	fast := infoServer("fast")
	defer fast.Close()
	cfg := &Config{Interval: Duration(100 * time.Millisecond), Timeout: Duration(5 * time.Second),
		Targets: []Target{{Name: "hung", URL: hung.URL + "/metrics"}, {Name: "fast", URL: fast.URL + "/metrics"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	infos := r.Manifests[0].Engines["fast"]
	if len(infos) != len(engineInfoPaths) {
		t.Fatalf("fast target's engine information %+v", infos)
	}
	for _, info := range infos {
		var c bytes.Buffer
		if err := json.Compact(&c, info.JSON); err != nil || c.String() != `{"version":"fast"}` {
			t.Errorf("fast target's %s: %d %q %s (asked after the hung target's first scrape?)", info.Path, info.Status, info.Error, info.JSON)
		}
	}
}

// The manifest has the engine information once every target has
// answered, while the run goes on (a live reader sees the model), not at
// the run's end.
func TestEngineInfoWrittenWhileRecording(t *testing.T) {
	srv := infoServer("0.1")
	defer srv.Close()
	cfg := &Config{Interval: Duration(100 * time.Millisecond), Timeout: Duration(time.Second),
		Targets: []Target{{Name: "a", URL: srv.URL + "/metrics"}, {Name: "b", URL: srv.URL + "/metrics?b"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 3 * time.Second})
		done <- err
	}()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("the run ended (%v) before its manifest had the engine information", err)
		case <-deadline:
			t.Fatal("no engine information in the manifest 2 s into a 3 s run")
		case <-time.After(20 * time.Millisecond):
		}
		paths, _ := filepath.Glob(filepath.Join(dir, "*.manifest.json"))
		if len(paths) == 0 {
			continue
		}
		data, err := os.ReadFile(paths[0])
		if err != nil {
			continue
		}
		var m capture.Manifest
		if json.Unmarshal(data, &m) == nil && len(m.Engines["a"]) == len(engineInfoPaths) && len(m.Engines["b"]) == len(engineInfoPaths) {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// infoServer answers /metrics with one sample and every other path (the
// engine information) with {"version":VERSION}.
func infoServer(version string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			fmt.Fprint(w, "up 1\n")
			return
		}
		fmt.Fprintf(w, `{"version":%q}`, version)
	}))
}
