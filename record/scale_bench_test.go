package record

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/sim"
)

// The number of targets of BenchmarkSimTargets.
var (
	simTargetsN    = flag.Int("simtargets.n", 200, "BenchmarkSimTargets: how many simulated engines to record")
	simTargetsHeap = flag.String("simtargets.heap", "", "BenchmarkSimTargets: write a heap profile (in use) to this file 8 s into the recording")
	simTargetsD    = flag.Duration("simtargets.duration", 10*time.Second, "BenchmarkSimTargets: how long to record (a short one with -trace looks at the start)")
)

// BenchmarkSimTargets records 200 (-simtargets.n) simulated vLLM V1 engines (47 KB pages,
// each its own loopback server, values changing every second) at 1 s for
// 10 s (-simtargets.duration) in this process: a profile of the recorder's tick path at scale
// (run with -cpuprofile; the servers' share is theirs, under
// net/http.(*conn).serve). BenchmarkScale in cmd/llmrec is the measure of
// reach; this is for looking inside.
//
//	go test ./record -run '^$' -bench SimTargets -benchtime 1x -cpuprofile cpu.out
func BenchmarkSimTargets(b *testing.B) {
	start := time.Now()
	cfg := &Config{Interval: Duration(time.Second)}
	for i := range *simTargetsN {
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
	var ok, failed, missed, unparsed int64
	var stop time.Duration
	if *simTargetsHeap != "" {
		t := time.AfterFunc(8*time.Second, func() {
			f, err := os.Create(*simTargetsHeap)
			if err != nil {
				b.Error(err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				b.Error(err)
			}
		})
		defer t.Stop()
	}
	for b.Loop() {
		sum, err := Run(context.Background(), cfg, Options{Dir: b.TempDir(), Duration: *simTargetsD})
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range sum.Targets {
			ok, failed, missed, unparsed = ok+t.OK, failed+t.Failed, missed+t.Missed, unparsed+t.Unparsed
		}
		stop += sum.Elapsed - *simTargetsD
	}
	n := float64(b.N)
	b.ReportMetric(float64(ok)/n, "ok/op")
	b.ReportMetric(float64(failed)/n, "failed/op")
	b.ReportMetric(float64(missed)/n, "missed/op")
	b.ReportMetric(float64(unparsed)/n, "unparsed/op")
	b.ReportMetric(stop.Seconds()/n, "stop-s/op")
}
