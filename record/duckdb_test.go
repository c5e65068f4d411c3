package record

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/duckdbtest"
)

// duckdb runs SQL in DuckDB itself (see package duckdbtest).
func duckdb(t *testing.T, sql ...string) [][]map[string]any { return duckdbtest.Query(t, sql...) }

// DuckDB itself reads a recorded run: its row count and a body's bytes
// match inspect and export, and the samples are queryable with their labels.
func TestDuckDBReadsARecording(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Server", "bench-engine")
		w.Header().Set("X-Secret", "S3CR3T-VALUE")
		if n%4 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} %d\n# TYPE x gauge\nx NaN\n", n*10)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := &Config{Interval: Duration(50 * time.Millisecond), Rotate: Duration(200 * time.Millisecond), CompactEvery: 1,
		Targets: []Target{{Name: "vllm", URL: srv.URL + "/metrics"}, {Name: "dead", URL: "http://127.0.0.1:1/metrics"}}}
	cfg.Validate()
	if _, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 700 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := capture.Inspect(r)
	if len(rep.Segments) < 2 {
		t.Fatalf("want several segments, got %d", len(rep.Segments))
	}
	// The first seq from 5 on that the target answered (every fourth call
	// is a 503, and a loaded host may miss a tick).
	var want *capture.Scrape
	seq := int64(5)
	for ; seq < 12; seq++ {
		if want, err = capture.Find(r, "", "vllm", capture.EndpointMetrics, seq); err == nil && want.Outcome == capture.OutcomeOK {
			break
		}
	}
	if want == nil || want.Outcome != capture.OutcomeOK {
		t.Fatalf("no ok scrape of vllm from seq 5 to 11: %v", err)
	}
	glob := filepath.Join(dir, "*.parquet")
	res := duckdb(t,
		fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s')", glob),
		fmt.Sprintf("SELECT hex(body) AS b, body_delta IS NOT NULL AS delta FROM read_parquet('%s') WHERE target = 'vllm' AND seq = %d", glob, seq),
		fmt.Sprintf(`SELECT s.value AS v, json_extract_string(s.labels, '$.model_name') AS model
			FROM (SELECT unnest(samples) AS s FROM read_parquet('%s') WHERE target = 'vllm' AND seq = %d)
			WHERE s.name = 'vllm:generation_tokens_total'`, glob, seq),
		fmt.Sprintf("SELECT outcome, count(*) AS n, count(start_ns) AS started FROM read_parquet('%s') GROUP BY outcome ORDER BY outcome", glob),
		fmt.Sprintf("SELECT key, value FROM parquet_kv_metadata('%s') WHERE key = 'llmrec.schema_version' LIMIT 1", glob),
		// The response headers: harmless ones in clear, the others digests;
		// no header without a response.
		fmt.Sprintf(`SELECT json_extract_string(headers, '$.Server') AS server, json_extract_string(headers, '$."X-Secret"') AS secret,
			json_extract_string(headers, '$."Content-Type"') AS ct FROM read_parquet('%s') WHERE target = 'vllm' AND seq = %d`, glob, seq),
		fmt.Sprintf("SELECT count(*) AS n, count(headers) AS h FROM read_parquet('%s') WHERE target = 'dead'", glob),
		fmt.Sprintf("SELECT count(*) AS secret FROM read_parquet('%s') WHERE headers LIKE '%%S3CR3T%%'", glob),
	)
	if got := num(res[0][0]["n"]); got != rep.Rows {
		t.Errorf("DuckDB counts %d rows, inspect %d", got, rep.Rows)
	}
	// A body is whole in its row (a key frame), or empty there and kept
	// as its delta from the row before (schema version 2), which export
	// (want) puts back.
	body, _ := hex.DecodeString(res[1][0]["b"].(string))
	if delta := res[1][0]["delta"] == true; !bytes.Equal(body, want.Body) && (!delta || len(body) != 0) {
		t.Errorf("DuckDB body %q (delta %v), export %q", body, delta, want.Body)
	}
	if len(res[2]) != 1 || res[2][0]["model"] != "m" || num(res[2][0]["v"]) != int64(want.Samples[0].Value) {
		t.Errorf("samples via DuckDB %v, want %v", res[2], want.Samples)
	}
	outcomes := map[string]int64{}
	for _, row := range res[3] {
		outcomes[row["outcome"].(string)] = num(row["n"])
	}
	if outcomes["ok"] == 0 || outcomes["http_error"] == 0 || outcomes["error"] == 0 {
		t.Errorf("outcomes %v", outcomes)
	}
	if len(res[4]) != 1 {
		t.Errorf("schema version metadata: %v", res[4])
	}
	if h := res[5]; len(h) != 1 || h[0]["server"] != "bench-engine" || h[0]["ct"] != "text/plain; charset=utf-8" ||
		!strings.HasPrefix(fmt.Sprint(h[0]["secret"]), "<redacted sha256:") {
		t.Errorf("headers via DuckDB %v, want Server and Content-Type in clear, X-Secret a digest", h)
	}
	if d := res[6]; len(d) != 1 || num(d[0]["n"]) == 0 || num(d[0]["h"]) != 0 {
		t.Errorf("headers of a target that never answered: %v, want none", d)
	}
	if d := res[7]; len(d) != 1 || num(d[0]["secret"]) != 0 {
		t.Errorf("rows whose headers hold the secret: %v", d)
	}
}

func num(v any) int64 {
	switch x := v.(type) {
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	case float64:
		return int64(x)
	}
	return -1
}
