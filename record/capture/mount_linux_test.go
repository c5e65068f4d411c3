package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of size at dir; it needs root (tests run as
// root in CI), and the test skips without it.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
}

// A crashed recording on read-only media reads: the journal is recovered
// in memory (root ignores permission bits, so the media are a tmpfs
// remounted read-only). Repair there fails cleanly and changes nothing.
func TestCrashedRecordingOnReadOnlyMedia(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	os.MkdirAll(dir, 0o755)
	mountTmpfs(t, dir, "4m")
	writeSeg(t, dir, runA+"-000001.parquet", row(runA, "a", 0), row(runA, "a", 1))
	crashJournal(t, dir, runA, 2, row(runA, "a", 2), row(runA, "a", 3))
	os.WriteFile(filepath.Join(dir, runA+"-000002.parquet.tmp"), []byte("half"), 0o644)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("the media are writable: %v", err)
	}
	before := snapshot(t, dir)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(r)
	if rep.Rows != 4 || len(rep.Problems) != 0 || len(r.Crashed) != 1 {
		t.Fatalf("rows %d problems %v crashed %v", rep.Rows, rep.Problems, r.Crashed)
	}
	s, err := Find(r, "", "a", EndpointMetrics, 3)
	if err != nil || string(s.Body) != string(body(3)) {
		t.Fatalf("find in the crashed journal: %v", err)
	}
	if _, err := Recover(dir); err == nil || !strings.Contains(err.Error(), "read-only file system") {
		t.Fatalf("repair on read-only media: %v", err)
	}
	sameFolder(t, before, snapshot(t, dir))
}

// A manifest write that fails for want of space leaves no temporary file.
func TestManifestWriteOnFullDiskLeavesNoTemporary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "full")
	os.MkdirAll(dir, 0o755)
	mountTmpfs(t, dir, "64k")
	// Fill the disk, leaving less than the manifest needs.
	fill, _ := os.Create(filepath.Join(dir, "fill"))
	fill.Write(make([]byte, 60<<10))
	fill.Close()
	m := Manifest{RunID: runR, Start: "2026-01-01T00:00:00Z", Config: strings.Repeat("x", 32<<10)}
	err := WriteManifest(dir, m)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("error %v, want no space left on device", err)
	}
	names, _ := folderNames(dir)
	if len(names) != 1 || names[0] != "fill" {
		t.Fatalf("folder after a failed manifest write: %v", names)
	}
}
