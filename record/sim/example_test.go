package sim_test

import (
	"fmt"
	"time"

	"github.com/llmrec/llmrec/record/sim"
)

// Render gives the /metrics body at an offset, and Truth the values behind
// it: here 10 s after a load of 100 generated tokens a second started.
func ExampleEngine_Truth() {
	sc, err := sim.ParseScenario([]byte(`
[[engine]]
name = "vllm-0"
format = "vllm"
  [[engine.phase]]
  at = "5s"
  decode_tps = 100.0
  prompt_tps = 300.0
  cached_fraction = 0.5
  output_len = 50
`), "example.toml")
	if err != nil {
		fmt.Println(err)
		return
	}
	engines, err := sc.Build(time.Time{})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := engines[0]
	body := e.Render(15 * time.Second)
	c := e.Truth(15 * time.Second).Sets[0].Counters
	fmt.Println(len(body) > 40000, c.GenerationTokens, c.PromptTokens, c.CachedPromptTokens, c.Requests)
	// Output: true 1000 3000 1500 20
}
