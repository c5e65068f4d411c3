package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
)

// A side with nothing to compare fails a --fail-on gate: a candidate that
// captured nothing (its one target refused every scrape) exits 1 and says
// so, whether its target pairs with the baseline's (every row null on its
// side) or not ("no rows"), where it exited 0. Without --fail-on it still
// exits 0.
func TestDiffNothingToCompareFails(t *testing.T) {
	base := diffRuns(t, filepath.Join(t.TempDir(), "base"), 1, 1)
	for _, c := range []struct{ target, table, want string }{
		{"e", "21 insufficient", "the candidate holds no value in any of the 21 rows"},
		{"other", "no rows", "no phase and quantity is held by both sides"},
	} {
		cand := deadRecording(t, c.target)
		out, _, err := runCLI("diff", "--quiet", base[0], "--", cand)
		if exitCode(err) != 0 || !strings.Contains(out, c.table) {
			t.Fatalf("%s, no --fail-on: exit %d, %v\n%s", c.target, exitCode(err), err, out)
		}
		_, _, err = runCLI("diff", "--quiet", base[0], "--", cand, "--fail-on", "worse")
		if exitCode(err) != 1 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, --fail-on worse: exit %d, %v", c.target, exitCode(err), err)
		}
	}
}

// deadRecording records a target named name whose port refuses every
// scrape, for 0.7 s, and returns the run folder.
func deadRecording(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/metrics"
	ln.Close()
	dir := filepath.Join(t.TempDir(), "cand")
	cfg := &record.Config{Targets: []record.Target{{Name: name, URL: dead, Interval: record.Duration(100 * time.Millisecond)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if _, err := record.Run(ctx, cfg, record.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The --fail-on error names the first rows and counts the rest, so one
// failing diff is one readable line, not every row (53 in the recipe).
func TestFailOnErrorNamesFirstRows(t *testing.T) {
	rows := []string{"a", "b", "c", "d", "e", "f", "g"}
	if got, want := firstOf(rows, 5), "a; b; c; d; e; and 2 more (the table above lists them)"; got != want {
		t.Errorf("firstOf(7 rows, 5) = %q, want %q", got, want)
	}
	if got, want := firstOf(rows[:5], 5), "a; b; c; d; e"; got != want {
		t.Errorf("firstOf(5 rows, 5) = %q, want %q", got, want)
	}
}
