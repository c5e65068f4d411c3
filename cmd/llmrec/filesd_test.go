package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
