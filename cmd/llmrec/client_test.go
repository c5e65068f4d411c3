package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
)

// clientRun records a simulated vLLM engine busy from 10 s to 70 s (10
// requests/s of 200 tokens) and writes a generic JSONL client file of the
// same load; bad, when set, replaces the file's second line.
func clientRun(t *testing.T, bad string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	sc := &sim.Scenario{Name: "client", Start: sim.DefaultStart, Duration: 80 * time.Second, Engines: []sim.EngineSpec{{
		Name: "v", Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, Idle: true},
			{At: 10 * time.Second, DecodeTPS: 2000, PromptTPS: 4000, Running: 16, OutputLen: 200, TTFT: 100 * time.Millisecond, KVUsage: -1},
			{At: 70 * time.Second, Idle: true},
		}}}}
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	t0 := float64(sim.DefaultStart.Unix()) + 10
	var b strings.Builder
	for i := range 580 {
		line := fmt.Sprintf(`{"start":%.3f,"end":%.3f,"ttft_ms":100,"input_tokens":400,"output_tokens":200,"phase":"profiling"}`,
			t0+float64(i)/10, t0+float64(i)/10+1.692)
		if i == 1 && bad != "" {
			line = bad
		}
		b.WriteString(line + "\n")
	}
	file = filepath.Join(t.TempDir(), "requests.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// --client sets the client's figures beside the fleet's in the analysis;
// a bad line is an error naming the file and line; --client-tz and
// --client-anchor are checked before anything is read.
func TestAnalyzeClient(t *testing.T) {
	dir, file := clientRun(t, "")
	js := filepath.Join(t.TempDir(), "a.json")
	if _, _, err := runCLI("analyze", dir, "--quiet", "--json", js, "--client", file); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Phases []struct{ Name, Source string }
		Client *struct {
			Files []struct {
				Sides []struct {
					Phase string
					Rows  []struct{ Quantity, Agreement string }
				}
			}
			Findings []struct{ Seam string }
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Phases) == 0 || doc.Phases[0].Name != "profiling" || doc.Phases[0].Source != "client" {
		t.Errorf("the client's phase is not the first named phase: %+v", doc.Phases)
	}
	if doc.Client == nil || len(doc.Client.Files) != 1 || len(doc.Client.Files[0].Sides) != 1 {
		t.Fatalf("client section: %s", data[:min(len(data), 300)])
	}
	agree := map[string]string{}
	for _, r := range doc.Client.Files[0].Sides[0].Rows {
		agree[r.Quantity] = r.Agreement
	}
	if agree["requests_per_s"] != "agree" || agree["output_tokens_per_s"] != "agree" || agree["ttft_p50_s"] != "agree" {
		t.Errorf("agreement on a matching client: %v", agree)
	}

	_, bad := clientRun(t, `{"start":"yesterday"}`)
	_, _, err = runCLI("analyze", dir, "--quiet", "--client", bad)
	if err == nil || !strings.Contains(err.Error(), bad+":2") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a bad line: %v, want one line naming %s:2", err, bad)
	}
	for _, args := range [][]string{
		{"--client-tz", "UTC"},
		{"--client", file, "--client-tz", "Nowhere/Else"},
		{"--client", file, "--client-anchor", "12.5"},
		{"--client", file, "--client-anchor", "12.5=12"},
	} {
		_, _, err := runCLI(append([]string{"analyze", dir, "--quiet"}, args...)...)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

func TestParseAnchor(t *testing.T) {
	a, err := parseAnchor("100.5=2026-01-01T00:00:00Z")
	if err != nil || a.Mono != 100.5 || a.Epoch != 1767225600 {
		t.Errorf("%+v, %v", a, err)
	}
	a, err = parseAnchor(" 7 = 1767225600.25 ")
	if err != nil || a.Mono != 7 || a.Epoch != 1767225600.25 {
		t.Errorf("%+v, %v", a, err)
	}
}
