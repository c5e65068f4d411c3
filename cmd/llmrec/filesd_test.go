package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// record --file-sd records the targets a Prometheus file_sd file names,
// alone (no --target); a file that matches nothing is the caller's
// mistake (exit 2).
func TestRecordFileSD(t *testing.T) {
	addr := strings.TrimSuffix(strings.TrimPrefix(answering(t), "http://"), "/metrics")
	sd := filepath.Join(t.TempDir(), "fleet.json")
	if err := os.WriteFile(sd, []byte(`[{"targets": ["`+addr+`"], "labels": {"llmrec_name": "eng"}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := runCLI("record", "-o", dir, "--duration", "300ms", "--interval", "100ms", "--file-sd", sd); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	r, err := capture.Open(dir)
	if err != nil || len(r.Manifests) != 1 || len(r.Manifests[0].Targets) != 1 || r.Manifests[0].Targets[0].Name != "eng" {
		t.Fatalf("manifest: %v %+v", err, r)
	}
	_, _, err = runCLI("record", "-o", filepath.Join(t.TempDir(), "run"), "--duration", "300ms", "--file-sd", filepath.Join(t.TempDir(), "none.json"))
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
}

// A FIFO the file_sd pattern matches is refused by name at once, never
// waited on (it hung start-up past --duration and both SIGINTs); a label
// that looks like a credential reaches neither the manifest nor analyze's
// JSON.
func TestRecordFileSDFIFOAndLabels(t *testing.T) {
	addr := strings.TrimSuffix(strings.TrimPrefix(answering(t), "http://"), "/metrics")
	sdDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(sdDir, "fleet.json"), []byte(`[{"targets": ["`+addr+`"], "labels": {"llmrec_name": "eng", "api_key": "hunter2-key", "pool": "a"}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sdDir, "pipe.json"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := runCLI("record", "-o", filepath.Join(t.TempDir(), "run"), "--duration", "300ms", "--file-sd", filepath.Join(sdDir, "*.json"))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "pipe.json: not a regular file") {
			t.Errorf("a FIFO matched: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("record still waits on the FIFO after 10 s")
	}
	os.Remove(filepath.Join(sdDir, "pipe.json"))
	dir := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := runCLI("record", "-o", dir, "--duration", "300ms", "--interval", "100ms", "--file-sd", filepath.Join(sdDir, "*.json")); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	js := filepath.Join(t.TempDir(), "a.json")
	if _, _, err := runCLI("analyze", dir, "--quiet", "--json", js); err != nil {
		t.Fatal(err)
	}
	noSecret(t, "hunter2", dir, js)
}
