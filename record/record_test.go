package record

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

const exposition = "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\"} 42\n"

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func target(u string, timeout time.Duration) *Target {
	return &Target{Name: "t", URL: u, Interval: Duration(time.Second), Timeout: Duration(timeout)}
}

func do(t *testing.T, h http.HandlerFunc, timeout time.Duration, maxBody int64) capture.Scrape {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	return scrape(context.Background(), newClient(), NewClock(), request{target: target(srv.URL+"/metrics", timeout),
		endpoint: capture.EndpointMetrics, url: srv.URL + "/metrics", scheduled: time.Now(), maxBody: maxBody, runID: "R"})
}

// The request asks for text 0.0.4 and gzip; a gzip body is stored
// decompressed, byte-exact, with its wire size and encoding.
func TestScrapeGzip(t *testing.T) {
	var accept, enc string
	s := do(t, func(w http.ResponseWriter, r *http.Request) {
		accept, enc = r.Header.Get("Accept"), r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(gz([]byte(exposition)))
	}, time.Second, 1<<20)
	if !strings.HasPrefix(accept, "text/plain;version=0.0.4") || enc != "gzip" {
		t.Errorf("request asked Accept %q, Accept-Encoding %q", accept, enc)
	}
	if s.Outcome != capture.OutcomeOK || string(s.Body) != exposition || *s.ContentEncoding != "gzip" || *s.WireBytes != int64(len(gz([]byte(exposition)))) {
		t.Fatalf("row %+v", s)
	}
	if !(s.ScheduledNs <= s.StartNs && s.StartNs <= s.FirstByteNs && s.FirstByteNs <= s.EndNs) {
		t.Errorf("times out of order: %d %d %d %d", s.ScheduledNs, s.StartNs, s.FirstByteNs, s.EndNs)
	}
	if len(s.Samples) != 1 || s.Samples[0].Value != 42 {
		t.Errorf("samples %+v", s.Samples)
	}
}

// A decompression bomb stops at the cap: an error row, nothing stored, no
// memory blow-up.
func TestScrapeDecompressionBomb(t *testing.T) {
	bomb := gz(bytes.Repeat([]byte("a 1\n"), 1<<20)) // 4 MiB inflated, a few KiB on the wire
	s := do(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	}, time.Second, 64<<10)
	if s.Outcome != capture.OutcomeError || s.Body != nil || !strings.Contains(*s.Error, "decompressed body exceeds the 65536-byte cap") {
		t.Fatalf("row outcome %s error %v body %d", s.Outcome, s.Error, len(s.Body))
	}
}

func TestScrapeBodyOverCap(t *testing.T) {
	s := do(t, func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("a 1\n"), 100)) }, time.Second, 100)
	if s.Outcome != capture.OutcomeError || !strings.Contains(*s.Error, "body exceeds the 100-byte cap") {
		t.Fatalf("%+v", s)
	}
}

// A non-200 answer is an http_error row that keeps the body.
func TestScrapeHTTPError(t *testing.T) {
	s := do(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "engine overloaded", http.StatusServiceUnavailable)
	}, time.Second, 1<<20)
	if s.Outcome != capture.OutcomeHTTPError || *s.Status != 503 || string(s.Body) != "engine overloaded\n" || s.Samples != nil {
		t.Fatalf("%+v", s)
	}
}

// TensorRT-LLM serves JSON at /metrics: stored byte-exact, with a parse
// error that names the format.
func TestScrapeJSONBody(t *testing.T) {
	js := `[{"Active Request Count":1,"Iteration Counter":7}]`
	s := do(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(js))
	}, time.Second, 1<<20)
	if s.Outcome != capture.OutcomeParseError || string(s.Body) != js || !strings.Contains(*s.ParseError, "body is JSON") {
		t.Fatalf("%+v", s)
	}
}

func TestScrapeTimeoutAndRefused(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := do(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, 100*time.Millisecond, 1<<20)
	if s.Outcome != capture.OutcomeError || !strings.Contains(*s.Error, "timeout after 100ms") || s.FirstByteNs == 0 {
		t.Fatalf("hung body: %+v", s)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	r := scrape(context.Background(), newClient(), NewClock(), request{target: target(u, time.Second), endpoint: capture.EndpointMetrics,
		url: u + "/metrics", scheduled: time.Now(), maxBody: 1 << 20})
	if r.Outcome != capture.OutcomeError || !strings.Contains(*r.Error, "refused") || r.Status != nil {
		t.Fatalf("refused: %+v", r)
	}
}

func TestScrapeSendsHeadersAndToken(t *testing.T) {
	t.Setenv("LLMREC_TEST_TOKEN", "tok")
	var auth, bench string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, bench = r.Header.Get("Authorization"), r.Header.Get("X-Bench")
		w.Write([]byte(exposition))
	}))
	defer srv.Close()
	tg := target(srv.URL, time.Second)
	tg.BearerTokenEnv = "LLMREC_TEST_TOKEN"
	tg.Headers = map[string]string{"X-Bench": "run-7"}
	scrape(context.Background(), newClient(), NewClock(), request{target: tg, endpoint: capture.EndpointMetrics, url: srv.URL, scheduled: time.Now(), maxBody: 1 << 20})
	if auth != "Bearer tok" || bench != "run-7" {
		t.Fatalf("auth %q bench %q", auth, bench)
	}
}

