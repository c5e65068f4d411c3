package replay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/internal/sharedtest"
	"github.com/llmrec/llmrec/record/capture"
)

// TestPick pins the timeline rule: the answer in force at recording time r
// is the latest whose request was sent at or before r; the first before
// the recording's start, the last after its end.
func TestPick(t *testing.T) {
	as := []Answer{{At: 10}, {At: 20}, {At: 20}, {At: 30}}
	for _, c := range []struct {
		r    int64
		want int
	}{
		{0, 0}, {9, 0}, {10, 0}, {19, 0},
		{20, 2}, // two answers sent at one instant: the later row holds
		{29, 2}, {30, 3}, {1 << 40, 3},
	} {
		if got := pick(as, c.r); got != c.want {
			t.Errorf("pick(%d) = %d, want %d", c.r, got, c.want)
		}
	}
}

// TestClock pins the wall-to-recording mapping: Rec + (t − Wall)·Speed,
// wrapped by Period, never before Rec.
func TestClock(t *testing.T) {
	w := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	c := Clock{Wall: w, Rec: 1_000, Speed: 20}
	for _, x := range []struct {
		wall time.Duration
		want int64
	}{
		{-time.Second, 1_000}, {0, 1_000}, {50 * time.Millisecond, 1_000 + int64(time.Second)},
		{3 * time.Second, 1_000 + int64(60*time.Second)},
	} {
		if got := c.At(w.Add(x.wall)); got != x.want {
			t.Errorf("At(+%s) = %d, want %d", x.wall, got, x.want)
		}
	}
	if d := c.WallDur(int64(time.Second)); d != 50*time.Millisecond {
		t.Errorf("WallDur(1s) = %s, want 50ms at speed 20", d)
	}
	c.Period = int64(10 * time.Second)
	if got := c.At(w.Add(550 * time.Millisecond)); got != 1_000+int64(time.Second) {
		t.Errorf("looped At(+550ms) = %d, want Rec+1s (11 s into a 10 s loop)", got)
	}
	if got := (Clock{Wall: w, Rec: 5}).At(w.Add(time.Second)); got != 5+int64(time.Second) {
		t.Errorf("speed 0 = %d, want speed 1", got)
	}
}

