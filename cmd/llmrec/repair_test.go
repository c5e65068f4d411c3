package main

import (
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// files is every file of dir with its bytes.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// crashedFolder is a closed recording, a crashed session's journal (3
// rows of target "crashed") and files llmrec did not write.
func crashedFolder(t *testing.T) (dir, journal string, foreign []string) {
	t.Helper()
	dir = t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	// A copy of a live writer's journal, without its lock, is a crash.
	live := t.TempDir()
	run := record.NewRunID(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	w, err := capture.NewWriter(live, run, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		st := time.Date(2030, 1, 1, 0, 0, i, 0, time.UTC).UnixNano()
		s := capture.Scrape{RunID: run, Target: "crashed", Endpoint: capture.EndpointMetrics, Seq: int64(i),
			Outcome: capture.OutcomeOK, ScheduledNs: st, StartNs: st, FirstByteNs: st + 1, EndNs: st + 2,
			Body: []byte("up 1\n")}
		capture.Parse(&s)
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	journal = run + "-000001.journal"
	b, err := os.ReadFile(filepath.Join(live, journal))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	os.WriteFile(filepath.Join(dir, journal), b, 0o644)
	segs, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	seg, _ := os.ReadFile(segs[0])
	for name, content := range map[string][]byte{"data.parquet": seg, "sales-000001.parquet": seg,
		"export.parquet.tmp": []byte("half an export"), "mine.journal": []byte("my notes")} {
		os.WriteFile(filepath.Join(dir, name), content, 0o644)
	}
	return dir, journal, []string{"data.parquet", "export.parquet.tmp", "mine.journal", "sales-000001.parquet"}
}

// inspect and export read a crashed recording beside foreign files and
// leave every file byte for byte; inspect lists the foreign ones.
func TestReadingLeavesTheFolder(t *testing.T) {
	dir, _, foreign := crashedFolder(t)
	before := files(t, dir)
	out, _, err := runCLI("inspect", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 crashed session journal(s) read in memory", "crashed metrics: 3 rows",
		"vllm-0 metrics: 30 rows", "rows       63"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	for _, f := range foreign {
		if !strings.Contains(out, "foreign    "+f+" (not llmrec's") {
			t.Errorf("inspect does not list %s:\n%s", f, out)
		}
	}
	if body, _, err := runCLI("export", dir, "--target", "crashed", "--seq", "2"); err != nil || body != "up 1\n" {
		t.Errorf("export from the crashed journal: %q %v", body, err)
	}
	if !maps.Equal(before, files(t, dir)) {
		t.Error("reading changed the folder")
	}
}

// repair seals the crashed journal into a segment and leaves the foreign
// files byte for byte; a second repair finds nothing to do.
func TestRepair(t *testing.T) {
	dir, journal, foreign := crashedFolder(t)
	before := files(t, dir)
	out, _, err := runCLI("repair", dir)
	if err != nil {
		t.Fatal(err)
	}
	seg := strings.TrimSuffix(journal, ".journal") + ".parquet"
	if !strings.Contains(out, "repaired   "+journal+": 3 rows into "+seg) || !strings.Contains(out, "foreign    data.parquet") {
		t.Errorf("repair said:\n%s", out)
	}
	after := files(t, dir)
	if _, ok := after[journal]; ok {
		t.Error("the journal is still there")
	}
	if _, ok := after[seg]; !ok {
		t.Error("no segment sealed")
	}
	for _, f := range foreign {
		if after[f] != before[f] {
			t.Errorf("foreign %s changed", f)
		}
	}
	if out, _, err := runCLI("repair", dir); err != nil || !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair: %v\n%s", err, out)
	}
	if rep, _, err := runCLI("inspect", dir); err != nil || !strings.Contains(rep, "rows       63") || strings.Contains(rep, "crashed session") {
		t.Errorf("inspect after repair: %v\n%s", err, rep)
	}
}

// A segment no reader can read is named by repair, which exits 1, never
// "nothing to repair" (it said that of a segment every command refused).
func TestRepairNamesDamagedSegment(t *testing.T) {
	dir, _, _ := crashedFolder(t)
	if _, _, err := runCLI("repair", dir); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	slices.Sort(segs)
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(segs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI("repair", dir)
	if err == nil || !strings.Contains(out, "damaged    segment "+segs[0]) || strings.Contains(out, "nothing to repair") {
		t.Errorf("repair of a damaged segment: %v\n%s", err, out)
	}
}

func TestRepairUsage(t *testing.T) {
	help, _, err := runCLI("repair", "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(help, "Examples:") || !strings.Contains(help, "Usage: llmrec repair") {
		t.Errorf("repair -h: %v\n%s", err, help)
	}
	if _, _, err := runCLI("repair"); !errors.Is(err, errUsage) {
		t.Errorf("repair without a folder: %v", err)
	}
	if _, _, err := runCLI("repair", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no recording here") {
		t.Errorf("repair of an empty folder: %v", err)
	}
}
