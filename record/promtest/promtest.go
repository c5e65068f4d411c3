// Package promtest runs Debian's Prometheus tools for tests: promtool, and
// a prometheus server on 127.0.0.1 over a given TSDB folder. Outside CI a
// test skips when they are missing; in CI (CI=true) it fails, as
// .ci/run installs them (apt-get install prometheus).
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Tool returns the path of a Prometheus tool (promtool, prometheus), or
// skips the test (fails it in CI) when it is not installed.
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s is missing (apt-get install -y prometheus); CI must run this test", name)
	}
	tb.Skipf("%s is missing (apt-get install -y prometheus): skipped outside CI", name)
	return ""
}

// Server is a prometheus process serving the HTTP API on loopback.
type Server struct {
	URL string // http://127.0.0.1:PORT
}

// Start runs prometheus over the TSDB folder tsdb, keeping every block
// whatever its age, and waits until it is ready. It is stopped when the
// test ends.
func Start(tb testing.TB, tsdb string) *Server {
	tb.Helper()
	return StartWith(tb, tsdb, "global: {}\n")
}

// StartWith is Start with the configuration config (YAML): scrape_configs
// make it scrape loopback targets itself.
func StartWith(tb testing.TB, tsdb, config string) *Server {
	tb.Helper()
	bin := Tool(tb, "prometheus")
	cfg := filepath.Join(tb.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	addr := freeAddr(tb)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfg, "--storage.tsdb.path="+tsdb,
		"--storage.tsdb.retention.time=100y", "--web.listen-address="+addr, "--log.level=warn")
	logf, err := os.Create(filepath.Join(tb.TempDir(), "prometheus.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cancel()
		cmd.Wait()
		logf.Close()
	})
	s := &Server{URL: "http://" + addr}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			tb.Fatalf("prometheus not ready after 20 s:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Sample is one raw sample a query returned.
type Sample struct {
	Ms    int64
	Value string // as Prometheus formats it: "NaN", "+Inf", "12.5"
}

// Series is one series of a range-vector answer.
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Raw runs the instant query q (a range selector, so the answer is the
// raw samples with their own timestamps) at time at.
func (s *Server) Raw(tb testing.TB, q string, at time.Time) []Series {
	tb.Helper()
	u := s.URL + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	resp, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		tb.Fatal(err)
	}
	if doc.Status != "success" || doc.Data.ResultType != "matrix" {
		tb.Fatalf("query %s: %s %s (%s)", q, doc.Status, doc.Error, doc.Data.ResultType)
	}
	var out []Series
	for _, r := range doc.Data.Result {
		sr := Series{Labels: r.Metric}
		for _, v := range r.Values {
			ts, _ := v[0].(float64)
			val, _ := v[1].(string)
			// A float's seconds read back to the millisecond by rounding.
			sr.Samples = append(sr.Samples, Sample{Ms: int64(ts*1000 + 0.5), Value: val})
		}
		out = append(out, sr)
	}
	return out
}

// String is a sample as the tests print it.
func (s Sample) String() string { return fmt.Sprintf("%s@%d", s.Value, s.Ms) }
