package record

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

const e2eScenario = `
name = "e2e"
duration = "20s"
[[engine]]
name = "healthy"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 800.0
  prompt_tps = 2000.0
  running = 8
[[engine]]
name = "hung"
format = "llamacpp"
  [[engine.phase]]
  at = "0s"
  decode_tps = 60.0
  prompt_tps = 300.0
  running = 2
  [[engine.event]]
  at = "1s"
  kind = "hang"
  for = "3s"
  [[engine.event]]
  at = "6s"
  kind = "hang"
  for = "3s"
[[engine]]
name = "broken"
format = "llamacpp"
  [[engine.event]]
  at = "0s"
  kind = "status"
  code = 500
  for = "60s"
`

// End to end on loopback: three simulated engines at 200-500 ms for 10 s.
// The healthy one has a row for every tick, started on time; the hung one
// shows missed ticks and no catch-up; the failing one has an error row per
// tick; every count agrees with the simulator's truth log.
func TestEndToEndAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s end-to-end recording")
	}
	sc, err := sim.ParseScenario([]byte(e2eScenario), "e2e.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := sim.Serve(ctx, sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	intervals := map[string]time.Duration{"healthy": 200 * time.Millisecond, "hung": 300 * time.Millisecond, "broken": 500 * time.Millisecond}
	cfg := &Config{}
	for _, tg := range srv.Targets() {
		cfg.Targets = append(cfg.Targets, Target{Name: tg.Name, URL: tg.MetricsURL, Interval: Duration(intervals[tg.Name])})
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const dur = 10 * time.Second
	if _, err := Run(ctx, cfg, Options{Dir: dir, Duration: dur}); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, dir)
	by := map[string][]capture.Scrape{}
	for _, r := range rows {
		by[r.Target] = append(by[r.Target], r)
	}
	served := map[string]map[int]int{} // engine → status → /metrics requests
	for _, e := range srv.Log() {
		if e.Path != "/metrics" {
			continue
		}
		if served[e.Engine] == nil {
			served[e.Engine] = map[int]int{}
		}
		served[e.Engine][e.Status]++
	}

	// Healthy: one ok row per tick, seq contiguous, started on time.
	h := by["healthy"]
	wantTicks := int(dur/intervals["healthy"]) + 1
	if len(h) < wantTicks-1 || len(h) > wantTicks {
		t.Errorf("healthy: %d rows for %d ticks", len(h), wantTicks)
	}
	var lags []time.Duration
	for i, r := range h {
		if r.Seq != int64(i) || r.Outcome != capture.OutcomeOK {
			why := ""
			if r.Error != nil {
				why = *r.Error
			}
			t.Fatalf("healthy row %d: seq %d outcome %s %s", i, r.Seq, r.Outcome, why)
		}
		lags = append(lags, time.Duration(r.StartNs-r.ScheduledNs))
	}
	// On time means within the late tolerance, the rule that makes a later
	// tick a missed one: a catch-up would be an interval late. How close
	// to the tick is a figure of the host's load, measured by
	// BenchmarkCadenceHostile, not asserted here.
	slices.Sort(lags)
	if p99 := lags[len(lags)*99/100]; p99 >= lateTolerance(intervals["healthy"]) {
		t.Errorf("healthy scheduled-to-start lag p99 %s, want under %s", p99, lateTolerance(intervals["healthy"]))
	}
	if served["healthy"][200] != len(h) {
		t.Errorf("healthy: %d ok rows, simulator served %d", len(h), served["healthy"][200])
	}

	// Hung: missed ticks, and fired scrapes never closer than one interval.
	var missed, fired, ok int
	for i, r := range by["hung"] {
		if r.Seq != int64(i) {
			t.Fatalf("hung row %d has seq %d: a tick lost or doubled", i, r.Seq)
		}
		if r.Outcome == capture.OutcomeMissed {
			missed++
			continue
		}
		fired++
		if r.Outcome == capture.OutcomeOK {
			ok++
		}
		// Every fired scrape starts at its own tick: none is a late catch-up.
		if lag := time.Duration(r.StartNs - r.ScheduledNs); lag >= lateTolerance(intervals["hung"]) {
			t.Errorf("hung seq %d fired %s after its tick: a catch-up", r.Seq, lag)
		}
	}
	if missed < 5 {
		t.Errorf("hung: %d missed ticks over two 3 s hangs", missed)
	}
	var hungRequests int
	for _, n := range served["hung"] {
		hungRequests += n
	}
	if hungRequests != fired || served["hung"][200] != ok {
		t.Errorf("hung: %d fired (%d ok), simulator saw %d requests (%d answered 200)", fired, ok, hungRequests, served["hung"][200])
	}

	// Broken: one http_error row per tick, each a 500 the simulator sent.
	b := by["broken"]
	for _, r := range b {
		if r.Outcome != capture.OutcomeHTTPError || r.Status == nil || *r.Status != 500 {
			t.Fatalf("broken seq %d: %s %v", r.Seq, r.Outcome, r.Status)
		}
	}
	if len(b) < int(dur/intervals["broken"]) || served["broken"][500] != len(b) {
		t.Errorf("broken: %d rows, simulator sent %d 500s", len(b), served["broken"][500])
	}
	t.Logf("healthy %d rows (lag p50 %s p99 %s); hung %d fired, %d missed; broken %d", len(h), lags[len(lags)/2], lags[len(lags)*99/100], fired, missed, len(b))
}
