package record

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
)

// doShared scrapes one answer of h with the recording's shared body reader
// and parse gate.
func doShared(t *testing.T, h http.HandlerFunc, timeout time.Duration, maxBody int64, br *bodyReader, g parseGate) capture.Scrape {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	return scrape(context.Background(), newClient(), NewClock(), request{target: target(srv.URL+"/metrics", timeout),
		endpoint: capture.EndpointMetrics, url: srv.URL + "/metrics", scheduled: time.Now(), maxBody: maxBody, runID: "R",
		bodies: br, parses: g})
}

// chunked writes p in 64 KiB writes, flushing, so the answer has no
// Content-Length.
func chunked(p []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for len(p) > 0 {
			n := min(len(p), 64<<10)
			w.Write(p[:n])
			w.(http.Flusher).Flush()
			p = p[n:]
		}
	}
}

// page is a page of size bytes that is cheap to parse: comment lines
// numbered so a shifted or mixed copy differs, and one series.
func page(size int) []byte {
	var b bytes.Buffer
	b.WriteString("up 1\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "# line %d of a large page\n", i)
	}
	return b.Bytes()
}

// Bodies past the freely read first MiB go through the shared buffer and
// are kept byte-exact; the buffer is reused, so a second body of another
// size is not mixed with the first.
func TestLargeBodyByteExact(t *testing.T) {
	br := newBodyReader()
	for _, size := range []int{3 << 20, 2 << 20, smallBody} {
		p := page(size)
		s := doShared(t, chunked(p), 5*time.Second, 4<<20, br, newParseGate())
		if s.Outcome != capture.OutcomeOK || !bytes.Equal(s.Body, p) {
			t.Fatalf("%d-byte page: outcome %s, body %d bytes equal %v", len(p), s.Outcome, len(s.Body), bytes.Equal(s.Body, p))
		}
		if cap(s.Body) > len(s.Body)+len(s.Body)/4 {
			t.Errorf("%d-byte body kept in a %d-byte array", len(s.Body), cap(s.Body))
		}
	}
	s := doShared(t, chunked(page(3<<20)), 5*time.Second, 2<<20, br, nil)
	if s.Outcome != capture.OutcomeError || s.Body != nil || !strings.Contains(*s.Error, "body exceeds the 2097152-byte cap") {
		t.Fatalf("over the cap: %s %v, body %d", s.Outcome, s.Error, len(s.Body))
	}
}

// A body announced over the cap by its Content-Length is refused before a
// byte of it is read.
func TestContentLengthOverCapUnread(t *testing.T) {
	s := doShared(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(int64(1)<<30))
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 64<<10))
		<-r.Context().Done()
	}, 5*time.Second, 1<<20, newBodyReader(), nil)
	if s.Outcome != capture.OutcomeError || !strings.Contains(*s.Error, "Content-Length 1073741824") {
		t.Fatalf("%s %v", s.Outcome, s.Error)
	}
	if d := time.Duration(s.EndNs - s.StartNs); d > 2*time.Second {
		t.Errorf("refused after %s: it waited for the body", d)
	}
}

// While one large body is being read, another large body waits for its
// turn within its own timeout; a small body does not wait at all.
func TestLargeBodiesTakeTurns(t *testing.T) {
	br := newBodyReader()
	buf := <-br.turn // a large body being read elsewhere
	s := doShared(t, chunked(page(2<<20)), 300*time.Millisecond, 4<<20, br, nil)
	if s.Outcome != capture.OutcomeError || !strings.Contains(*s.Error, "waiting for a turn") || !strings.Contains(*s.Error, "timeout after 300ms") {
		t.Fatalf("large body while the turn is taken: %s %v", s.Outcome, s.Error)
	}
	small := page(40 << 10)
	s = doShared(t, chunked(small), 300*time.Millisecond, 4<<20, br, nil)
	if s.Outcome != capture.OutcomeOK || !bytes.Equal(s.Body, small) {
		t.Fatalf("small body while the turn is taken: %s %v", s.Outcome, s.Error)
	}
	br.turn <- buf
	s = doShared(t, chunked(page(2<<20)), 5*time.Second, 4<<20, br, nil)
	if s.Outcome != capture.OutcomeOK {
		t.Fatalf("large body after the turn is back: %s %v", s.Outcome, s.Error)
	}
}

// The parse of a large page is shed while another large page is being
// parsed: the body is kept and the row says why it was not parsed. Small
// pages are parsed regardless.
func TestLargeParseShed(t *testing.T) {
	g := newParseGate()
	big := page(largeParse + 1)
	small := page(40 << 10)
	g <- struct{}{} // a large parse under way
	s := doShared(t, chunked(big), 5*time.Second, 64<<20, newBodyReader(), g)
	if s.Outcome != capture.OutcomeParseError || !bytes.Equal(s.Body, big) || s.ParseError == nil ||
		!strings.Contains(*s.ParseError, "parse shed") || s.Samples != nil {
		t.Fatalf("large page while another is parsed: %s %v, body %d, %d samples", s.Outcome, s.ParseError, len(s.Body), len(s.Samples))
	}
	if s = doShared(t, chunked(small), 5*time.Second, 64<<20, newBodyReader(), g); s.Outcome != capture.OutcomeOK || len(s.Samples) == 0 {
		t.Fatalf("small page while a large one is parsed: %s %v", s.Outcome, s.ParseError)
	}
	<-g
	if s = doShared(t, chunked(big), 5*time.Second, 64<<20, newBodyReader(), g); s.Outcome != capture.OutcomeOK || len(s.Samples) == 0 {
		t.Fatalf("large page alone: %s %v", s.Outcome, s.ParseError)
	}
	if len(g) != 0 {
		t.Fatal("the parse gate was not given back")
	}
}

