package record

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// When the ticks stop, the pages still waiting for their parse are parsed
// in the slot the tick loops had: with every other slot held (a backlog
// of other parses that does not end), the run's pages fired before the
// stop are all parsed once the slots widen, none lost, each with its
// samples.
func TestStopParsesBacklogInTheTicksSlot(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one processor: no slot is kept for the tick loops")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	defer srv.Close()
	tg := &Target{Name: "a", URL: srv.URL + "/metrics", Interval: Duration(50 * time.Millisecond), Timeout: Duration(time.Second)}
	slots := newParseSlots()
	for range cap(slots) - len(slots) {
		slots <- struct{}{} // other pages' parses hold every parse slot, and never end
	}
	r := &recorder{clock: NewClock(), runID: "R", maxBody: 1 << 20, scrapeCtx: context.Background(),
		rows: make(chan queued, 1000), bodies: newBodyReader(), parses: newParseGate(), slots: slots,
		clients: []*http.Client{newClient()}, stats: make([]TargetStats, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	r.loop(ctx, 0, tg, 0, 0)
	cancel()
	r.slots.widen() // as Run does when its tick loops have returned
	done := make(chan struct{})
	go func() {
		r.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the pages waiting for their parse were not parsed after the ticks stopped")
	}
	close(r.rows)
	fired := 0
	for q := range r.rows {
		if q.p == nil {
			continue // a missed tick
		}
		fired++
	}
	if fired == 0 {
		t.Fatal("no page fired")
	}
	// Accounted after its parse: every page fired was parsed.
	if st := r.stats[0]; st.OK != int64(fired) || st.Unparsed != 0 {
		t.Errorf("%d pages parsed ok, %d unparsed, of %d fired", st.OK, st.Unparsed, fired)
	}
}
