package main

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// secretShapes are the ways a secret reaches the recorder, each with a
// value that must appear in no output.
var secretShapes = []struct{ shape, value string }{
	{"userinfo token alone", "tokUSERINFO1"},
	{"userinfo user", "uSERNAME2"},
	{"userinfo password", "pwUSERPASS3"},
	{"?token=", "qTOKEN4"},
	{"?sig=", "qSIG5"},
	{"?pass=", "qPASS6"},
	{"?x= plain value", "qPLAIN7"},
	{"X-Credential", "hCRED8"},
	{"X-Signature", "hSIG9"},
	{"X-Session-Id", "hSESS10"},
	{"X-Pass", "hPASS11"},
	{"Authorization", "hAUTH12"},
	{"X-Api-Key", "hAPIKEY13"},
	{"bearer_token_env", "envBEARER14"},
	{"redirect Location", "locTOKEN15"},
}

const secretEnv = "LLMREC_REDACT_TEST_TOKEN"

// secretHeaders are sent by every target of the test.
const secretHeaders = `headers = { "X-Credential" = "hCRED8", "X-Signature" = "hSIG9", "X-Session-Id" = "hSESS10", ` +
	`"X-Pass" = "hPASS11", "Authorization" = "Basic hAUTH12", "X-Api-Key" = "hAPIKEY13", "Accept-Language" = "en" }`

// outputs collects what llmrec wrote or printed, by name.
type outputs map[string]string

// assertNoSecret fails for every secret found in every output.
func (o outputs) assertNoSecret(t *testing.T) {
	t.Helper()
	for name, text := range o {
		for _, s := range secretShapes {
			if i := strings.Index(text, s.value); i >= 0 {
				t.Errorf("%s holds the %s secret %q: %q", name, s.shape, s.value, text[max(0, i-80):min(len(text), i+40)])
			}
		}
	}
}

