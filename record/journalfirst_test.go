package record

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// A scrape is journaled as soon as its body is read, before it is parsed:
// a page that takes long to parse (150,000 series) is on disk long before
// its parse could have ended, so a kill during the parse loses nothing.
func TestJournaledBeforeParsed(t *testing.T) {
	var page strings.Builder
	page.WriteString("# TYPE vllm:generation_tokens_total counter\n")
	for i := range 150_000 {
		fmt.Fprintf(&page, "vllm:generation_tokens_total{engine=\"%d\",model_name=\"m\"} %d\n", i, i)
	}
	body := []byte(page.String())
	// How long a parse of it takes here, now: the median of three.
	var parses []time.Duration
	for range 3 {
		probe := capture.Scrape{Endpoint: capture.EndpointMetrics, Outcome: capture.OutcomeOK, Body: body}
		t0 := time.Now()
		capture.ParseCapped(&probe, nil, capture.DefaultLimits)
		parses = append(parses, time.Since(t0))
		if len(probe.Samples) != 150_000 {
			t.Fatalf("the page parsed into %d samples: %v", len(probe.Samples), probe.ParseError)
		}
	}
	slices.Sort(parses)
	parse := parses[1]

	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		served.CompareAndSwap(0, time.Now().UnixNano())
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := &Config{Interval: Duration(time.Minute), Targets: []Target{{Name: "big", URL: srv.URL + "/metrics"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg, Options{Dir: dir})
		done <- err
	}()
	var journaled time.Time
	var journal string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if served.Load() == 0 {
			continue
		}
		// The record is one write(2): a journal the page's size holds it.
		js, _ := filepath.Glob(filepath.Join(dir, "*.journal"))
		if len(js) == 1 {
			if st, err := os.Stat(js[0]); err == nil && st.Size() > int64(len(body)) {
				journaled = time.Now()
				journal = js[0]
				break
			}
		}
	}
	// The size is seen grow while the write(2) copies the record in (the
	// kernel updates it a page at a time): the record is read once it is
	// whole, a torn tail being read as no row (seen once in CI).
	if journal != "" {
		var rows []capture.Scrape
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if rows, err = capture.ReadLive(journal); err != nil || len(rows) > 0 {
				break
			}
		}
		if err != nil || len(rows) != 1 || len(rows[0].Body) != len(body) || len(rows[0].Samples) != 150_000 {
			t.Errorf("the journal holds %d rows (%v)", len(rows), err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if journaled.IsZero() {
		t.Fatal("the scrape never reached the journal")
	}
	after := journaled.Sub(time.Unix(0, served.Load()))
	t.Logf("journaled %s after the target finished; a parse of the page takes %s", after.Round(time.Millisecond), parse.Round(time.Millisecond))
	// Journaled after the parse would be a parse and a write after the
	// answer; a loaded machine (CI runs packages side by side) delays the
	// journal's write and this loop's look at it by up to about half a
	// parse (316 ms of 588 seen), so the bound is most of one parse.
	if after > parse*4/5 {
		t.Errorf("journaled %s after the target finished, where a parse takes %s: the parse came first", after, parse)
	}
}
