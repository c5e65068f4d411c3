package capture

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/duckdbtest"
)

// DuckDB reads a merged file whose body pages hold megabytes of real vLLM
// bodies: more than zstdCodec's 1 MiB window, so the frames carry several
// blocks that refer back across block boundaries. The first row holds its
// body whole (a key frame), the others their deltas (schema version 2),
// from which this package's reader puts back each body byte for byte.
// The file is made both ways: three one-minute segments merged (Rotate),
// and a live writer's group of three minutes written once (Tick).
func TestDuckDBReadsMergedFile(t *testing.T) {
	t.Run("merged", func(t *testing.T) { duckdbReadsMerged(t, (*Writer).Rotate) })
	t.Run("group", func(t *testing.T) { duckdbReadsMerged(t, (*Writer).Tick) })
}

func duckdbReadsMerged(t *testing.T, minuteEnd func(*Writer) error) {
	page, err := os.ReadFile(filepath.Join("../../../shared/captures/real", "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		t.Skipf("real capture absent: %v", err)
	}
	page = append(page, '\n') // it ends without one
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(3)
	ct := "text/plain; version=0.0.4"
	var want, first Scrape
	for i := range 60 {
		s := Scrape{RunID: runR, Target: "vllm", Endpoint: EndpointMetrics, Seq: int64(i), Outcome: OutcomeOK,
			ScheduledNs: int64(i) * 2e9, ContentType: &ct, Body: fmt.Appendf(bytes.Clone(page), "llmrec_test_seq %d\n", i)}
		Parse(&s)
		if s.Outcome != OutcomeOK {
			t.Fatalf("parse: %s", *s.ParseError)
		}
		if i == 37 {
			want = s
		}
		if i == 0 {
			first = s
		}
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			if err := minuteEnd(w); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.CloseMerged(); err != nil {
		t.Fatal(err)
	}
	if segs := w.Segments(); len(segs) != 1 || filepath.Base(segs[0]) != runR+"-000001_000003.parquet" {
		t.Fatalf("segments %v, want one merged file", segs)
	}
	glob := filepath.Join(dir, "*.parquet")
	res := duckdb(t,
		fmt.Sprintf("SELECT count(*) AS n, sum(octet_length(body)) AS bytes, count(body_delta) AS d FROM read_parquet('%s')", glob),
		fmt.Sprintf("SELECT hex(body) AS b FROM read_parquet('%s') WHERE seq = 0", glob),
		fmt.Sprintf(`SELECT s.value AS v, s.labels AS l FROM (SELECT unnest(samples) AS s FROM read_parquet('%s') WHERE seq = 37)
			WHERE s.name = 'llmrec_test_seq'`, glob),
		fmt.Sprintf("SELECT count(*) AS n FROM (SELECT unnest(samples) AS s FROM read_parquet('%s'))", glob),
	)
	if n, b, d := res[0][0]["n"], res[0][0]["bytes"], res[0][0]["d"]; fmt.Sprint(n) != "60" || fmt.Sprint(b) != fmt.Sprint(len(first.Body)) || fmt.Sprint(d) != "59" {
		t.Errorf("DuckDB counts %v rows of %v body bytes and %v deltas, want 60, %d and 59", n, b, d, len(first.Body))
	}
	got, _ := hex.DecodeString(res[1][0]["b"].(string))
	if !bytes.Equal(got, first.Body) {
		t.Errorf("DuckDB's body of seq 0 (the key frame) differs from the one written")
	}
	var read []byte
	err = ReadSegment(w.Segments()[0], func(s *Scrape) error {
		if s.Seq == 37 {
			read = s.Body
		}
		return nil
	})
	if err != nil || !bytes.Equal(read, want.Body) {
		t.Errorf("the body of seq 37 read back differs from the one written (%v)", err)
	}
	if len(res[2]) != 1 || fmt.Sprint(res[2][0]["v"]) != "37" || res[2][0]["l"] != "{}" {
		t.Errorf("sample llmrec_test_seq of seq 37 via DuckDB: %v", res[2])
	}
	if n := fmt.Sprint(res[3][0]["n"]); n != fmt.Sprint(60*len(want.Samples)) {
		t.Errorf("DuckDB counts %s samples, want %d", n, 60*len(want.Samples))
	}
}

// duckdb runs SQL in DuckDB itself (see package duckdbtest).
func duckdb(t *testing.T, sql ...string) [][]map[string]any { return duckdbtest.Query(t, sql...) }

// DuckDB reads the marks file as newline-delimited JSON, each key typed,
// and skips nothing it should read.
func TestDuckDBReadsMarks(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"warmup", "load-8", "load-8"} {
		if _, err := AppendMark(dir, Mark{TNs: int64(1e18) + int64(i)*1e9, Name: name, End: i == 2, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	res := duckdb(t, fmt.Sprintf("SELECT name, \"end\", t_ns, time FROM read_json('%s', format = 'newline_delimited') ORDER BY t_ns",
		filepath.Join(dir, MarksFile)))
	rows := res[0]
	if len(rows) != 3 || rows[1]["name"] != "load-8" || rows[2]["end"] != true || fmt.Sprint(rows[0]["t_ns"]) != "1000000000000000000" {
		t.Errorf("rows %v", rows)
	}
}
