package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A target whose page holds more series than max_series answered every
// scrape: record says it is "up, unparsed" with the count and the limit,
// exits 0, and analyze withholds its figures saying so, with no
// target_down incident (it said "down, failed N").
func TestUnparsedTargetIsUp(t *testing.T) {
	var page strings.Builder
	page.WriteString("# TYPE x gauge\n")
	for i := range 10 {
		fmt.Fprintf(&page, "x{i=\"%d\"} 1\n", i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(page.String())) }))
	defer srv.Close()
	dir, stdout, _ := recordConfig(t, fmt.Sprintf("interval = \"100ms\"\nmax_series = 5\n[[target]]\nname = \"big\"\nurl = %q\n", srv.URL+"/metrics"), "800ms")
	line := ""
	for l := range strings.Lines(stdout) {
		if strings.Contains(l, "big ") {
			line = l
		}
	}
	if !strings.Contains(line, "big              up, unparsed ok 0  failed 0  unparsed ") || !strings.Contains(line, "too many series: 10 > 5") {
		t.Errorf("status line %q", line)
	}
	out, _, err := runCLI("analyze", dir)
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	if !strings.Contains(out, "big withheld: up, unparsed: ") || strings.Contains(out, "target_down") {
		t.Errorf("analyze:\n%s", out)
	}
}

// recordConfig records with the configuration cfg for duration into a new
// run folder, failing the test if record fails; it returns the folder and
// what record printed.
func recordConfig(t *testing.T, cfg, duration string) (dir, stdout, stderr string) {
	t.Helper()
	work := t.TempDir()
	cfgPath := filepath.Join(work, "llmrec.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(work, "run")
	var out, errOut strings.Builder
	if err := run(context.Background(), &out, &errOut, []string{"record", "--out", dir, "--config", cfgPath, "--duration", duration}); err != nil {
		t.Fatalf("record: %v\n%s", err, errOut.String())
	}
	return dir, out.String(), errOut.String()
}
