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
