package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultScenario(t *testing.T) {
	sc := DefaultScenario()
	if len(sc.Engines) != 2 || sc.Engines[0].Format != FormatVLLM || sc.Engines[1].Format != FormatLlamaCpp {
		t.Fatalf("default scenario engines = %+v", sc.Engines)
	}
	if sc.Duration != 30*time.Second {
		t.Errorf("duration = %v, want 30s", sc.Duration)
	}
	kinds := map[EventKind]bool{}
	for _, es := range sc.Engines {
		for _, ev := range es.Events {
			kinds[ev.Kind] = true
		}
	}
	for _, k := range []EventKind{EventRestart, EventLabelJoin, EventHang, EventStatus, EventSlow, EventStale} {
		if !kinds[k] {
			t.Errorf("default scenario has no %s event", k)
		}
	}
	if _, err := sc.Build(time.Time{}); err != nil {
		t.Fatal(err)
	}
}

func TestLoadScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(path, []byte(DefaultScenarioTOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Engines[1].Slots != 4 || sc.Engines[0].Phases[1].DecodeTPS != 1500 || sc.Engines[0].Phases[0].KVUsage != -1 {
		t.Errorf("loaded scenario differs: %+v", sc.Engines)
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("missing file: no error")
	}
}

const minimal = `
[[engine]]
name = "e"
format = "vllm"
[[engine.phase]]
at = "0s"
decode_tps = 100.0
`

// Every mistake is reported with the file, and the engine, phase or event
// and key it concerns.
func TestParseScenarioErrors(t *testing.T) {
	for _, c := range []struct {
		name, toml string
		want       []string
	}{
		{"unknown key", minimal + "decode_tsp = 3.0\n", []string{"s.toml", "unknown key", "engine.phase.decode_tsp"}},
		{"unknown top key", "colour = 1\n" + minimal, []string{"s.toml", "unknown key colour"}},
		{"integer duration", strings.Replace(minimal, `at = "0s"`, "at = 5", 1), []string{"s.toml", "line", "duration string"}},
		{"syntax", minimal + "[[engine\n", []string{"s.toml", "line"}},
		{"no engine", `name = "x"`, []string{"s.toml", "no [[engine]]"}},
		{"bad format", strings.Replace(minimal, `"vllm"`, `"tgi"`, 1), []string{"s.toml", `engine[0] "e"`, "format"}},
		{"fraction", minimal + "cached_fraction = 1.5\n", []string{`engine[0] "e"`, "phase[0] (at 0s)", "cached_fraction"}},
		{"negative rate", minimal + "prompt_tps = -1.0\n", []string{"phase[0]", "prompt_tps"}},
		{"idle with rate", minimal + "idle = true\n", []string{"phase[0]", "idle"}},
		{"same offset", minimal + "[[engine.phase]]\nat = \"0s\"\n", []string{`engine[0] "e"`, "two phases start at 0s"}},
		{"duplicate engine", minimal + minimal, []string{`engine[1] "e"`, "used twice"}},
		{"event kind", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"explode\"\n", []string{"event[0]", "kind", "explode"}},
		{"hang without for", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"hang\"\n", []string{"event[0] (hang at 1s)", "for"}},
		{"status code", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"status\"\nfor = \"1s\"\ncode = 42\n", []string{"code"}},
		{"stale delay", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"stale\"\nfor = \"1s\"\n", []string{"delay"}},
		{"restart extra", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"restart\"\ncode = 503\n", []string{"code", "not used by restart"}},
		{"restart loading vllm", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"restart\"\nfor = \"1s\"\n", []string{"for", "needs format llamacpp"}},
		{"restart loading negative", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"restart\"\nfor = \"-1s\"\n", []string{"for", "negative"}},
		{"join twice", minimal + "[[engine.event]]\nat = \"1s\"\nkind = \"label_join\"\nlabel = \"0\"\n", []string{"label", "already exported"}},
		{"join llamacpp", strings.Replace(minimal, `"vllm"`, `"llamacpp"`, 1) + "[[engine.event]]\nat = \"1s\"\nkind = \"label_join\"\n", []string{"label_join needs format vllm"}},
		{"slots", strings.Replace(minimal, `"vllm"`, `"llamacpp"`, 1) + "running = 9\n", []string{"running", "slots"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(c.toml), "s.toml")
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseScenarioDefaults(t *testing.T) {
	sc, err := ParseScenario([]byte(minimal+"[[engine.event]]\nat = \"5s\"\nkind = \"label_join\"\n"), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	es := sc.Engines[0]
	if es.Model != DefaultVLLMModel || es.EngineLabel != "0" || es.MaxModelLen != 8192 || es.Phases[0].OutputLen != DefaultOutputLen {
		t.Errorf("defaults not applied: %+v", es)
	}
	if ev := es.Events[0]; ev.Label != "1" || ev.Carry != DefaultCarry {
		t.Errorf("label_join defaults: %+v", ev)
	}
	if sc.Duration != 15*time.Second || !sc.Start.Equal(DefaultStart) {
		t.Errorf("duration %v start %v", sc.Duration, sc.Start)
	}
}
