package main

import (
	"flag"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

var renderDir = flag.String("render.dir", "", "a recording for BenchmarkRenderRSS to render (read only)")

// BenchmarkRenderRSS runs "llmrec render DIR -o day.html --md day.md" of
// the recording -render.dir (read only; the page and summary go to a
// temporary folder) in a child process and reports its peak RSS
// (getrusage's maxrss), wall and CPU seconds. The figure of issue 24 is
// this benchmark of a 24 h × 8 recording (345,600 polls):
//
//	go test ./cmd/llmrec -run '^$' -bench RenderRSS -benchtime 1x -render.dir RECORDING
func BenchmarkRenderRSS(b *testing.B) {
	if *renderDir == "" {
		b.Skip("no recording: -render.dir names one to render")
	}
	bin := buildBinary(b)
	b.ReportAllocs()
	for b.Loop() {
		out := b.TempDir()
		cmd := exec.Command(bin, "render", *renderDir, "-o", filepath.Join(out, "day.html"), "--md", filepath.Join(out, "day.md"), "--quiet")
		start := time.Now()
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("render: %v\n%s", err, msg)
		}
		wall := time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(cmd.ProcessState.UserTime().Seconds()+cmd.ProcessState.SystemTime().Seconds(), "cpu-s")
	}
}
