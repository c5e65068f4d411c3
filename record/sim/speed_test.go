package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// speedScenario is one vLLM engine under steady load, with the speed knob
// given as TOML.
func speedScenario(t *testing.T, speed string) *Engine {
	t.Helper()
	text := `
[[engine]]
name = "e"
format = "vllm"
` + speed + `
  [[engine.phase]]
  at = "0s"
  decode_tps = 1000.0
  prompt_tps = 3000.0
  running = 8
  waiting = 2
`
	sc, err := ParseScenario([]byte(text), "speed.toml")
	if err != nil {
		t.Fatal(err)
	}
	es, err := sc.Build(DefaultStart)
	if err != nil {
		t.Fatal(err)
	}
	return es[0]
}

func TestSpeedScalesThePhases(t *testing.T) {
	base := speedScenario(t, "")
	cand := speedScenario(t, `speed = {decode = 0.9, prompt = 1.1, ttft = 1.3, queue = 2.0}`)
	b, c := base.Truth(10*time.Second), cand.Truth(10*time.Second)
	if got := c.Rates.GenerationTokens / b.Rates.GenerationTokens; math.Abs(got-0.9) > 1e-9 {
		t.Errorf("decode ratio %v, want 0.9", got)
	}
	if got := c.Rates.PromptTokens / b.Rates.PromptTokens; math.Abs(got-1.1) > 1e-9 {
		t.Errorf("prompt ratio %v, want 1.1", got)
	}
	// The TTFT of the candidate: its queue doubled (and a tenth longer for
	// the slower request rate), its prefill the same, all of it × 1.3.
	bp, cp := &base.phases[len(base.phases)-1], &cand.phases[len(cand.phases)-1]
	if got, want := cp.queue/bp.queue, 2.0/0.9; math.Abs(got-want) > 1e-9 {
		t.Errorf("queue ratio %v, want %v", got, want)
	}
	if want := 1.3 * (cp.queue + cp.prefill + 0.005); math.Abs(cp.ttft-want) > 1e-12 {
		t.Errorf("ttft %v, want %v", cp.ttft, want)
	}
	if base.phases[len(base.phases)-1].ttft == cp.ttft {
		t.Error("the ttft factor changed nothing")
	}
}

func TestSpeedRefusesANonPositiveFactor(t *testing.T) {
	for _, bad := range []string{"speed = {decode = -1.0}", "speed = {ttft = inf}", "speed = {nope = 1.0}"} {
		text := "[[engine]]\nname = \"e\"\nformat = \"vllm\"\n" + bad + "\n"
		_, err := ParseScenario([]byte(text), "bad.toml")
		if err == nil || !strings.Contains(err.Error(), "speed") {
			t.Errorf("%s: error %v, want one naming speed", bad, err)
		}
	}
}

func TestVersionIsReported(t *testing.T) {
	e := speedScenario(t, `version = "0.11.0"`)
	if got := string(e.InfoJSON("/version", DefaultStart)); got != `{"version":"0.11.0"}` {
		t.Errorf("/version = %s", got)
	}
}