func readRows(t *testing.T, dir string) []capture.Scrape {
	t.Helper()
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rows []capture.Scrape
	for _, s := range r.Segments {
		if err := capture.ReadSegment(s, func(x *capture.Scrape) error {
			c := *x
			c.Body = bytes.Clone(x.Body)
			rows = append(rows, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// A hung target gets missed ticks, never a late fire, and never delays a
// healthy one; extra endpoints are captured on the cadence or once; the
// manifest says what each engine told about itself.
func TestRunSchedulesIndependently(t *testing.T) {
	var hangs atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		hangs.Add(1)
		time.Sleep(350 * time.Millisecond)
		w.Write([]byte(exposition))
	}))
	defer slow.Close()
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/version":
			w.Write([]byte(`{"version":"0.10.1"}`))
		case "/slots":
			w.Write([]byte(`[{"id":0}]`))
		case "/props":
			w.Write([]byte(`{"total_slots":4}`))
		default:
			w.Write([]byte(exposition))
		}
	}))
	defer fast.Close()
	dir := t.TempDir()
	cfg := &Config{Interval: Duration(100 * time.Millisecond), Timeout: Duration(time.Second), Targets: []Target{
		{Name: "fast", URL: fast.URL + "/metrics", Engine: "llamacpp", Endpoints: []Endpoint{{Path: "/slots"}, {Path: "/props", Once: true}}},
		{Name: "slow", URL: slow.URL + "/metrics"},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	s, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 1050 * time.Millisecond, Progress: &progress, ProgressEvery: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, dir)
	by := map[string][]capture.Scrape{}
	for _, r := range rows {
		by[r.Target+" "+r.Endpoint] = append(by[r.Target+" "+r.Endpoint], r)
	}
	ticks := len(by["fast metrics"])
	if ticks < 10 || ticks > 11 {
		t.Fatalf("fast target has %d rows for ~11 ticks", ticks)
	}
	// A tick the whole recorder fired late (the host stalled it: "recorder
	// stalled") is the recorder's honest answer on a loaded machine, not
	// one target holding up another; too many of them and the run shows
	// nothing about independence.
	hostStalled := func(r capture.Scrape) bool {
		return r.Outcome == capture.OutcomeMissed && r.Error != nil && strings.Contains(*r.Error, "recorder stalled")
	}
	var stalls int
	for _, r := range rows {
		if hostStalled(r) {
			stalls++
		}
	}
	if stalls > ticks/3 {
		t.Skipf("the host stalled the recorder at %d ticks of ~%d: too loaded to show scheduling", stalls, ticks)
	}
	for i, r := range by["fast metrics"] {
		if hostStalled(r) {
			continue
		}
		if r.Seq != int64(i) || r.Outcome != capture.OutcomeOK {
			t.Errorf("fast row %d: seq %d outcome %s", i, r.Seq, r.Outcome)
		}
		if lag := time.Duration(r.StartNs - r.ScheduledNs); lag >= lateTolerance(100*time.Millisecond) {
			t.Errorf("fast seq %d started %s after its tick", r.Seq, lag)
		}
	}
	if len(by["fast /slots"]) != ticks || len(by["fast /props"]) != 1 || string(by["fast /props"][0].Body) != `{"total_slots":4}` {
		t.Errorf("extra endpoints: %d /slots, %d /props", len(by["fast /slots"]), len(by["fast /props"]))
	}
	var missed, fired int
	for i, r := range by["slow metrics"] {
		if r.Seq != int64(i) {
			t.Fatalf("slow seq %d at row %d: a tick was lost or duplicated", r.Seq, i)
		}
		switch r.Outcome {
		case capture.OutcomeMissed:
			missed++
			if hostStalled(r) {
				continue
			}
			if !strings.Contains(*r.Error, "still running") {
				t.Errorf("missed row error %q", *r.Error)
			}
		case capture.OutcomeOK:
			fired++
			if lag := time.Duration(r.StartNs - r.ScheduledNs); lag > 50*time.Millisecond {
				t.Errorf("slow seq %d fired %s late", r.Seq, lag)
			}
		}
	}
	if missed < 5 || int64(fired) != hangs.Load() {
		t.Errorf("slow target: %d missed, %d fired, server saw %d", missed, fired, hangs.Load())
	}
	if len(s.Targets) != 2 || s.Targets[1].Missed != int64(missed) {
		t.Errorf("summary %+v", s.Targets)
	}
	r, _ := capture.Open(dir)
	m := r.Manifests[0]
	if m.End == nil || len(m.Targets) != 2 || m.Targets[0].Engine != "llamacpp" {
		t.Fatalf("manifest %+v", m)
	}
	var sawVersion bool
	for _, e := range m.Engines["fast"] {
		var c bytes.Buffer
		json.Compact(&c, e.JSON)
		if e.Path == "/version" && c.String() == `{"version":"0.10.1"}` {
			sawVersion = true
		}
	}
	if !sawVersion {
		t.Errorf("engine info %+v", m.Engines["fast"])
	}
	if !strings.Contains(progress.String(), "slow") || !strings.Contains(progress.String(), "missed") {
		t.Errorf("progress output %q", progress.String())
	}
}

