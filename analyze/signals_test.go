package analyze

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/record/sim"
)

// restartScenario is a llama.cpp engine restarted while loaded: for 3 s
// it answers 503 Loading model, and by the next good poll the new
// process's counters have all passed the old process's values (prompt
// 600 → 6000, n_decode_total too): only the loading answer tells.
const restartScenario = `
name = "restart while unanswered"
duration = "24s"

[[engine]]
name = "llama"
format = "llamacpp"
slots = 4

  [[engine.phase]]
  at = "0s"
  idle = true

  [[engine.phase]]
  at = "1s"
  decode_tps = 40.0
  prompt_tps = 100.0
  running = 1
  output_len = 10

  [[engine.phase]]
  at = "7s"
  idle = true

  [[engine.phase]]
  at = "10s"
  decode_tps = 400.0
  prompt_tps = 2000.0
  running = 4
  output_len = 10

  [[engine.phase]]
  at = "18s"
  idle = true

  [[engine.event]]
  at = "10s"
  kind = "restart"
  for = "3s"
`

// A restart whose new process overtook the old counters before the next
// good poll is found from the loading answer between them; no window
// across it is published, for any cell; the run's token total is both
// processes' sum.
func TestRestartWhileUnanswered(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(restartScenario), "restart.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	start := float64(sim.DefaultStart.UnixNano()) / 1e9
	restartAt := start + 10

	var found *findings.Incident
	for i, in := range res.Findings.Incidents {
		if in.Kind == findings.KindRestart && string(in.Target) == "llama" {
			found = &res.Findings.Incidents[i]
		}
	}
	if found == nil {
		t.Fatalf("no restart found; incidents %+v", res.Findings.Incidents)
	}
	if !strings.Contains(found.Detail, "Loading model") || found.Start.V > restartAt || found.End.V < restartAt+3 {
		t.Errorf("restart %s .. %s: %s", found.Start, found.End, found.Detail)
	}

	tg := onlyTarget(t, res, "llama")
	for _, p := range tg.Polls {
		for _, n := range p.Cells {
			c := n.Cell
			// A window that reaches back over the restart mixes two processes.
			if c.Value.Valid && c.Window.Valid && p.T-c.Window.V < restartAt && p.T > restartAt {
				t.Errorf("%s at %.1f s: %v over %v s, across the restart", n.Name, p.T-start, c.Value, c.Window)
			}
		}
	}

	engines, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	total := func(at time.Duration) float64 {
		c := engines[0].Truth(at).Sets[0].Counters
		return c.EvaluatedPromptTokens + c.CompletedGenerationTokens
	}
	old, now := total(9900*time.Millisecond), total(23*time.Second)
	if old <= 0 || now <= old {
		t.Fatalf("scenario: the old process ends at %v tokens, the new one at %v: no overtaking", old, now)
	}
	s := res.Findings.Fleet.Summary
	if s.TokensRun.V != old+now || s.TokensTotal.V != old+now {
		t.Errorf("tokens over the run %v, lifetime at the end %v; want both processes' sum %v + %v", s.TokensRun, s.TokensTotal, old, now)
	}
}

// The demo's scripted stall (vllm-0's generation counter frozen from 13 s
// to 16 s while 32 requests ran and 10 waited, the HTTP server hung for
// the first 1.5 s of it), recorded at the demo's 1 s: one engine_stall
// incident over it, and no load edge.
func TestDemoStallIsAnEngineStall(t *testing.T) {
	dir := t.TempDir()
	generate(t, sim.DefaultScenario(), dir, sim.GenerateOptions{Interval: time.Second})
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	start := float64(sim.DefaultStart.UnixNano()) / 1e9
	var stalls []findings.Incident
	for _, in := range res.Findings.Incidents {
		if in.Kind == findings.KindEngineStall {
			stalls = append(stalls, in)
		}
	}
	if len(stalls) != 1 {
		t.Fatalf("%d engine stalls, want the scripted one: %+v", len(stalls), stalls)
	}
	s := stalls[0]
	if s.Target != "vllm-0" || math.Abs(s.Start.V-start-13) > 0.1 || math.Abs(s.End.V-start-16) > 0.1 {
		t.Errorf("engine stall of %s at %.3f .. %.3f s, want vllm-0 at 13 .. 16 s", s.Target, s.Start.V-start, s.End.V-start)
	}
	if !strings.Contains(s.Detail, "32 requests running and 10 waiting") || !strings.Contains(s.Counterfactual, "a 10 s span would have printed") {
		t.Errorf("engine stall says %q; %q", s.Detail, s.Counterfactual)
	}
	for _, e := range res.Findings.Edges {
		if e.Target == "vllm-0" && e.T > start+12 && e.T < start+17 {
			t.Errorf("a %s edge at %.3f s inside the stall", e.Kind, e.T-start)
		}
	}
}

