package main

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The findings recording the project ships.
const findingsRun = "../../captures/findings/run"

// analyze prints the run's story: the ceiling above the numbers, the
// incidents, how each span settled, the caps; --spans and --cap set the
// counterfactual spans and the caps.
func TestAnalyzeFindings(t *testing.T) {
	out, _, err := runCLI("analyze", findingsRun, "--quiet", "--cap", "decode=5000", "--spans", "2s,5s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"host_stall   every target", "gap          llamacpp-0", "restart      llamacpp-0",
		"label_join   vllm-0", "1 s window (published): settled by poll 2 on 10 of 10 judged edges", "2 s window:", "5 s window:",
		"above the 5000 cap: 0 published, 1 naive", "seams", "drift of vllm-0"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// The sweep's knee quotes the ceiling too; the target's section has its own.
	numbers := strings.Index(out, "target vllm-0")
	ceiling := strings.Index(out[max(numbers, 0):], "ceiling: capacity queueing first") + max(numbers, 0)
	if numbers < 0 || ceiling < numbers || ceiling > strings.Index(out[numbers:], "decode_tokens_per_second")+numbers {
		t.Errorf("the ceiling is not printed above vllm-0's numbers:\n%s", out)
	}

	js := filepath.Join(t.TempDir(), "new", "a.json") // its folder is made
	if _, _, err := runCLI("analyze", findingsRun, "--quiet", "--json", js, "--spans", "none"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spans     []float64         `json:"spans"`
		Incidents []json.RawMessage `json:"incidents"`
		Edges     []json.RawMessage `json:"edges"`
		Settle    []json.RawMessage `json:"settle"`
		Fleet     struct {
			Polls []json.RawMessage `json:"polls"`
		} `json:"fleet"`
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Spans == nil || len(doc.Spans) != 0 || len(doc.Incidents) != 4 || len(doc.Edges) != 10 || len(doc.Settle) != 1 ||
		len(doc.Fleet.Polls) == 0 {
		t.Errorf("json: spans %v, %d incidents, %d edges, %d settle, %d fleet polls", doc.Spans, len(doc.Incidents),
			len(doc.Edges), len(doc.Settle), len(doc.Fleet.Polls))
	}
}

// The config file sets the spans and the caps; flags win over its spans
// and add to its caps; mistakes name the file and line.
func TestAnalyzeConfigSpansCaps(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "a.toml")
	os.WriteFile(cfg, []byte("span = \"10s\"\nspans = [\"3s\"]\n[caps]\ndecode = 5000.0\n\"llamacpp.decode\" = 300.0\n"), 0o644)
	js := filepath.Join(dir, "a.json")
	if _, _, err := runCLI("analyze", findingsRun, "--quiet", "--config", cfg, "--json", js, "--cap", "prompt=9e6"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spans []float64 `json:"spans"`
		Caps  []struct {
			Engine, Cell string
			Max          float64
		} `json:"caps"`
		Rollups []struct {
			Target, Cell string
			Cap          *float64
			AboveCap     int `json:"above_cap"`
		} `json:"rollups"`
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Spans, []float64{3}) || len(doc.Caps) != 3 || doc.Caps[1].Engine != "llamacpp" {
		t.Errorf("spans %v caps %+v", doc.Spans, doc.Caps)
	}
	for _, r := range doc.Rollups {
		if r.Target == "llamacpp-0" && r.Cell == "decode_tokens_per_second" && (r.Cap == nil || *r.Cap != 300) {
			t.Errorf("llamacpp-0 decode cap %v, want its engine's 300", r.Cap)
		}
	}

	for text, want := range map[string]string{
		"spans = [\"-1s\"]\n":                "a.toml:1: spans: -1s is not a positive duration",
		"[caps]\nkv = 3.0\n":                 "a.toml:2: cap kv: \"kv\" is not a rate cell",
		"[caps]\n\"nope.decode\" = 3.0\n":    "a.toml:2: cap nope.decode: \"nope\" is not an engine id",
		"spans = [\"2s\"]\nspanz = \"1s\"\n": "a.toml:2: unknown key \"spanz\"",
	} {
		os.WriteFile(cfg, []byte(text), 0o644)
		_, _, err := runCLI("analyze", findingsRun, "--quiet", "--config", cfg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	if _, err := loadGates(filepath.Join(dir, "missing.toml")); err == nil {
		t.Error("a missing config read")
	}
}

func TestAnalyzeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", findingsRun, "--spans", "2s,x"}, `--spans: "x" is not a positive duration`},
		{[]string{"analyze", findingsRun, "--spans", "0s"}, `--spans: "0s" is not a positive duration`},
		{[]string{"analyze", findingsRun, "--cap", "decode"}, "--cap: cap \"decode\": want [ENGINE.]CELL=MAX"},
		{[]string{"analyze", findingsRun, "--cap", "decode=0"}, "the maximum must be a positive number"},
		{[]string{"analyze"}, "want at least one run folder"},
	} {
		_, _, err := runCLI(c.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	help, _, err := runCLI("analyze", "-h")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, want := range []string{"Usage: llmrec analyze", "--spans D,D", "--cap [ENGINE.]CELL=MAX", "incidents", "host_stall",
		"settle poll", "spans = [\"2s\", \"10s\"]", "\"llamacpp.decode\" = 300.0", "Examples:"} {
		if !strings.Contains(help, want) {
			t.Errorf("analyze -h lacks %q", want)
		}
	}
}