func TestRunNeedsTargets(t *testing.T) {
	if _, err := Run(context.Background(), &Config{}, Options{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "--target") {
		t.Fatalf("%v", err)
	}
}

func TestStatusLine(t *testing.T) {
	l := StatusLine(TargetStats{Name: "a", OK: 3, Failed: 1, LastError: strings.Repeat("x", 100), BodyBytes: 3 << 20})
	if !strings.Contains(l, "down") || !strings.Contains(l, "3.0 MiB") || !strings.Contains(l, "...") {
		t.Errorf("%q", l)
	}
}

// Disk full stops the run with a clear error; segments closed before it
// stay intact. Needs root to mount a small tmpfs.
func TestRunDiskFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	os.MkdirAll(dir, 0o755)
	if err := mountTmpfs(dir, "1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	defer unmount(dir)
	// Incompressible bodies, so closed segments fill the disk too.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noise := make([]byte, 16<<10)
		rand.Read(noise)
		fmt.Fprintf(w, "# %x\n%s", noise, exposition)
	}))
	defer srv.Close()
	cfg := &Config{Interval: Duration(20 * time.Millisecond), Rotate: Duration(200 * time.Millisecond),
		Targets: []Target{{Name: "a", URL: srv.URL + "/metrics"}}}
	cfg.Validate()
	_, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("error %v, want no space left on device", err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(segs) == 0 {
		t.Skip("the disk filled before the first segment closed")
	}
	for _, s := range segs {
		if err := capture.ReadSegment(s, func(*capture.Scrape) error { return nil }); err != nil {
			t.Errorf("segment closed before the disk filled is damaged: %v", err)
		}
	}
}

// A page over the configured series limit is recorded unparsed, with the
// limit named in its parse error; the recording goes on.
func TestRunStoresPageOverLimitUnparsed(t *testing.T) {
	var page bytes.Buffer
	page.WriteString("# TYPE g gauge\n")
	for i := range 50 {
		fmt.Fprintf(&page, "g{i=\"%d\"} %d\n", i, i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page.Bytes()) }))
	defer srv.Close()
	dir := t.TempDir()
	cfg := &Config{Interval: Duration(100 * time.Millisecond), MaxSeries: 10,
		Targets: []Target{{Name: "big", URL: srv.URL + "/metrics"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 250 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, dir)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range rows {
		want := "too many series: 50 > 10 (max_series); body stored unparsed"
		if r.Outcome != capture.OutcomeParseError || r.ParseError == nil || *r.ParseError != want || !bytes.Equal(r.Body, page.Bytes()) {
			t.Errorf("seq %d: %s %v, body kept %v", r.Seq, r.Outcome, r.ParseError, bytes.Equal(r.Body, page.Bytes()))
		}
	}
}

// A target that sends 6.8 MB of response headers (what made a segment its
// readers refused) has them cut at capture.MaxHeaderBytes, with the note
// that says so; its body is kept and parses, and the row passes through the
// writer into a segment every reader reads. The engine's own short headers
// (a content type, a process start) outlast a flood of long ones that sort
// before them.
func TestScrapeHeadersOverTheCapAreCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 68_000 {
			w.Header().Set(fmt.Sprintf("A-Filler-%06d", i), strings.Repeat("v", 80))
		}
		w.Header().Set("Process-Start-Time-Unix", "31835962853")
		w.Write([]byte(exposition))
	}))
	defer srv.Close()
	s := scrape(context.Background(), newClient(), NewClock(), request{target: target(srv.URL, 5*time.Second), endpoint: capture.EndpointMetrics,
		url: srv.URL + "/metrics", scheduled: time.Now(), maxBody: 1 << 20})
	if s.Outcome != capture.OutcomeOK || s.Headers == nil {
		t.Fatalf("outcome %s, error %v, headers %v", s.Outcome, s.Error, s.Headers != nil)
	}
	if len(*s.Headers) > capture.MaxHeaderBytes || !strings.Contains(*s.Headers, capture.HeadersOverCap) {
		t.Fatalf("headers of %d bytes (cap %d), note %v", len(*s.Headers), capture.MaxHeaderBytes, strings.Contains(*s.Headers, capture.HeadersOverCap))
	}
	if string(s.Body) != exposition {
		t.Fatalf("body %q", s.Body)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(*s.Headers), &m); err != nil || m["Content-Type"] == "" || m["Process-Start-Time-Unix"] == "" {
		t.Fatalf("headers do not decode, or lost Content-Type or Process-Start-Time-Unix: %v %q", err, (*s.Headers)[max(0, len(*s.Headers)-400):])
	}
}