// refusedAddr is a loopback port nothing listens on.
func refusedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Every secret shape of a recording's config, against targets that fail in
// every way (refused, 404, hung past the timeout, redirecting to another
// origin), is absent from every output: the Parquet columns read back, the
// manifest, the journal's bytes during the run, record's stdout and
// stderr, inspect, analyze's text and JSON, render's HTML and Markdown.
func TestNoSecretInAnyOutput(t *testing.T) {
	t.Setenv(secretEnv, "envBEARER14")
	var elsewhere atomic.Int64 // requests that reached the redirect's other origin
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte("# TYPE x counter\nx 1\n"))
	}))
	defer other.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", other.URL+"/metrics?token=locTOKEN15")
		w.WriteHeader(http.StatusFound)
	}))
	defer redirect.Close()
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

	targets := []struct{ name, url string }{
		{"refused", "http://tokUSERINFO1@" + refusedAddr(t) + "/metrics?token=qTOKEN4&sig=qSIG5"},
		{"notfound", "http://uSERNAME2:pwUSERPASS3@" + host(notFound) + "/metrics?pass=qPASS6&x=qPLAIN7"},
		{"hung", "http://tokUSERINFO1@" + host(hang) + "/metrics?token=qTOKEN4"},
		{"redirect", "http://uSERNAME2@" + host(redirect) + "/metrics?sig=qSIG5"},
	}
	var cfg strings.Builder
	cfg.WriteString("interval = \"200ms\"\ntimeout = \"150ms\"\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "[[target]]\nname = %q\nurl = %q\nbearer_token_env = %q\n%s\n", tg.name, tg.url, secretEnv, secretHeaders)
	}
	work := t.TempDir()
	cfgPath := filepath.Join(work, "llmrec.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "run")

	// The journal is read while the recording runs: it is gone once the
	// last segment is sealed.
	var journal bytes.Buffer
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), &stdout, &stderr, []string{"record", "--out", dir, "--config", cfgPath, "--duration", "1500ms"})
	}()
	var recErr error
	for polling := true; polling; {
		select {
		case recErr = <-done:
			polling = false
		case <-time.After(50 * time.Millisecond):
			paths, _ := filepath.Glob(filepath.Join(dir, "*.journal"))
			for _, p := range paths {
				b, _ := os.ReadFile(p)
				journal.Write(b)
			}
		}
	}
	// No target answers: record says so, exit 1, and its error text is an
	// output like the others.
	if recErr == nil || !strings.Contains(recErr.Error(), "4 of 4 target(s) never answered") {
		t.Fatalf("record: %v\n%s", recErr, stderr.String())
	}
	out := outputs{"record stdout": stdout.String(), "record stderr": stderr.String(), "record error": recErr.Error(), "journal": journal.String()}
	if !strings.Contains(out["journal"], "connection refused") {
		t.Fatalf("the journal was not caught with an error row (%d bytes read)", journal.Len())
	}

	// The Parquet columns, read back.
	var rows strings.Builder
	var redirects int
	segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range segs {
		err := capture.ReadSegment(p, func(s *capture.Scrape) error {
			b, _ := json.Marshal(s)
			rows.Write(b)
			rows.Write(s.Body)
			if s.Target == "redirect" && s.Status != nil && *s.Status == http.StatusFound {
				redirects++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out["parquet"] = rows.String()
	for _, want := range []string{"connection refused", "HTTP 404 Not Found", "timeout after 150ms", "not followed"} {
		if !strings.Contains(out["parquet"], want) {
			t.Errorf("the rows lack the error %q: the test would prove nothing", want)
		}
	}
	if redirects == 0 || elsewhere.Load() != 0 {
		t.Errorf("%d redirect rows, %d requests reached the other origin; want rows and none", redirects, elsewhere.Load())
	}
	manifests, _ := filepath.Glob(filepath.Join(dir, "*.manifest.json"))
	for _, p := range manifests {
		b, _ := os.ReadFile(p)
		out["manifest"] += string(b)
	}
	if !strings.Contains(out["manifest"], "Accept-Language\": \"en\"") || !strings.Contains(out["manifest"], "X-Api-Key\": \"\\u003credacted sha256:") {
		t.Errorf("manifest: harmless header not kept or secret one not digested:\n%s", out["manifest"])
	}
	readOutputs(t, dir, out)
	out.assertNoSecret(t)
}

// readOutputs adds what inspect, analyze and render make of dir.
func readOutputs(t *testing.T, dir string, out outputs) {
	t.Helper()
	work := t.TempDir()
	var err error
	if out["inspect"], _, err = runCLI("inspect", dir); err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if out["inspect --json"], _, err = runCLI("inspect", dir, "--json"); err != nil {
		t.Fatalf("inspect --json: %v", err)
	}
	js := filepath.Join(work, "a.json")
	if out["analyze"], _, err = runCLI("analyze", dir, "--quiet", "--json", js); err != nil {
		t.Fatalf("analyze: %v", err)
	}
	html, md := filepath.Join(work, "r.html"), filepath.Join(work, "r.md")
	if _, _, err = runCLI("render", dir, "--quiet", "-o", html, "--md", md); err != nil {
		t.Fatalf("render: %v", err)
	}
	for name, p := range map[string]string{"analyze --json": js, "report.html": html, "summary.md": md} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
}

// A recording made by a version that redacted less (secrets in the url
// and error columns, the manifest's config and targets) is read without
// them: inspect, analyze and render redact at the read boundary.
func TestOldRecordingReadWithoutSecrets(t *testing.T) {
	dir := t.TempDir()
	const run = "20260101T000000Z-00000000"
	w, err := capture.NewWriter(dir, run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	raw := "http://tokUSERINFO1@127.0.0.1:9/metrics?token=qTOKEN4&sig=qSIG5"
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	body := []byte("# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 1\n")
	for k := range int64(40) {
		s := capture.Scrape{RunID: run, Target: "old", Endpoint: capture.EndpointMetrics, URL: raw, Seq: k,
			ScheduledNs: start + k*int64(time.Second), StartNs: start + k*int64(time.Second), EndNs: start + k*int64(time.Second) + 1e6}
		switch {
		case k%4 == 3:
			msg := `Get "` + raw + `": dial tcp 127.0.0.1:9: connect: connection refused`
			s.Outcome, s.Error = capture.OutcomeError, &msg
		case k%4 == 2:
			msg := `timeout after 1s: Get "http://uSERNAME2:pwUSERPASS3@127.0.0.1:9/metrics?pass=qPASS6&x=qPLAIN7": context deadline exceeded`
			s.Outcome, s.Error = capture.OutcomeError, &msg
		default:
			status := int32(200)
			s.Outcome, s.Status, s.FirstByteNs, s.Body = capture.OutcomeOK, &status, s.StartNs+5e5, body
			capture.Parse(&s)
		}
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	end, endNs := "2026-01-01T00:00:40Z", start+40*int64(time.Second)
	m := capture.Manifest{SchemaVersion: capture.SchemaVersion, RunID: run, Start: "2026-01-01T00:00:00Z", StartNs: start,
		End: &end, EndNs: &endNs, Version: "old",
		Targets: []capture.ManifestTarget{{Name: "old", URL: raw, IntervalNs: int64(time.Second), TimeoutNs: int64(time.Second)}},
		Config: map[string]any{"targets": []any{map[string]any{"name": "old", "url": raw,
			"headers": map[string]any{"X-Credential": "hCRED8", "X-Signature": "hSIG9", "X-Session-Id": "hSESS10",
				"X-Pass": "hPASS11", "X-Api-Key": "hAPIKEY13", "Authorization": "Bearer hAUTH12"}}}}}
	if err := capture.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	out := outputs{}
	readOutputs(t, dir, out)
	if !strings.Contains(out["inspect"], "connection refused") || !strings.Contains(out["analyze --json"], "X-Credential") {
		t.Fatalf("the outputs do not show the errors and the config: the test would prove nothing\n%s", out["inspect"])
	}
	out.assertNoSecret(t)
}

// A usage error quoting a URL prints it redacted.
func TestUsageErrorRedacted(t *testing.T) {
	_, _, err := runCLI("record", "--out", t.TempDir(), "--target", "a=ftp://tokUSERINFO1@h/m?token=qTOKEN4")
	if err == nil || !strings.Contains(err.Error(), "is not an http(s) URL") {
		t.Fatalf("%v", err)
	}
	outputs{"error": err.Error()}.assertNoSecret(t)
}

// record -h documents --follow-redirects and what is redacted.
func TestRecordHelpRedirectsAndRedaction(t *testing.T) {
	help, _, _ := runCLI("record", "-h")
	for _, want := range []string{"-follow-redirects", "follow_redirects = false", "same scheme, host and port", "<redacted sha256:"} {
		if !strings.Contains(help, want) {
			t.Errorf("record -h lacks %q", want)
		}
	}
}

// --follow-redirects overrides the file, a target's own setting included:
// a same-origin redirect is followed and its page recorded.
func TestFollowRedirectsFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.Redirect(w, r, "/real", http.StatusFound)
			return
		}
		w.Write([]byte("# TYPE x counter\nx 1\n"))
	}))
	defer srv.Close()
	work := t.TempDir()
	cfg := filepath.Join(work, "c.toml")
	os.WriteFile(cfg, []byte("interval = \"100ms\"\n[[target]]\nname = \"a\"\nurl = \""+srv.URL+"/metrics\"\nfollow_redirects = false\n"), 0o600)
	for _, c := range []struct {
		flag []string
		want string
	}{{nil, capture.OutcomeHTTPError}, {[]string{"--follow-redirects"}, capture.OutcomeOK}} {
		dir := filepath.Join(work, fmt.Sprint(len(c.flag)))
		args := append([]string{"record", "--out", dir, "--config", cfg, "--duration", "350ms", "--quiet"}, c.flag...)
		// Not following the redirect, the target never answers 200.
		if _, _, err := runCLI(args...); (err != nil) != (c.want != capture.OutcomeOK) {
			t.Fatalf("%v: %v", c.flag, err)
		}
		rep, _, err := runCLI("inspect", dir, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var r capture.Report
		json.Unmarshal([]byte(rep), &r)
		if len(r.Targets) != 1 || len(r.Targets[0].Endpoints) != 1 || r.Targets[0].Endpoints[0].Outcomes[c.want] == 0 {
			t.Errorf("%v: want %s rows: %s", c.flag, c.want, rep)
		}
	}
}