// A body of exactly the cap is kept; one byte more is over it, whether
// the cap falls in the freely read first MiB or past it.
func TestBodyAtTheCap(t *testing.T) {
	br := newBodyReader()
	for _, max := range []int64{1000, smallBody, smallBody + 1000} {
		for _, size := range []int64{max - 1, max, max + 1} {
			p := page(int(size))[:size]
			s := doShared(t, chunked(p), 5*time.Second, max, br, nil)
			over := size > max
			if over != (s.Outcome == capture.OutcomeError) || over != (s.Body == nil) || !over && !bytes.Equal(s.Body, p) {
				t.Errorf("cap %d, body %d: outcome %s %v, body %d bytes", max, size, s.Outcome, s.Error, len(s.Body))
			}
		}
	}
}

// Ordinary pages wait for a parse slot (parses past the bound wait parked
// instead of standing runnable ahead of the tick loops); a page over
// smallBody never waits for one, so a slow hostile page cannot hold the
// others' parses; a slot is given back after each parse.
func TestParseSlots(t *testing.T) {
	s := newParseSlots()
	if want := max(1, runtime.GOMAXPROCS(0)-1); cap(s)-len(s) != want {
		t.Fatalf("%d slots free, want %d", cap(s)-len(s), want)
	}
	for range cap(s) - len(s) {
		s <- struct{}{} // every slot taken
	}
	g := newParseGate()
	var in expo.Interner
	big := capture.Scrape{Endpoint: capture.EndpointMetrics, Outcome: capture.OutcomeOK, Body: page(smallBody + 1)}
	within(t, 10*time.Second, "a page over smallBody, every parse slot taken", func() {
		s.parse(g, &big, &in, capture.DefaultLimits)
	})
	if big.Outcome != capture.OutcomeOK || len(big.Samples) == 0 {
		t.Fatalf("page over smallBody while every slot is taken: %s %v, %d samples", big.Outcome, big.ParseError, len(big.Samples))
	}
	var in2 expo.Interner
	small := capture.Scrape{Endpoint: capture.EndpointMetrics, Outcome: capture.OutcomeOK, Body: page(40 << 10)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.parse(g, &small, &in2, capture.DefaultLimits)
	}()
	select {
	case <-done:
		t.Fatal("an ordinary page was parsed while every slot was taken")
	case <-time.After(50 * time.Millisecond):
	}
	<-s
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an ordinary page was not parsed once a slot was free")
	}
	if small.Outcome != capture.OutcomeOK || len(small.Samples) == 0 {
		t.Fatalf("ordinary page: %s %v, %d samples", small.Outcome, small.ParseError, len(small.Samples))
	}
	if len(s) != cap(s)-1 {
		t.Fatalf("%d of %d slots taken after the parse, want %d", len(s), cap(s), cap(s)-1)
	}
}

// When the ticks stop, the slot kept for the tick loops is given to the
// parses: a page waiting with every other slot taken is parsed.
func TestParseSlotsWiden(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one processor: no slot is kept for the tick loops")
	}
	s := newParseSlots()
	if len(s) != 1 || cap(s) != runtime.GOMAXPROCS(0) {
		t.Fatalf("%d of %d slots taken at the start, want 1 of %d", len(s), cap(s), runtime.GOMAXPROCS(0))
	}
	for range cap(s) - len(s) {
		s <- struct{}{} // the parses' slots taken
	}
	var in expo.Interner
	row := capture.Scrape{Endpoint: capture.EndpointMetrics, Outcome: capture.OutcomeOK, Body: page(40 << 10)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.parse(newParseGate(), &row, &in, capture.DefaultLimits)
	}()
	select {
	case <-done:
		t.Fatal("a page was parsed while every slot was taken")
	case <-time.After(50 * time.Millisecond):
	}
	s.widen()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a page was not parsed once the tick loops' slot was given")
	}
	if row.Outcome != capture.OutcomeOK || len(row.Samples) == 0 {
		t.Fatalf("%s %v, %d samples", row.Outcome, row.ParseError, len(row.Samples))
	}
}

// readAll reads a body of any size whatever its hint, byte-exact, and a
// body of its hinted size without growing (one allocation); one much
// smaller than its hint is not kept in the hint's space.
func TestReadAllHint(t *testing.T) {
	page := bytes.Repeat([]byte("vllm:num_requests_running{model_name=\"m\"} 3\n"), 1000)
	for _, hint := range []int64{0, 1, 100, int64(len(page)) - 1, int64(len(page)), int64(len(page)) + 1, 1 << 20} {
		got, err := readAll(iotest.OneByteReader(bytes.NewReader(page)), hint)
		if err != nil || !bytes.Equal(got, page) {
			t.Fatalf("hint %d: %d bytes, %v", hint, len(got), err)
		}
	}
	r := bytes.NewReader(page)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(page)
		readAll(r, int64(len(page)))
	})
	if allocs != 1 {
		t.Errorf("a body of its hinted size took %v allocations, want 1", allocs)
	}
	small, _ := readAll(bytes.NewReader(page[:100]), 1<<20)
	if cap(small) > 8192 {
		t.Errorf("a 100-byte body read with a 1 MiB hint kept %d bytes", cap(small))
	}
}
