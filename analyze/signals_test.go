package analyze

import (
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
