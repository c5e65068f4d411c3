package analyze

import (
	"flag"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

var replayDuration = flag.Duration("replay.duration", time.Hour,
	"length of the simulated recording BenchmarkReplay replays (8 engines scraped every 2 s)")

var replayDir = flag.String("replay.dir", "",
	"replay this recording instead of generating one (e.g. `llmrec sim -generate DIR -engines 8 -duration 24h`)")

// BenchmarkReplay replays a recording of 8 simulated engines (6 vLLM, 2
// llama.cpp; restarts, a joining label set, hangs, stale and slow bodies)
// scraped every 2 s, generated once into a temporary folder with
// sim.Generate and capture.NewWriter (one segment a minute, merged ten at a
// time as the recorder does). -replay.duration sets its length (default 1 h;
// 24h took 10 minutes to generate here, the replay itself seconds;
// -replay.dir replays a recording generated once instead). Read
// and summary cost the same per sample at any length; keeping every poll's
// cells costs more per sample the longer the recording (memory, GC).
// Sub-benchmarks:
//
//   - read:    the Parquet columns decoded into rows, nothing else;
//   - read-headers: the same with the headers column, which Analyze
//     reads too (a process start header);
//   - summary: Analyze with SkipPolls (read, trackers, estimator, cells);
//   - polls:   Analyze keeping every poll's cells;
//   - summary-serial, polls-serial: the same on one goroutine (Workers 1),
//     the anchor of the parallel replay's speed-up (samples/s is per wall
//     second, samples/cpu-s per second of CPU on all cores).
func BenchmarkReplay(b *testing.B) {
	dir, scrapes, samples := *replayDir, 0, 0
	if dir == "" {
		dir = b.TempDir()
		t0 := time.Now()
		scrapes, samples = generate(b, sim.LongScenario(8, *replayDuration, 1), dir, sim.GenerateOptions{})
		b.Logf("generated %v of 8 engines: %d scrapes, %d samples in %v", *replayDuration, scrapes, samples, time.Since(t0).Round(time.Second))
	} else {
		scrapes, samples = countRecording(b, dir)
		b.Logf("%s: %d scrapes, %d samples", dir, scrapes, samples)
	}
	var cpu0 time.Duration
	report := func(b *testing.B) {
		s := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(float64(samples)/s, "samples/s")
		b.ReportMetric(float64(scrapes)/s, "scrapes/s")
		// The process's CPU time is the per-core figure that other work on
		// the machine does not dilute (it still shares caches).
		c := (cpuTime(b) - cpu0).Seconds() / float64(b.N)
		b.ReportMetric(float64(samples)/c, "samples/cpu-s")
	}
	for _, c := range []struct {
		name    string
		headers bool
	}{{"read", false}, {"read-headers", true}} {
		b.Run(c.name, func(b *testing.B) {
			run, err := capture.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 = cpuTime(b)
			for b.Loop() {
				r := capture.NewColumnReader(capture.NewStrings())
				r.Headers = c.headers
				n := 0
				for _, seg := range run.Segments {
					if err := r.Read(seg, func(w *capture.Row) { n += len(w.Name) }); err != nil {
						b.Fatal(err)
					}
				}
				if n != samples {
					b.Fatalf("read %d samples of %d", n, samples)
				}
			}
			report(b)
		})
	}
	for _, c := range []struct {
		name    string
		skip    bool
		workers int
	}{{"summary", true, 0}, {"polls", false, 0}, {"summary-serial", true, 1}, {"polls-serial", false, 1}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 = cpuTime(b)
			for b.Loop() {
				res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: c.skip, Workers: c.workers})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Problems) > 0 || len(res.Targets) != 8 {
					b.Fatalf("problems %v, %d targets", res.Problems, len(res.Targets))
				}
			}
			report(b)
		})
	}
}

// countRecording is the /metrics rows of a recording (the scrapes
// attempted) and their samples, read as the replay reads them.
func countRecording(b *testing.B, dir string) (scrapes, samples int) {
	run, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	tab := capture.NewStrings()
	r := capture.NewColumnReader(tab)
	for _, seg := range run.Segments {
		err := r.Read(seg, func(w *capture.Row) {
			if tab.Str(w.Endpoint) == capture.EndpointMetrics {
				scrapes++
				samples += len(w.Name)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return scrapes, samples
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
