package analyze

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
	recorder "github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// headerScenario is an idle llama.cpp engine restarted at 1.5 s, loaded
// from then on: its counters only rise (the old process counted nothing),
// llama.cpp has no process_start_time_seconds and it answers no 503 while
// loading, so only the header a proxy in front of it adds tells.
const headerScenario = `
name = "restart told by a header"
duration = "10s"

[[engine]]
name = "l"
format = "llamacpp"
process_start_header = "X-Process-Start"

  [[engine.phase]]
  at = "0s"
  idle = true

  [[engine.phase]]
  at = "1500ms"
  decode_tps = 200.0
  prompt_tps = 400.0
  running = 2
  output_len = 10

  [[engine.event]]
  at = "1500ms"
  kind = "restart"
`

// A restart that only a response header shows, recorded from a real HTTP
// target: the recorder stores the header (a digest: it is not one known to
// be harmless), the analysis finds the restart from its change and
// refuses every window across it. Without the target's process_start_header
// in the manifest (as before the header was read) nothing finds it.
func TestRestartFromResponseHeader(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s recording")
	}
	sc, err := sim.ParseScenario([]byte(headerScenario), "header.toml")
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
	tg := srv.Targets()[0]
	cfg := &recorder.Config{Targets: []recorder.Target{{Name: "l", URL: tg.MetricsURL, Engine: "llamacpp",
		Interval: recorder.Duration(200 * time.Millisecond), ProcessStartHeader: "X-Process-Start"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := recorder.Run(ctx, cfg, recorder.Options{Dir: dir, Duration: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	restartAt := float64(srv.Start().Add(1500*time.Millisecond).UnixNano()) / 1e9

	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	var found *findings.Incident
	for i, in := range res.Findings.Incidents {
		if in.Kind == findings.KindRestart {
			found = &res.Findings.Incidents[i]
		}
	}
	if found == nil || !strings.Contains(found.Detail, "response header X-Process-Start changed from <redacted sha256:") {
		t.Fatalf("restart %+v; incidents %+v", found, res.Findings.Incidents)
	}
	t.Logf("restart: %s", found.Detail)
	after := 0
	for _, p := range onlyTarget(t, res, "l").Polls {
		if p.T <= restartAt {
			continue
		}
		after++
		for _, name := range []string{engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond} {
			c, _ := p.Cells.Get(name)
			// A window that reaches back over the restart mixes two processes.
			if c.Value.Valid && c.Window.Valid && p.T-c.Window.V < restartAt {
				t.Errorf("%s at %.2f s: %v over %v s, across the restart", name, p.T-restartAt, c.Value, c.Window)
			}
			if after == 1 && c.Reason != rate.ReasonReset {
				t.Errorf("%s at the first poll after the restart: %+v, want refused (reset)", name, c)
			}
		}
		if after == 1 && p.Break != BreakRestart {
			t.Errorf("first poll after the restart breaks %q", p.Break)
		}
	}
	if after < 5 {
		t.Fatalf("%d polls after the restart", after)
	}

	// The same recording, its manifest without the header's name.
	ms, _ := filepath.Glob(filepath.Join(dir, "*.manifest.json"))
	if len(ms) != 1 {
		t.Fatalf("manifests %v", ms)
	}
	b, err := os.ReadFile(ms[0])
	if err != nil || !strings.Contains(string(b), `"process_start_header": "X-Process-Start"`) {
		t.Fatalf("manifest %s: %v", b, err)
	}
	if err := os.WriteFile(ms[0], []byte(strings.ReplaceAll(string(b), `"process_start_header": "X-Process-Start"`, `"process_start_header": ""`)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range res.Findings.Incidents {
		if in.Kind == findings.KindRestart {
			t.Errorf("a restart found without the header: %+v", in)
		}
	}
}
