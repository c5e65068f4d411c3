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
	for bad, want := range map[string][]string{"want at least one run folder": {"render", "-o", html},
		"-o report.html is required with 2 run folders": {"render", "../../captures/findings/run", "../../captures/findings/run"}} {
		if _, _, err := runCLI(want...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), bad) {
			t.Errorf("llmrec %v: %v, want a usage error with %q", want, err, bad)
		}
	}
	if _, _, err := runCLI("render", filepath.Join(dir, "nope"), "-o", html, "--quiet"); err == nil {
		t.Error("rendered a folder that does not exist")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left temporary files: %v", ents)
	}
}

// Of one run folder without -o, render writes RUN/report.html and
// RUN/summary.md beside the captures, says where, and the folder still
// reads as the same recording (the captures are not touched).
func TestRenderDefaultsIntoTheRunFolder(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(run, os.DirFS("../../captures/findings/run")); err != nil {
		t.Fatal(err)
	}
	before, _, _ := runCLI("inspect", run)
	out, _, err := runCLI("render", run, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	html, md := filepath.Join(run, "report.html"), filepath.Join(run, "summary.md")
	if !strings.Contains(out, "wrote "+html+" and "+md) {
		t.Errorf("stdout %q, want it to name both files", out)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "vllm-0") {
		t.Errorf("report: %v", err)
	}
	if sum, err := os.ReadFile(md); err != nil || !strings.HasPrefix(string(sum), "# llmrec report") {
		t.Errorf("summary: %v", err)
	}
	// A second render reads the folder the same way (report and summary
	// are not captures) and replaces both.
	if after, _, _ := runCLI("inspect", run); after != before {
		t.Errorf("inspect changed after render:\n%s\n---\n%s", before, after)
	}
	if _, _, err := runCLI("render", run, "--quiet"); err != nil {
		t.Errorf("second render: %v", err)
	}
}
