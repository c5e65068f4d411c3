package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/phases"
)

// realRun is the folder of a real run in ../shared/real-runs, or skips the
// test where it is absent (fails under CI=true, where it must be there).
func realRun(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "real-runs", rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("real run %s is absent under CI=true: %v", p, err)
		}
		t.Skipf("no real run: %s is absent (it sits beside the repository as ../shared/real-runs)", p)
	}
	return p
}

// A real llama.cpp run whose phases were both marked while recording
// (rec/marks.jsonl) and written to phases.csv: given the file, each phase
// is listed once, with the file's bounds, and says it was marked too.
func TestRealFileAndMarksOneSet(t *testing.T) {
	dir := realRun(t, "llamacpp-b4748/a-baseline")
	file, err := phases.ReadFile(filepath.Join(dir, "phases.csv"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{filepath.Join(dir, "rec")}, SkipPolls: true, Phases: file})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range res.Output.Phases {
		if m.Kind == phases.KindNamed {
			seen[m.Name]++
		}
	}
	if len(seen) != len(file) {
		t.Errorf("named phases %v, want the file's %d", seen, len(file))
	}
	for _, p := range file {
		if seen[p.Name] != 1 {
			t.Errorf("phase %q listed %d times, want once", p.Name, seen[p.Name])
		}
	}
	for _, m := range res.Output.Phases {
		if m.Kind == phases.KindNamed && (m.Source != phases.SourceFile || !strings.Contains(m.Why, "marked too")) {
			t.Errorf("phase %q: source %s, why %q: want the file's, marked too", m.Name, m.Source, m.Why)
		}
	}
}
