package main

import (
	"cmp"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// seriesPage is an exposition page of n series, 40 bytes each.
func seriesPage(n int) []byte {
	b := make([]byte, 0, n*40+100)
	b = append(b, "# HELP llm_reqs Requests by id.\n# TYPE llm_reqs gauge\n"...)
	for i := range n {
		b = append(b, `llm_reqs{model="m-7b",id="`...)
		b = append(b, fmt.Sprintf("%07d", i)...)
		b = append(b, `"} `...)
		b = strconv.AppendInt(b, int64(i%977), 10)
		b = append(b, '\n')
	}
	return b
}

// A real recorder, bounded to 4 GB of address space, records a loopback
// target serving a page of a million series (40 MB) every 2 s for 40 s, and
// one serving a page at the series limit (200,000 series, 8 MB). Reported:
// the recorder's peak RSS, how long it took to stop after --duration, and
// the rows stored and missed. The recording must finish (not die of memory); the
// million-series pages are stored unparsed with a "too many series" parse
// error, the others parsed.
//
//	go test ./cmd/llmrec -run '^$' -bench RecordLargePages -benchtime 1x
func BenchmarkRecordLargePages(b *testing.B) {
	bin := buildBinary(b)
	for _, c := range []struct {
		name      string
		series    int
		wantError string // every row's parse error
	}{
		{"1M-series", 1_000_000, "too many series: 1000000 > 200000 (max_series); body stored unparsed"},
		{"200k-series", 200_000, ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			page := seriesPage(c.series)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/metrics" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				w.Write(page)
			}))
			defer srv.Close()
			for b.Loop() {
				recordLargePages(b, bin, srv.URL+"/metrics", c.wantError)
			}
		})
	}
}

func recordLargePages(b *testing.B, bin, url, wantError string) {
	const duration = 40 * time.Second
	dir := filepath.Join(b.TempDir(), "run")
	// ulimit -v takes KiB: 4 GiB of address space.
	cmd := exec.Command("sh", "-c", `ulimit -v 4194304 && exec "$@"`, "sh", bin, "record", "--out", dir,
		"--interval", "2s", "--duration", duration.String(), "--quiet", "--target", "big="+url)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	stop := time.Since(start) - duration
	if err != nil {
		b.Fatalf("recorder: %v\n%s", err, out)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
	b.ReportMetric(stop.Seconds(), "stop-s")

	r, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	rows, want, missed := 0, 0, 0
	other := map[string]int{}
	for _, seg := range r.Segments {
		// Not the 40 MB bodies.
		err := capture.ReadScrapes(seg, capture.OmitBody|capture.OmitSamples|capture.OmitHeaders, func(s *capture.Scrape) error {
			rows++
			switch {
			case s.Outcome == capture.OutcomeMissed:
				// A page that took longer than the interval to parse on a
				// busy host: the tick found its scrape still running.
				missed++
			case deref(s.Error) == "" && deref(s.ParseError) == wantError:
				want++
			default:
				other[s.Outcome+": "+cmp.Or(deref(s.Error), deref(s.ParseError))]++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if want < 10 || want+missed != rows {
		b.Fatalf("%d rows, %d of them as wanted, %d missed; others: %v", rows, want, missed, other)
	}
	b.ReportMetric(float64(want), "rows")
	b.ReportMetric(float64(missed), "missed")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
