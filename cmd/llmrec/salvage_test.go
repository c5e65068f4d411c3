package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// oversizeHeadersSegment writes, with parquet-go directly as a writer
// before the headers cap did, a segment of a healthy target's 151 scrapes
// and a flooding target's 21: 20 answers with 7 MiB of headers each (the
// attack sent 6.8 MB), which make one headers page over the readers' page
// cap, and an attempt without answer. It returns the folder, the file and
// its rows.
func oversizeHeadersSegment(t *testing.T) (dir, seg string, rows []capture.Scrape) {
	t.Helper()
	ct := "text/plain; version=0.0.4"
	small := `{"Content-Type":"text/plain","Server":"vllm"}`
	flood := `{"X-Flood":"` + strings.Repeat("f", 7<<20) + `"}`
	for i := range 151 + 21 {
		target, seq := "vllm-0", i
		if i >= 151 {
			target, seq = "flood", i-151
		}
		st := int64(1_800_000_000_000_000_000 + seq*2e9)
		s := capture.Scrape{RunID: dmgRun, Target: target, Endpoint: capture.EndpointMetrics, URL: "http://127.0.0.1/metrics",
			Seq: int64(seq), Outcome: capture.OutcomeOK, ScheduledNs: st, StartNs: st + 1, FirstByteNs: st + 2, EndNs: st + 3,
			ContentType: &ct, Headers: &small,
			Body: fmt.Appendf(nil, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %d\n", seq*100)}
		capture.Parse(&s)
		if target == "flood" {
			s.Headers = &flood
		}
		if target == "flood" && seq == 20 { // no answer: no headers
			s.Outcome, s.FirstByteNs, s.EndNs, s.Body, s.Samples, s.Headers, s.ContentType = capture.OutcomeError, 0, 0, nil, nil, nil, nil
		}
		rows = append(rows, s)
	}
	dir = t.TempDir()
	seg = filepath.Join(dir, dmgRun+"-000001.parquet")
	f, err := os.Create(seg)
	if err != nil {
		t.Fatal(err)
	}
	pw := parquet.NewGenericWriter[capture.Scrape](f, parquet.Compression(&zstd.Codec{}),
		parquet.KeyValueMetadata("llmrec.schema_version", capture.SchemaVersion))
	if _, err := pw.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, seg, rows
}

// A segment an older writer made with a headers page over every reader's
// cap (one target sent megabytes of headers) is refused by every command;
// repair rewrites it, and every row of both targets reads again, every
// column as written but the headers, which say they were lost. Before,
// repair named the file and exited 1, and the healthy target's 151
// scrapes stayed unreadable.
func TestRepairSalvagesOversizeHeaders(t *testing.T) {
	dir, seg, rows := oversizeHeadersSegment(t)
	if out, _, err := runCLI("inspect", dir); err == nil || !strings.Contains(out, "PROBLEM: segment "+seg) {
		t.Fatalf("inspect before repair: %v\n%s", err, out)
	}
	out, _, err := runCLI("repair", dir)
	if err != nil || !strings.Contains(out, "repaired   "+filepath.Base(seg)) || !strings.Contains(out, "172 rows rewritten") {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	if out, _, err := runCLI("inspect", dir); err != nil || !strings.Contains(out, "rows       172") {
		t.Errorf("inspect after repair: %v\n%s", err, out)
	}
	if out, _, err := runCLI("analyze", dir, "--quiet", "--spans", "none"); err != nil {
		t.Errorf("analyze after repair: %v\n%s", err, out)
	}
	var got []capture.Scrape
	if err := capture.ReadSegment(seg, func(s *capture.Scrape) error { got = append(got, *s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows after repair, want %d", len(got), len(rows))
	}
	for i, g := range got {
		w := rows[i]
		if g.Target != w.Target || g.Seq != w.Seq || g.Outcome != w.Outcome || !bytes.Equal(g.Body, w.Body) ||
			len(g.Samples) != len(w.Samples) || g.FirstByteNs != w.FirstByteNs {
			t.Fatalf("row %d came back as %s/%d %s, %d samples; want %s/%d %s, %d samples", i, g.Target, g.Seq, g.Outcome, len(g.Samples), w.Target, w.Seq, w.Outcome, len(w.Samples))
		}
		switch {
		case w.FirstByteNs == 0 && g.Headers != nil:
			t.Errorf("row %d had no answer and has headers %q", i, *g.Headers)
		case w.FirstByteNs != 0 && (g.Headers == nil || !strings.Contains(*g.Headers, capture.HeadersLost)):
			t.Errorf("row %d: headers %v, want them marked lost", i, g.Headers)
		}
	}
	if out, _, err := runCLI("repair", dir); err != nil || !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair: %v\n%s", err, out)
	}
}
