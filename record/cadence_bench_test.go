package record

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// healthyPage is a 40 KB exposition page, the size of a vLLM engine's.
func healthyPage() []byte {
	var b bytes.Buffer
	b.WriteString("# TYPE vllm:request_latency_seconds histogram\n")
	for i := 0; b.Len() < 40<<10; i++ {
		fmt.Fprintf(&b, "vllm:request_latency_seconds_bucket{model_name=\"m\",le=\"%d\"} %d\n", i, i*7)
	}
	return b.Bytes()
}

// hostileHandlers serve the bodies that once stalled healthy neighbours:
// 200 MiB (refused at the 64 MiB cap), an endless body trickling 4 KiB
// every 5 ms, and a gzip bomb of 256 MiB of zeros.
func hostileHandlers() map[string]http.HandlerFunc {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 256 {
		zw.Write(zeros)
	}
	zw.Close()
	chunk := bytes.Repeat([]byte("# padding padding padding padding padding padding padding padding\n"), 1<<14)
	return map[string]http.HandlerFunc{
		"huge": func(w http.ResponseWriter, r *http.Request) {
			for n := 0; n < 200<<20; n += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
		"endless": func(w http.ResponseWriter, r *http.Request) {
			line := bytes.Repeat([]byte("x 1\n"), 1<<10)
			for {
				if _, err := w.Write(line); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		},
		"bomb": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		},
	}
}

// hostileEnv makes the test binary serve the hostile handlers instead of
// testing (see TestMain): a hostile target is another process, as an
// attacker's is, so the cost of serving it is not charged to the recorder's
// own threads.
const hostileEnv = "LLMREC_HOSTILE_SERVERS"

// serveHostile serves the hostile handlers on loopback, writes "name url"
// lines and "ready" to stdout, and returns when stdin closes.
func serveHostile() {
	for name, h := range hostileHandlers() {
		srv := httptest.NewServer(h)
		defer srv.Close()
		fmt.Printf("%s %s/metrics\n", name, srv.URL)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}

// hostileServers starts the hostile servers in a child process (this test
// binary, see hostileEnv) and returns their URLs by name.
func hostileServers(b *testing.B) map[string]string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), hostileEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	urls := map[string]string{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		name, u, _ := strings.Cut(sc.Text(), " ")
		urls[name] = u
	}
	if len(urls) != 3 {
		b.Fatalf("hostile servers: %v (%v)", urls, sc.Err())
	}
	return urls
}

// BenchmarkCadenceHostile records three healthy targets at 200 ms, alone
// and beside three hostile ones at 1 s (served by another process), for 6 s per iteration and reports
// the healthy targets' missed ticks and the p99 of their lag from tick to
// request (start_ns - scheduled_ns). Target beside the hostile ones: 0
// missed, p99 under 20 ms; "alone" is the host's own noise.
//
//	go test ./record -run '^$' -bench CadenceHostile -benchtime 1x
func BenchmarkCadenceHostile(b *testing.B) {
	page := healthyPage()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(page)
	}))
	defer healthy.Close()
	cfg := &Config{}
	for i := range 3 {
		cfg.Targets = append(cfg.Targets, Target{Name: fmt.Sprintf("healthy%d", i), URL: healthy.URL + "/metrics",
			Interval: Duration(200 * time.Millisecond)})
	}
	b.Run("alone", func(b *testing.B) { cadence(b, cfg) })
	hostile := *cfg
	hostile.Targets = slices.Clone(cfg.Targets)
	for name, u := range hostileServers(b) {
		hostile.Targets = append(hostile.Targets, Target{Name: name, URL: u, Interval: Duration(time.Second)})
	}
	b.Run("hostile", func(b *testing.B) { cadence(b, &hostile) })
}

func cadence(b *testing.B, cfg *Config) {
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var missed, ticks int
	var lags []time.Duration
	why := map[string]int{}
	for b.Loop() {
		dir := b.TempDir()
		if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 6 * time.Second}); err != nil {
			b.Fatal(err)
		}
		r, err := capture.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, seg := range r.Segments {
			err := capture.ReadSegment(seg, func(s *capture.Scrape) error {
				if !strings.HasPrefix(s.Target, "healthy") {
					return nil
				}
				ticks++
				if s.Outcome == capture.OutcomeMissed {
					missed++
					why[*s.Error]++
					return nil
				}
				lags = append(lags, time.Duration(s.StartNs-s.ScheduledNs))
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if len(lags) == 0 {
		b.Fatal("no healthy scrape was fired")
	}
	slices.Sort(lags)
	b.ReportMetric(float64(missed)/float64(b.N), "missed/op")
	b.ReportMetric(float64(ticks)/float64(b.N), "healthy-ticks/op")
	b.ReportMetric(float64(lags[len(lags)/2])/1e6, "p50-lag-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100])/1e6, "p99-lag-ms")
	b.ReportMetric(float64(lags[len(lags)-1])/1e6, "max-lag-ms")
	for w, n := range why {
		b.Logf("%d missed: %s", n, w)
	}
}

// BenchmarkCadenceManyTargets records up to MaxScrapeRate targets at 1 s
// (one loopback server, a small page each) for 5 s and reports the rows,
// the missed ticks (and how many as "recorder stalled") and the p99 lag.
// More are refused by Config.Validate (TestScrapeRateLimit).
//
//	go test ./record -run '^$' -bench CadenceManyTargets -benchtime 1x
func BenchmarkCadenceManyTargets(b *testing.B) {
	page := []byte("# TYPE up gauge\nup 1\n# TYPE requests counter\nrequests_total 12345\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	defer srv.Close()
	for _, n := range []int{MaxScrapeRate / 2, MaxScrapeRate} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cfg := &Config{Interval: Duration(time.Second)}
			for i := range n {
				cfg.Targets = append(cfg.Targets, Target{Name: fmt.Sprintf("t%d", i), URL: fmt.Sprintf("%s/metrics?t=%d", srv.URL, i)})
			}
			if err := cfg.Validate(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var rows, missed, stalled int
			whys := map[string]int{}
			var lags []time.Duration
			for b.Loop() {
				dir := b.TempDir()
				if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 5 * time.Second}); err != nil {
					b.Fatal(err)
				}
				r, err := capture.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				for _, seg := range r.Segments {
					if err := capture.ReadSegment(seg, func(s *capture.Scrape) error {
						rows++
						switch {
						case s.Outcome != capture.OutcomeMissed:
							lags = append(lags, time.Duration(s.StartNs-s.ScheduledNs))
						case strings.HasPrefix(*s.Error, "recorder stalled"):
							stalled++
							missed++
						default:
							missed++
						}
						if s.Outcome != capture.OutcomeOK {
							why, _, _ := strings.Cut(*cmp.Or(s.Error, s.ParseError), ":")
							whys[s.Outcome+": "+why]++
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
			}
			slices.Sort(lags)
			for w, n := range whys {
				b.Logf("%d %s", n, w)
			}
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
			b.ReportMetric(float64(missed)/float64(b.N), "missed/op")
			b.ReportMetric(float64(stalled)/float64(b.N), "stalled/op")
			if len(lags) > 0 {
				b.ReportMetric(float64(lags[len(lags)*99/100])/1e6, "p99-lag-ms")
			}
		})
	}
}
