package analyze

import (
	"math"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/sim"
)

// A target polled at or under twice the default floor gets half its
// interval as its floor, unless a floor was asked for.
func TestFloorFor(t *testing.T) {
	for _, c := range []struct {
		asked    float64
		interval float64
		want     float64
		ok       bool
	}{
		{0, 1, 0, false},       // half of 1 s is the default floor
		{0, 2, 0, false},       // slower: the default
		{0, 0.5, 0.25, true},   // the floor itself: half of it
		{0, 0.25, 0.125, true}, // under the floor
		{0.3, 0.25, 0, false},  // asked for: kept
		{-1, 0.25, 0, false},   // turned off: kept off
		{0, 0, 0, false},       // interval unknown
	} {
		got, ok := floorFor(rate.Config{MinWindow: c.asked}, c.interval)
		if got != c.want || ok != c.ok {
			t.Errorf("floorFor(%v, %v) = %v, %v; want %v, %v", c.asked, c.interval, got, ok, c.want, c.ok)
		}
	}
}

// Polled every 250 ms, under the default 0.5 s floor: every decode window
// of a steady vLLM engine is published (the floor is 0.125 s there, said
// in gates.floors), where a 0.5 s floor refused every one.
func TestFastCadenceIsNotRefused(t *testing.T) {
	start := time.Unix(1767225600, 0)
	sc := &sim.Scenario{Name: "fast", Start: start, Duration: 20 * time.Second, Engines: []sim.EngineSpec{{
		Name: "v", Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, DecodeTPS: 1000, PromptTPS: 3000, Running: 8, OutputLen: 100, KVUsage: -1},
		}}}}
	dir := t.TempDir()
	generateIn(t, sc, dir, sim.GenerateOptions{Interval: 250 * time.Millisecond})
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Gates.Floors) != 1 || res.Gates.Floors[0].MinWindow != 0.125 {
		t.Fatalf("floors %+v, want v at 0.125 s", res.Gates.Floors)
	}
	published, refused := 0, map[string]int{}
	for _, p := range res.Targets[0].Polls {
		c, ok := p.Cells.Get(engine.DecodeTokensPerSecond)
		if !ok {
			continue
		}
		if c.Value.Valid {
			published++
			if math.Abs(c.Value.V-1000) > 10 {
				t.Errorf("t=%v: decode %v, want 1000", p.T, c.Value.V)
			}
		} else {
			refused[c.Reason]++
		}
	}
	if refused[rate.ReasonFloor] > 0 || published < 70 {
		t.Errorf("decode published %d times, refused %v; want about 79 and no floor", published, refused)
	}
}