func get(t *testing.T, url string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// TestServeAnswers serves a recording of four answers at 1 s spacing and
// checks each as its request time falls on it: body byte-exact, headers
// as stored (a digest served as the digest), a recorded 503, a failed
// attempt answered by a closed connection, an unknown path a 404, the
// last answer holding after the end.
func TestServeAnswers(t *testing.T) {
	s := int64(time.Second)
	digest := "<redacted sha256:53d7a7de>"
	rec := &Recording{Start: 0, End: 3 * s, Rows: 4, Targets: []*Target{{Name: "llama", Endpoints: []*Endpoint{{
		Name: "metrics", Path: "/metrics", Answers: []Answer{
			{At: 0, Status: 200, Body: []byte("a 1\n"), Header: map[string]string{"Process-Start-Time-Unix": digest, "Content-Type": "text/plain; version=0.0.4"}},
			{At: s, Status: 503, Body: []byte(`{"error":{"code":503,"message":"Loading model"}}`)},
			{At: 2 * s, Failed: true, Error: "connection refused"},
			{At: 3 * s, Status: 200, Body: []byte("a 2\n"), Header: map[string]string{"Process-Start-Time-Unix": "<redacted sha256:a6237f07>"}},
		}}}}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Serve(ctx, rec, Options{Speed: 1, Now: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u := srv.Targets()[0].MetricsURL
	// Move the timeline rather than wait: recording time r is served at
	// wall time Wall + r.
	at := func(r int64) {
		srv.startMu.Lock()
		srv.clock.Wall = time.Now().Add(-time.Duration(r))
		srv.startMu.Unlock()
	}
	at(s / 2)
	resp, b, err := get(t, u)
	if err != nil || resp.StatusCode != 200 || string(b) != "a 1\n" || resp.Header.Get("Process-Start-Time-Unix") != digest ||
		resp.Header.Get("Content-Type") != "text/plain; version=0.0.4" {
		t.Fatalf("at 0.5 s: %v %v %q %v", err, resp.StatusCode, b, resp.Header)
	}
	at(s + s/2)
	if resp, b, err = get(t, u); err != nil || resp.StatusCode != 503 || string(b) != string(rec.Targets[0].Endpoints[0].Answers[1].Body) {
		t.Fatalf("at 1.5 s: %v %v %q", err, resp.StatusCode, b)
	}
	at(2*s + s/2)
	if _, _, err = get(t, u); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("at 2.5 s (a failed attempt): err %v, want the connection closed", err)
	}
	at(60 * s)
	if resp, b, err = get(t, u); err != nil || string(b) != "a 2\n" || resp.Header.Get("Process-Start-Time-Unix") != "<redacted sha256:a6237f07>" {
		t.Fatalf("after the end: %v %q %v, want the last answer held", err, b, resp.Header)
	}
	if resp, _, err = get(t, srv.Targets()[0].URL+"/slots"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("unrecorded path: %v %v, want 404", err, resp)
	}
}

// TestServeEncodingAndCut: a body the engine sent gzip-encoded goes out
// gzip-encoded again to a client that asks (and decodes to the recorded
// bytes), plain to one that does not; an attempt cut after its status
// sends its status and closes the connection.
func TestServeEncodingAndCut(t *testing.T) {
	s := int64(time.Second)
	body := []byte(strings.Repeat("vllm:num_requests_running 1\n", 50))
	rec := &Recording{Start: 0, End: s, Rows: 2, Targets: []*Target{{Name: "v", Endpoints: []*Endpoint{{
		Name: "metrics", Path: "/metrics", Answers: []Answer{
			{At: 0, Status: 200, Gzip: true, Body: body},
			{At: s, Status: 200, Failed: true, Error: "body too large", Body: body[:10]},
		}}}}}}
	srv, err := Serve(context.Background(), rec, Options{Now: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u := srv.Targets()[0].MetricsURL
	resp, b, err := get(t, u) // Go's client asks for gzip and decodes
	if err != nil || !resp.Uncompressed || string(b) != string(body) {
		t.Fatalf("gzip asked: %v uncompressed=%v %d bytes", err, resp.Uncompressed, len(b))
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept-Encoding", "identity")
	plain, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(plain.Body)
	plain.Body.Close()
	if plain.Header.Get("Content-Encoding") != "" || string(pb) != string(body) {
		t.Errorf("identity asked: encoding %q, %d bytes", plain.Header.Get("Content-Encoding"), len(pb))
	}
	srv.startMu.Lock()
	srv.clock.Wall = time.Now().Add(-2 * time.Second)
	srv.startMu.Unlock()
	resp, err = http.Get(u)
	if err != nil {
		t.Fatalf("cut answer: %v, want its status first", err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err == nil {
		t.Errorf("cut answer: status %d, body error %v; want 200 and a cut body", resp.StatusCode, err)
	}
}

// TestStartsWithFirstRequest: by default the timeline starts at the first
// request, at From into the recording, and Ends follows from it.
func TestStartsWithFirstRequest(t *testing.T) {
	s := int64(time.Second)
	rec := &Recording{Start: 100 * s, End: 110 * s, Rows: 2, Targets: []*Target{{Name: "x", Endpoints: []*Endpoint{{
		Name: "metrics", Path: "/metrics", Answers: []Answer{{At: 100 * s, Body: []byte("one")}, {At: 105 * s, Body: []byte("two")}},
	}}}}}
	srv, err := Serve(context.Background(), rec, Options{Speed: 10, From: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	select {
	case <-srv.Started():
		t.Fatal("the timeline started before any request")
	default:
	}
	before := time.Now()
	_, b, err := get(t, srv.Targets()[0].MetricsURL)
	if err != nil || string(b) != "two" {
		t.Fatalf("first request: %v %q, want the answer 6 s in", err, b)
	}
	c := srv.Clock()
	if c.Rec != 106*s || c.Wall.Before(before) {
		t.Errorf("clock %+v, want Rec = start + 6 s from the first request on", c)
	}
	if d := srv.Ends().Sub(c.Wall); d != 400*time.Millisecond {
		t.Errorf("ends %s after the first request, want 4 s of recording at 10x", d)
	}
	if _, err := Serve(context.Background(), rec, Options{From: time.Minute}); err == nil {
		t.Error("a From past the end was taken")
	}
	if _, err := Serve(context.Background(), rec, Options{Listen: "192.0.2.1"}); err == nil {
		t.Error("a listen host off loopback was taken")
	}
}

// TestLoadLiveJournal: a recording still being written is served from its
// journal (read in memory as capture reads it), beside its sealed
// segments. The rows are the real b4748 run's first answers.
func TestLoadLiveJournal(t *testing.T) {
	src := filepath.Join("..", "..", "..", "shared", "real-runs", "llamacpp-b4748", "a-baseline", "rec")
	sharedtest.Need(t, src, "real run llamacpp-b4748/a-baseline")
	run, err := capture.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	var rows []capture.Scrape
	if err := capture.ReadSegment(run.Segments[0], func(s *capture.Scrape) error {
		if len(rows) < 6 {
			c := *s
			c.Body = bytes.Clone(s.Body)
			rows = append(rows, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := capture.NewWriter(dir, rows[0].RunID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, r := range rows {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Journals != 1 || rec.Rows != len(rows) {
		t.Fatalf("loaded %d rows from %d journals, want %d from the live one", rec.Rows, rec.Journals, len(rows))
	}
	n := 0
	for _, ep := range rec.Targets[0].Endpoints {
		for _, a := range ep.Answers {
			for _, r := range rows {
				if r.Seq == a.Seq && r.Endpoint == ep.Name && bytes.Equal(r.Body, a.Body) {
					n++
				}
			}
		}
	}
	if n != len(rows) {
		t.Errorf("%d of %d answers carry their row's body", n, len(rows))
	}
}
