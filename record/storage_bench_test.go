package record

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/openmetrics"
	"github.com/llmrec/llmrec/record/promtest"
	"github.com/llmrec/llmrec/record/sim"
)

// BenchmarkStorageVsTSDB records one hour of a simulated vLLM V1 engine at
// 2 s (as BenchmarkDiskPerScrape) and sets its bytes on disk beside those
// of Prometheus' own store of the same samples, measured in the same run:
// the recording exported as OpenMetrics (llmrec export --openmetrics) and
// made into a TSDB block by `promtool tsdb create-blocks-from openmetrics`.
// x-tsdb is the recording's bytes over the block's (goal ≤ 1.0, moonshot
// ≤ 0.6): the recording keeps every body byte for byte besides the samples.
func BenchmarkStorageVsTSDB(b *testing.B) {
	promtool := promtest.Tool(b, "promtool")
	sc := sim.LongScenario(1, time.Hour, 1)
	var st GenerateStats
	var dir string
	b.ReportAllocs()
	for b.Loop() {
		dir = b.TempDir()
		var err error
		st, err = WriteGenerated(dir, sc, sim.GenerateOptions{Interval: 2 * time.Second}, time.Minute, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	tsdb := tsdbBytes(b, promtool, dir)
	b.ReportMetric(float64(st.DiskBytes)/float64(st.Scrapes), "disk-B/scrape")
	b.ReportMetric(float64(tsdb)/float64(st.Scrapes), "tsdb-B/scrape")
	b.ReportMetric(float64(st.DiskBytes)/float64(tsdb), "x-tsdb")
}

// tsdbBytes is the size of the TSDB block promtool makes of the samples of
// the recording in dir.
func tsdbBytes(b *testing.B, promtool, dir string) int64 {
	b.Helper()
	r, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	om := filepath.Join(tmp, "samples.om")
	f, err := os.Create(om)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := openmetrics.Write(w, r, openmetrics.Options{TempDir: tmp}); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	blocks := filepath.Join(tmp, "blocks")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, blocks).CombinedOutput(); err != nil {
		b.Fatalf("promtool: %v: %s", err, out)
	}
	var n int64
	err = filepath.WalkDir(blocks, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
