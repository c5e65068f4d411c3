package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// An extra endpoint's path is redacted as a URL is: its query values
// (/slots?token=…) are in no output (the Parquet rows read back, the
// manifest, inspect, analyze's JSON, render's HTML and Markdown), while
// the request carries them as its query.
func TestEndpointPathRedacted(t *testing.T) {
	const secret = "epTOKEN16"
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slots":
			if r.URL.Query().Get("token") == secret {
				got.Add(1)
			}
			w.Write([]byte(`[{"id":0,"is_processing":false}]`))
		default:
			w.Write([]byte("# TYPE x counter\nx_total 1\n"))
		}
	}))
	defer srv.Close()
	cfg := fmt.Sprintf("interval = \"100ms\"\n[[target]]\nname = \"e\"\nurl = %q\n[[target.endpoint]]\npath = \"/slots?token=%s\"\n", srv.URL+"/metrics", secret)
	dir, stdout, stderr := recordConfig(t, cfg, "700ms")
	if got.Load() == 0 {
		t.Fatal("no /slots request carried the token as its query")
	}
	out := outputs{"record stdout": stdout, "record stderr": stderr}
	var rows strings.Builder
	endpoints := map[string]bool{}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range segs {
		err := capture.ReadSegment(p, func(s *capture.Scrape) error {
			b, _ := json.Marshal(s)
			rows.Write(b)
			endpoints[s.Endpoint] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out["parquet"] = rows.String()
	if !endpoints["/slots?token=<redacted>"] {
		t.Errorf("endpoints %v", endpoints)
	}
	manifests, _ := filepath.Glob(filepath.Join(dir, "*.manifest.json"))
	for _, p := range manifests {
		b, _ := os.ReadFile(p)
		out["manifest"] += string(b)
	}
	readOutputs(t, dir, out)
	for name, text := range out {
		if i := strings.Index(text, secret); i >= 0 {
			t.Errorf("%s holds the endpoint's token: %q", name, text[max(0, i-80):min(len(text), i+20)])
		}
	}
}
