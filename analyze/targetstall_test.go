package analyze

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	recorder "github.com/llmrec/llmrec/record"
)

// A target that stops answering (a SIGSTOP: its requests hang, the
// scrapes time out) and then answers again with its counters continuing is
// a stall of that target, not a restart: recorded from a loopback llama.cpp
// b4748-like server whose n_busy_slots_per_decode (typed counter, a
// lifetime average) falls after the stall, as the real one's does when the
// busy slots per decode drop. A named phase across the stall is
// differenced across it, one process, and reads the counters' truth.
func TestTargetStallIsNoRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 s recording")
	}
	const tps = 500.0 // tokens a second, counted on every answer
	var mu sync.Mutex
	start := time.Now()
	stopFrom, stopTo := 1500*time.Millisecond, 2700*time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		el := time.Since(start)
		// Stopped: the request hangs until the process is continued.
		if el >= stopFrom && el < stopTo {
			select {
			case <-time.After(stopTo - el):
			case <-r.Context().Done():
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		s := time.Since(start).Seconds()
		// Stopped for 1.2 s, nothing counted then.
		work := s
		if s >= stopTo.Seconds() {
			work -= (stopTo - stopFrom).Seconds()
		} else if s >= stopFrom.Seconds() {
			work = stopFrom.Seconds()
		}
		busy := 3.9 - 0.1*s // a lifetime average that falls
		fmt.Fprintf(w, "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %d\n"+
			"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %d\n"+
			"# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total %d\n"+
			"# TYPE llamacpp:n_busy_slots_per_decode counter\nllamacpp:n_busy_slots_per_decode %g\n"+
			"# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 4\n"+
			"# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 0\n",
			int(work*tps/2), int(work*tps), int(work*100), busy)
	}))
	defer srv.Close()
	ctx := context.Background()
	cfg := &recorder.Config{Targets: []recorder.Target{{Name: "l", URL: srv.URL + "/metrics", Engine: "llamacpp",
		Interval: recorder.Duration(200 * time.Millisecond)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := recorder.Run(ctx, cfg, recorder.Options{Dir: dir, Duration: 4 * time.Second}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) float64 { return float64(start.Add(d).UnixNano()) / 1e9 }
	ph := []phases.Phase{{Name: "across", Kind: phases.KindNamed, Source: phases.SourceFile, Start: at(800 * time.Millisecond), End: at(3500 * time.Millisecond)}}
	res, err := Analyze(Options{Dirs: []string{dir}, Phases: ph, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	stalled := false
	for _, in := range res.Incidents {
		switch in.Kind {
		case findings.KindRestart:
			t.Errorf("a stall read as a restart: %s", in.Detail)
		case findings.KindGap:
			stalled = strings.Contains(in.Detail, "a stall of the target, not a restart")
			t.Logf("%s: %s", in.Kind, in.Detail)
		case findings.KindDown, findings.KindHostStall:
			t.Errorf("a 1.2 s stall of one target read as %s: %s", in.Kind, in.Detail)
		}
	}
	if !stalled {
		t.Errorf("the 1.2 s stall is no gap saying it is a stall of the target: %+v", res.Incidents)
	}
	f, b := phaseFigure(t, res, "l", phases.SourceFile, "across", "decode_tokens_per_second")
	if b.Processes != 1 || len(b.RestartsLeftOut) != 0 {
		t.Errorf("across the stall: %d process(es), restarts left out %v, want 1 and none", b.Processes, b.RestartsLeftOut)
	}
	// Differenced across the stall: the tokens over the whole span, the
	// stopped time included (it counted nothing).
	if !f.Value.Valid || f.Value.V >= tps*0.9 || f.Value.V <= tps*0.3 {
		t.Errorf("decode across the stall %v (%s), want below %v: the stopped time is in the phase", f.Value, f.Reason, tps)
	}
}
