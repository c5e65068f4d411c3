package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// llmrec mark appends a crash-safe mark to the run folder; marks (and a
// --phases file) become named phases that analyze measures on every target
// and the fleet, listed before the found ones; a bad phases file is an
// error that names its file and line.
func TestMarksAndPhasesFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(findingsRun)); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI("mark", dir, "probe", "--end")
	if err != nil || !strings.Contains(out, `end of "probe"`) {
		t.Fatalf("mark: %q, %v", out, err)
	}
	// The marks inside the recording: its first 60 s, then the rest.
	run, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := run.Manifests[0].StartNs
	for _, m := range []capture.Mark{{TNs: start + 5e9, Name: "first"}, {TNs: start + 65e9, Name: "second"}} {
		m.Source = "cli"
		if _, err := capture.AppendMark(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	marks, bad, err := capture.ReadMarks(dir)
	if err != nil || len(marks) != 3 || len(bad) != 0 {
		t.Fatalf("marks %v, bad %v, %v", marks, bad, err)
	}
	csv := filepath.Join(t.TempDir(), "phases.csv")
	os.WriteFile(csv, []byte("name,start,end\nfile-phase,"+unix(start+10e9)+","+unix(start+40e9)+"\n"), 0o644)
	js := filepath.Join(t.TempDir(), "a.json")
	if _, _, err := runCLI("analyze", dir, "--quiet", "--json", js, "--phases", csv); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Phases []struct {
			Name, Kind, Source, Target string
			Targets                    []struct {
				Target  string
				Figures []struct {
					Name  string
					Value *float64
				}
			}
			Fleet *struct{ Figures []struct{ Name string } }
		}
		PhaseProblems []string `json:"phase_problems"`
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range doc.Phases {
		if p.Source != "found" {
			names = append(names, p.Name+"/"+p.Source)
			if len(p.Targets) != 2 || p.Fleet == nil || p.Target != "" {
				t.Errorf("named phase %s: %d targets, fleet %v, target %q", p.Name, len(p.Targets), p.Fleet != nil, p.Target)
			}
			for _, tf := range p.Targets {
				if tf.Figures[0].Name != "decode_tokens_per_second" || tf.Figures[0].Value == nil {
					t.Errorf("phase %s on %s: decode %+v", p.Name, tf.Target, tf.Figures[0])
				}
			}
		}
	}
	if strings.Join(names, " ") != "first/mark file-phase/file second/mark" {
		t.Errorf("named phases %v, want first, file-phase, second in start order", names)
	}
	// The --end mark of a phase never started is a problem, not a phase.
	if len(doc.PhaseProblems) != 1 || !strings.Contains(doc.PhaseProblems[0], `"probe"`) {
		t.Errorf("phase problems %q", doc.PhaseProblems)
	}

	os.WriteFile(csv, []byte("name,start,end\nok,1,2\nbad,2026-13-01T00:00:00Z,3\n"), 0o644)
	_, _, err = runCLI("analyze", dir, "--quiet", "--phases", csv)
	if err == nil || !strings.Contains(err.Error(), csv+":3: start:") {
		t.Errorf("bad phases file: %v", err)
	}
}

func unix(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) }
