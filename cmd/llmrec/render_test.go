package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// llmrec render writes the page and the summary of a recording, readable
// by others (0644), and refuses without -o or a run folder.
func TestRenderCommand(t *testing.T) {
	dir := t.TempDir()
	// The outputs' folders are made when missing.
	html, md := filepath.Join(dir, "new", "report.html"), filepath.Join(dir, "other", "deep", "summary.md")
	out, _, err := runCLI("render", "../../captures/findings/run", "-o", html, "--md", md, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote "+html+" and "+md) {
		t.Errorf("stdout %q", out)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "<html") || !strings.Contains(string(page), "vllm-0") {
		t.Fatalf("page: %v", err)
	}
	st, _ := os.Stat(html)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("page mode %v", st.Mode().Perm())
	}
	sum, err := os.ReadFile(md)
	if err != nil || !strings.HasPrefix(string(sum), "# llmrec report") || len(sum) > 60000 {
		t.Fatalf("summary: %v (%d bytes)", err, len(sum))
	}
	for _, bad := range [][]string{{"render", "-o", html}, {"render", "../../captures/findings/run"}} {
		if _, _, err := runCLI(bad...); !errors.Is(err, errUsage) {
			t.Errorf("llmrec %v: %v, want a usage error", bad, err)
		}
	}
	if _, _, err := runCLI("render", filepath.Join(dir, "nope"), "-o", html, "--quiet"); err == nil {
		t.Error("rendered a folder that does not exist")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left temporary files: %v", ents)
	}
}
