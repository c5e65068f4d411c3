package record

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/sim"
)

// BenchmarkSimTargets records 200 simulated vLLM V1 engines (47 KB pages,
// each its own loopback server, values changing every second) at 1 s for
// 10 s in this process: a profile of the recorder's tick path at scale
// (run with -cpuprofile; the servers' share is theirs, under
// net/http.(*conn).serve). BenchmarkScale in cmd/llmrec is the measure of
// reach; this is for looking inside.
//
//	go test ./record -run '^$' -bench SimTargets -benchtime 1x -cpuprofile cpu.out
func BenchmarkSimTargets(b *testing.B) {
	start := time.Now()
	cfg := &Config{Interval: Duration(time.Second)}
	for i := range 200 {
		e, err := sim.NewEngine(sim.EngineSpec{Name: fmt.Sprintf("v%d", i), Format: sim.FormatVLLM, Model: "m",
			Phases: []sim.Phase{{DecodeTPS: float64(600 + 37*(i%29)), PromptTPS: 2000, Running: 4 + i%12, KVUsage: -1}}}, start)
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" {
				if body := e.InfoJSON(r.URL.Path, start); body != nil {
					w.Write(body)
					return
				}
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", e.ContentType())
			w.Write(e.Render(time.Since(start).Truncate(time.Second)))
		}))
		defer srv.Close()
		cfg.Targets = append(cfg.Targets, Target{Name: fmt.Sprintf("v%03d", i), URL: srv.URL + "/metrics"})
	}
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), cfg, Options{Dir: b.TempDir(), Duration: 10 * time.Second}); err != nil {
			b.Fatal(err)
		}
	}
}
