package record

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// A writer that cannot keep up (a slow disk) delays no tick: with the rows
// channel full, the tick loops still fire or miss each tick on time, and no
// tick is written as "recorder stalled".
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
	seqs := map[string][]int64{}
	for _, r := range readRows(t, opt.Dir) {
		if r.Outcome == capture.OutcomeMissed && strings.HasPrefix(*r.Error, "recorder stalled") {
			t.Errorf("%s seq %d: %s", r.Target, r.Seq, *r.Error)
		}
		seqs[r.Target] = append(seqs[r.Target], r.Seq)
	}
	for _, tg := range cfg.Targets {
		if n := len(seqs[tg.Name]); n < 20 {
			t.Errorf("%s: %d rows in 2.5 s at 100 ms", tg.Name, n)
		}
	}
}
