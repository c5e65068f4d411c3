package analyze

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/sim"
)

// A replay without its polls that tells the trackers the cells it reads
// (summaryCells) writes the same summary and the same JSON, byte for
// byte, as one that has every cell made, serially and on two workers: no
// cell it skips is read on the way (a headline, the findings, the
// phases' published figures).
func TestSummaryWantsItsCells(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 6-minute recording of four engines")
	}
	dir := t.TempDir()
	generate(t, sim.LongScenario(4, 6*time.Minute, 5), dir, sim.GenerateOptions{})
	ddir := t.TempDir()
	generate(t, sim.DefaultScenario(), ddir, sim.GenerateOptions{})
	out := func(dir string, want bool, workers int) (string, string) {
		t.Helper()
		wantSummary = want
		defer func() { wantSummary = true }()
		res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		var text, js bytes.Buffer
		if err := res.WriteSummary(&text); err != nil {
			t.Fatal(err)
		}
		if err := res.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		return text.String(), js.String()
	}
	for _, d := range []string{dir, ddir} {
		allText, allJSON := out(d, false, 1)
		for _, workers := range []int{1, 2} {
			text, js := out(d, true, workers)
			if text != allText {
				t.Errorf("%s, %d workers: the summary differs when only its cells are made:\n%s\nevery cell made:\n%s", d, workers, text, allText)
			}
			if js != allJSON {
				t.Errorf("%s, %d workers: the JSON differs when only the summary's cells are made", d, workers)
			}
		}
	}
}
