package sharedtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNeed runs a child test on a present and an absent path, with and
// without Required: only an absent path under Required=true fails.
func TestNeed(t *testing.T) {
	if p := os.Getenv("SHAREDTEST_CHILD"); p != "" {
		Need(t, p, "the item")
		return
	}
	present := t.TempDir()
	absent := filepath.Join(present, "missing")
	for _, c := range []struct {
		path, required string
		fail, skip     bool
	}{
		{present, "", false, false},
		{present, "true", false, false},
		{absent, "", false, true},
		{absent, "true", true, false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestNeed$", "-test.v")
		cmd.Env = append(os.Environ(), "SHAREDTEST_CHILD="+c.path, Required+"="+c.required)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.fail {
			t.Errorf("path %s, %s=%q: failed %v, want %v\n%s", c.path, Required, c.required, failed, c.fail, out)
		}
		if skipped := strings.Contains(string(out), "--- SKIP"); skipped != c.skip {
			t.Errorf("path %s, %s=%q: skipped %v, want %v\n%s", c.path, Required, c.required, skipped, c.skip, out)
		}
	}
}
