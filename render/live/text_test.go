package live_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/goldentest"
	"github.com/llmrec/llmrec/record/sim"
	livetext "github.com/llmrec/llmrec/render/live"
)

// frameAt is the simulator's default scenario (recorded at 1 s) as it
// stood d into the run.
func frameAt(t *testing.T, d time.Duration) *live.Frame {
	t.Helper()
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	// A warmup, then two levels of a sweep.
	for _, m := range []capture.Mark{{Name: "warmup", TNs: sim.DefaultStart.UnixNano()}, {Name: "low", TNs: sim.DefaultStart.Add(3 * time.Second).UnixNano()},
		{Name: "high", TNs: sim.DefaultStart.Add(8 * time.Second).UnixNano()}} {
		if _, err := capture.AppendMark(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	f, err := live.Read(live.Options{Dir: dir, Until: sim.DefaultStart.Add(d).UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	f.Dir = "run" // the folder's name is the test's temporary one
	return f
}

// A frame in the stall, plain (no terminal): read the golden's diff.
func TestGoldenFrame(t *testing.T) {
	var b bytes.Buffer
	if err := livetext.Text(&b, frameAt(t, 16500*time.Millisecond), livetext.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\x1b[") {
		t.Error("a plain frame has ANSI escapes")
	}
	goldentest.Check(t, filepath.Join("testdata", "frame-stall.golden"), b.Bytes())
}

// On a terminal the states and bands are coloured: a stalled target red.
func TestColorFrame(t *testing.T) {
	var b bytes.Buffer
	if err := livetext.Text(&b, frameAt(t, 16500*time.Millisecond), livetext.TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[31mstalled\x1b[0m") {
		t.Errorf("no red stalled state in:\n%s", b.String())
	}
}

func TestSpark(t *testing.T) {
	got := livetext.Spark([]rate.Num{rate.Some(0), {}, rate.Some(50), rate.Some(100)})
	if got != "▁·▅█" {
		t.Errorf("Spark = %q, want ▁·▅█", got)
	}
}