// stallScenario has a vLLM and a llama.cpp engine each stalling for 8 s
// with requests in the batch, then idling with none: the stalls are
// engine_stall incidents and no edges; the idles are edges and no stall.
const stallScenario = `
name = "stalls"
duration = "70s"

[[engine]]
name = "v"
format = "vllm"

  [[engine.phase]]
  at = "0s"
  decode_tps = 1000.0
  prompt_tps = 2000.0
  running = 8

  [[engine.phase]]
  at = "20s"
  running = 8
  waiting = 2

  [[engine.phase]]
  at = "28s"
  decode_tps = 1000.0
  prompt_tps = 2000.0
  running = 8

  [[engine.phase]]
  at = "45s"
  idle = true

[[engine]]
name = "l"
format = "llamacpp"

  [[engine.phase]]
  at = "0s"
  decode_tps = 80.0
  prompt_tps = 200.0
  running = 4
  output_len = 20

  [[engine.phase]]
  at = "20s"
  running = 4

  [[engine.phase]]
  at = "28s"
  decode_tps = 80.0
  prompt_tps = 200.0
  running = 4
  output_len = 20

  [[engine.phase]]
  at = "45s"
  idle = true
`

func TestEngineStallsAreNotEdges(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(stallScenario), "stalls.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	start := float64(sim.DefaultStart.UnixNano()) / 1e9
	got := map[string]int{}
	for _, in := range res.Findings.Incidents {
		if in.Kind != findings.KindEngineStall {
			continue
		}
		got[string(in.Target)]++
		if math.Abs(in.Start.V-start-20) > 1.1 || math.Abs(in.End.V-start-28) > 1.1 {
			t.Errorf("%s: engine stall %.3f .. %.3f s, want 20 .. 28 s", in.Target, in.Start.V-start, in.End.V-start)
		}
	}
	if got["v"] != 1 || got["l"] != 1 {
		t.Errorf("engine stalls %v, want one on each engine: %+v", got, res.Findings.Incidents)
	}
	ends := map[string]int{}
	for _, e := range res.Findings.Edges {
		if e.T > start+19 && e.T < start+29 {
			t.Errorf("%s: a %s edge at %.3f s inside the stall", e.Target, e.Kind, e.T-start)
		}
		if e.Kind == findings.EdgeEnd && math.Abs(e.T-start-45) < 1.1 {
			ends[e.Target]++
		}
	}
	if ends["v"] != 1 || ends["l"] != 1 {
		t.Errorf("load ends at 45 s found %v, want one per engine", ends)
	}
}

// A clean run (idle, then a load start): the first poll's no_baseline and
// the jump hold at the load start, released at the next poll, are normal;
// nothing a reader needed was withheld. A hold never released is.
func TestVerdictCountsOnlyNeededRefusals(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(`
duration = "20s"
[[engine]]
name = "v"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  idle = true
  [[engine.phase]]
  at = "8s"
  decode_tps = 1500.0
  prompt_tps = 3000.0
  running = 8
`), "clean.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	s := onlyTarget(t, res, "v").Summary
	if len(s.Withheld) != 0 || s.Normal["no_baseline"] == 0 || s.Normal["jump"] == 0 || s.Refusals["jump"] != s.Normal["jump"] {
		t.Errorf("withheld %v, normal %v, refusals %v: want nothing withheld, the first poll and the load start's hold normal",
			s.Withheld, s.Normal, s.Refusals)
	}

	// The same run cut right after the load start: its hold is never released.
	dir = t.TempDir()
	generate(t, sc, dir, sim.GenerateOptions{Interval: time.Second, Duration: 9500 * time.Millisecond})
	res, err = Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := onlyTarget(t, res, "v").Summary; s.Withheld["decode_tokens_per_second"]["jump"] != 1 {
		t.Errorf("withheld %v, normal %v: want the last poll's unreleased hold on decode", s.Withheld, s.Normal)
	}
}
