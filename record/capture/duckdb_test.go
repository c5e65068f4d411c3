package capture

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// DuckDB reads a merged file whose body pages hold megabytes of real vLLM
// bodies: more than zstdCodec's 1 MiB window, so the frames carry several
// blocks that refer back across block boundaries.
func TestDuckDBReadsMergedFile(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("../../../shared/captures/real", "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		t.Skipf("real capture absent: %v", err)
	}
	page = append(page, '\n') // it ends without one
	dir := t.TempDir()
	w, err := NewWriter(dir, "R", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(3)
	ct := "text/plain; version=0.0.4"
	var want Scrape
	for i := range 60 {
		s := Scrape{RunID: "R", Target: "vllm", Endpoint: EndpointMetrics, Seq: int64(i), Outcome: OutcomeOK,
			ScheduledNs: int64(i) * 2e9, ContentType: &ct, Body: fmt.Appendf(bytes.Clone(page), "llmrec_test_seq %d\n", i)}
		Parse(&s)
		if s.Outcome != OutcomeOK {
			t.Fatalf("parse: %s", *s.ParseError)
		}
		if i == 37 {
			want = s
		}
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if segs := w.Segments(); len(segs) != 1 || filepath.Base(segs[0]) != "R-000001_000003.parquet" {
		t.Fatalf("segments %v, want one merged file", segs)
	}
	glob := filepath.Join(dir, "*.parquet")
	res := duckdb(t,
		fmt.Sprintf("SELECT count(*) AS n, sum(octet_length(body)) AS bytes FROM read_parquet('%s')", glob),
		fmt.Sprintf("SELECT hex(body) AS b FROM read_parquet('%s') WHERE seq = 37", glob),
		fmt.Sprintf(`SELECT s.value AS v, s.labels AS l FROM (SELECT unnest(samples) AS s FROM read_parquet('%s') WHERE seq = 37)
			WHERE s.name = 'llmrec_test_seq'`, glob),
		fmt.Sprintf("SELECT count(*) AS n FROM (SELECT unnest(samples) AS s FROM read_parquet('%s'))", glob),
	)
	if n, b := res[0][0]["n"], res[0][0]["bytes"]; fmt.Sprint(n) != "60" || fmt.Sprint(b) != fmt.Sprint(60*len(page)+60*len("llmrec_test_seq 0\n")+50) {
		t.Errorf("DuckDB counts %v rows of %v body bytes", n, b)
	}
	got, _ := hex.DecodeString(res[1][0]["b"].(string))
	if !bytes.Equal(got, want.Body) {
		t.Errorf("DuckDB's body of seq 37 differs from the one written")
	}
	if len(res[2]) != 1 || fmt.Sprint(res[2][0]["v"]) != "37" || res[2][0]["l"] != "{}" {
		t.Errorf("sample llmrec_test_seq of seq 37 via DuckDB: %v", res[2])
	}
	if n := fmt.Sprint(res[3][0]["n"]); n != fmt.Sprint(60*len(want.Samples)) {
		t.Errorf("DuckDB counts %s samples, want %d", n, 60*len(want.Samples))
	}
}

// duckdb runs SQL in DuckDB itself (the npm package @duckdb/node-api, which
// .ci/run installs) and returns the rows of each statement. Outside CI it
// skips when node or the package is missing; in CI (CI=true) that fails.
func duckdb(t *testing.T, sql ...string) [][]map[string]any {
	t.Helper()
	script, _ := filepath.Abs("../../.ci/duckdb/query.mjs")
	modules := filepath.Join(filepath.Dir(script), "node_modules", "@duckdb", "node-api")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(modules)
	if nodeErr != nil || modErr != nil {
		msg := fmt.Sprintf("DuckDB unavailable (node: %v; module: %v); run: (cd .ci/duckdb && npm ci)", nodeErr, modErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command("node", append([]string{script}, sql...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var res [][]map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var rows []map[string]any
		if err := json.Unmarshal(line, &rows); err != nil {
			t.Fatalf("duckdb output %q: %v", line, err)
		}
		res = append(res, rows)
	}
	return res
}
