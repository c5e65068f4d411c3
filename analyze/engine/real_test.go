package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/goldentest"
)

// realCaptures is the shared folder of real /metrics scrapes, relative to
// this package.
const realCaptures = "../../../shared/captures/real"

// describe renders what one poll of a capture yields: the engine, the cells
// a single poll can produce, those that need a second poll (null, with
// their reason), those the engine does not export, and the unknown series.
func describe(name string, cells Cells, tr *Tracker) string {
	var b strings.Builder
	id, how := tr.Engine()
	fmt.Fprintf(&b, "== %s\nengine %s (by %s)\n", name, id, how)
	notes := tr.Notes()
	if v := notes["engine"]; v != "" {
		fmt.Fprintf(&b, "variant: %s\n", v)
	}
	var one, two, other []string
	var none []string
	for _, c := range cells {
		switch {
		case c.Cell.Value.Valid:
			one = append(one, cellLine(c))
		case c.Cell.Reason == ReasonNotExported:
			none = append(none, c.Name)
		case c.Cell.Reason == rate.ReasonNoBaseline:
			two = append(two, c.Name)
		default:
			other = append(other, cellLine(c))
		}
	}
	fmt.Fprintf(&b, "one poll (%d):\n", len(one))
	for _, l := range one {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "need two polls, no_baseline (%d): %s\n", len(two), strings.Join(two, " "))
	fmt.Fprintf(&b, "null for another reason (%d):\n", len(other))
	for _, l := range other {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "not exported (%d): %s\n", len(none), strings.Join(none, " "))
	unk := tr.Unknown()
	fmt.Fprintf(&b, "unknown series (%d): %s\n", len(unk), strings.Join(unk, " "))
	return b.String()
}

func cellLine(c Named) string {
	s := fmt.Sprintf("%s = %s", c.Name, c.Cell.Value)
	if c.Cell.Reason != "" {
		s += " reason=" + c.Cell.Reason
	}
	if c.Cell.Severity != "" {
		s += " severity=" + c.Cell.Severity
	}
	if len(c.Cell.By) > 0 {
		keys := make([]string, 0, len(c.Cell.By))
		for k := range c.Cell.By {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s += fmt.Sprintf(" by[%s]=%g", k, c.Cell.By[k])
		}
	}
	s += fmt.Sprintf(" source=%q", c.Cell.Source)
	if c.Cell.Derived {
		s += " derived"
	}
	for _, n := range c.Cell.Notes {
		s += fmt.Sprintf(" note=%q", n)
	}
	return s
}

func readCapture(t *testing.T, path string) []expo.Sample {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := expo.Parse(body, "text/plain; version=0.0.4")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ss
}

// Each real capture: its detected engine and the golden list of its
// canonical cells from a single poll; unknown series are listed.
func TestRealCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realCaptures, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s (the shared folder is absent): skipping the golden", realCaptures)
	}
	var out strings.Builder
	for _, f := range files {
		tr := NewTracker("", rate.Config{})
		cells := tr.ObserveSamples(1000, 999.99, readCapture(t, f), nil)
		out.WriteString(describe(filepath.Base(f), cells, tr))
		out.WriteString("\n")
	}
	goldentest.Check(t, filepath.Join("testdata", "real-captures.golden"), []byte(out.String()))
}

// diff returns the first differing lines of two texts.
