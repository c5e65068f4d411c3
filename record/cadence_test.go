package record

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// A writer that cannot keep up (a slow disk) delays no tick: with the rows
// channel full, the tick loops still fire or miss each tick on time instead
// of writing them as "recorder stalled" afterwards (on the old code every
// tick of the hung targets after the first two in the 1.5 s stall). A host
// that stalls the whole process does write a few; a third is the margin.
func TestBlockedWriterDelaysNoTick(t *testing.T) {
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hung.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("up 1\n"))
	}))
	defer ok.Close()
	cfg := &Config{Timeout: Duration(10 * time.Second)}
	for _, n := range []string{"h1", "h2", "h3"} {
		cfg.Targets = append(cfg.Targets, Target{Name: n, URL: hung.URL + "/metrics", Interval: Duration(100 * time.Millisecond)})
	}
	cfg.Targets = append(cfg.Targets, Target{Name: "ok", URL: ok.URL + "/metrics", Interval: Duration(100 * time.Millisecond)})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// The writer stalls for 1.5 s on its first row: about 60 rows arrive
	// meanwhile into a channel of 2.
	release := time.Now().Add(1500 * time.Millisecond)
	opt := Options{Dir: t.TempDir(), Duration: 2500 * time.Millisecond, rowsBuffer: 2,
		beforeAppend: func() { time.Sleep(time.Until(release)) }}
	if _, err := Run(context.Background(), cfg, opt); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	var stalled []string
	for _, r := range readRows(t, opt.Dir) {
		rows[r.Target]++
		if r.Outcome == capture.OutcomeMissed && strings.HasPrefix(*r.Error, "recorder stalled") {
			stalled = append(stalled, fmt.Sprintf("%s seq %d: %s", r.Target, r.Seq, *r.Error))
		}
	}
	for _, tg := range cfg.Targets {
		if n := rows[tg.Name]; n < 20 {
			t.Errorf("%s: %d rows in 2.5 s at 100 ms", tg.Name, n)
		}
	}
	if len(stalled) > (rows["h1"]+rows["h2"]+rows["h3"])/3 {
		t.Errorf("%d ticks of the hung targets written as recorder stalled:\n%s", len(stalled), strings.Join(stalled, "\n"))
	}
}

// The tick loop's missed-tick rows never wait for the writer: with nobody
// reading the rows channel, a hundred missed ticks are handed over at once,
// and all reach the writer when it reads again.
func TestMissedTickNeverBlocks(t *testing.T) {
	r := &recorder{clock: NewClock(), runID: "R", rows: make(chan queued), stats: make([]TargetStats, 1)}
	tg := &Target{Name: "a", URL: "http://127.0.0.1:9/metrics"}
	ep := &endpointState{name: capture.EndpointMetrics, url: tg.URL}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range 100 {
			r.missed(0, tg, ep, int64(k), time.Now(), "previous scrape still running")
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the tick loop blocked on a writer that does not read")
	}
	go func() {
		r.inflight.Wait()
		close(r.rows)
	}()
	seqs := map[int64]bool{}
	for row := range r.rows {
		seqs[row.s.Seq] = true
	}
	if len(seqs) != 100 {
		t.Fatalf("%d of 100 missed ticks reached the writer", len(seqs))
	}
}

// A page waiting for its parse holds no tick: with the parse slots taken
// (a backlog of parses), an endpoint's ticks still fire, its pages are
// journaled, until maxParsesBehind of them wait; the ticks after are
// missed, saying why. When the slots free, every waiting page is parsed.
func TestParseBacklogHoldsNoTick(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	defer srv.Close()
	tg := &Target{Name: "a", URL: srv.URL + "/metrics", Interval: Duration(50 * time.Millisecond), Timeout: Duration(time.Second)}
	slots := make(parseSlots, 1)
	slots <- struct{}{} // another page's parse holds the only slot
	r := &recorder{clock: NewClock(), runID: "R", maxBody: 1 << 20, scrapeCtx: context.Background(),
		rows: make(chan queued, 1000), bodies: newBodyReader(), parses: newParseGate(), slots: slots,
		clients: []*http.Client{newClient()}, stats: make([]TargetStats, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	r.loop(ctx, 0, tg, 0, 0)
	cancel()
	<-slots
	r.inflight.Wait()
	close(r.rows)
	var fired, behind int
	for q := range r.rows {
		if q.p == nil {
			switch {
			case strings.Contains(*q.s.Error, "pages before") && strings.Contains(*q.s.Error, "not finished"):
				behind++
			default:
				t.Errorf("seq %d: %s %s", q.s.Seq, q.s.Outcome, *q.s.Error)
			}
			continue
		}
		fired++
	}
	// Accounted after its parse: every page fired was parsed.
	if st := r.stats[0]; st.OK != int64(fired) || st.Unparsed != 0 {
		t.Errorf("%d pages parsed ok, %d unparsed, of %d fired", st.OK, st.Unparsed, fired)
	}
	if fired != maxParsesBehind {
		t.Errorf("%d ticks fired while the parses waited, want %d", fired, maxParsesBehind)
	}
	if behind < 3 {
		t.Errorf("%d ticks missed for the parses behind in 600 ms at 50 ms, want most of the rest", behind)
	}
}
