package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// unsealedPair records two one-minute segments of two targets into a new
// folder, as a recorder made before seals did (no ledger), and returns the
// folder and the second segment.
func unsealedPair(t *testing.T) (dir, second string) {
	t.Helper()
	dir = t.TempDir()
	w, err := capture.NewWriter(dir, dmgRun, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ct := "text/plain; version=0.0.4"
	for seg := range 2 {
		for i := range 300 {
			seq := seg*300 + i
			for _, target := range []string{"vllm-0", "vllm-1"} {
				st := int64(1_800_000_000_000_000_000 + seq*2e9)
				s := capture.Scrape{RunID: dmgRun, Target: target, Endpoint: capture.EndpointMetrics, URL: "http://127.0.0.1/metrics",
					Seq: int64(seq), Outcome: capture.OutcomeOK, ScheduledNs: st, StartNs: st + 1, FirstByteNs: st + 2, EndNs: st + 3,
					ContentType: &ct, Body: fmt.Appendf(nil, "# HELP vllm:generation_tokens_total Tokens.\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"m\"} %d\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n", seq*100, seq%7)}
				capture.Parse(&s)
				if err := w.Append(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		if seg == 0 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ledgers, _ := filepath.Glob(filepath.Join(dir, "*.seals*"))
	for _, l := range ledgers {
		os.Remove(l)
	}
	return dir, filepath.Join(dir, dmgRun+"-000002.parquet")
}

// A damaged segment of a recording without seals is refused alike by
// every command that reads it: inspect, export, analyze and compaction
// (repair merges the segments a stop left single) each report the one
// reader's error, which names the file, and where it knows them the row
// group, column, page and rows. Before, inspect and export read the
// format with another reader than analyze: a flipped bit in a page of
// the samples was refused by analyze and counted as 1,200 good rows by
// inspect (exit 0), which reads no sample.
func TestDamageRefusedAlikeByEveryCommand(t *testing.T) {
	cases := []struct {
		name, want string
		damage     func(t *testing.T, data []byte) []byte
	}{
		{"a flipped bit in a page of sample values", "checksum", func(t *testing.T, data []byte) []byte {
			return inValues(t, data)
		}},
		{"a flipped bit in the footer's row count", "states 592 rows", func(t *testing.T, data []byte) []byte {
			return withRowCount(t, data, 600^8)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, seg := unsealedPair(t)
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seg, c.damage(t, data), 0o644); err != nil {
				t.Fatal(err)
			}
			ref := capture.ReadSegment(seg, func(*capture.Scrape) error { return nil })
			if !errors.Is(ref, capture.ErrDamaged) || !strings.Contains(ref.Error(), seg) || !strings.Contains(ref.Error(), c.want) {
				t.Fatalf("the reader: %v, want damaged naming %s and %q", ref, seg, c.want)
			}
			msg := ref.Error()
			out := t.TempDir()
			for _, args := range [][]string{
				{"inspect", dir},
				{"analyze", dir, "--quiet", "--spans", "none"},
				{"export", dir, "--openmetrics", "-o", filepath.Join(out, "r.om")},
				{"repair", dir}, // compaction of the two segments
			} {
				stdout, stderr, err := runCLI(args...)
				if err == nil {
					t.Errorf("llmrec %s exited 0 over %s", args[0], c.name)
				}
				if !strings.Contains(stdout+stderr, msg) {
					t.Errorf("llmrec %s does not report the reader's error %q:\n%s%s", args[0], msg, stdout, stderr)
				}
			}
			// Repair merged nothing: both segments are still there.
			if segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet")); len(segs) != 2 {
				t.Errorf("after repair: %v", segs)
			}
		})
	}
}

// withRowCount is a segment's bytes with its one row group's row count
// set to n in the footer (the file's own count left as it was).
// inValues flips a bit in the middle of the sample values' column chunk:
// in a page's data, whatever the columns before it (a random byte of the
// file, as before, landed in a page header once body_delta came).
func inValues(t *testing.T, data []byte) []byte {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), data[len(data)-8-flen:len(data)-8], &md); err != nil {
		t.Fatal(err)
	}
	for _, c := range md.RowGroups[0].Columns {
		if strings.Join(c.MetaData.PathInSchema, ".") == "samples.list.element.value" {
			out := slices.Clone(data)
			out[c.MetaData.DataPageOffset+c.MetaData.TotalCompressedSize/2] ^= 0x10
			return out
		}
	}
	t.Fatal("no sample values column")
	return nil
}

func withRowCount(t *testing.T, data []byte, n int64) []byte {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - flen
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), data[start:len(data)-8], &md); err != nil {
		t.Fatal(err)
	}
	md.RowGroups[0].NumRows = n
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		t.Fatal(err)
	}
	out := append(slices.Clone(data[:start]), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}
