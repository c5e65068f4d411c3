package main

import (
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

// diffRuns records n repeats of one vLLM engine under steady load, its
// decode speed scaled by decode, into folders under dir, and returns them.
func diffRuns(t *testing.T, dir string, n int, decode float64) []string {
	t.Helper()
	sc := &sim.Scenario{Name: "diff", Start: sim.DefaultStart, Duration: 30 * time.Second, Engines: []sim.EngineSpec{{
		Name: "e", Format: sim.FormatVLLM, Speed: sim.Speed{Decode: decode},
		Phases: []sim.Phase{{At: 0, Idle: true, KVUsage: -1},
			{At: 3 * time.Second, DecodeTPS: 1500, PromptTPS: 4000, Running: 12, OutputLen: 200, KVUsage: -1}},
	}}}
	var out []string
	for k := range n {
		d := filepath.Join(dir, fmt.Sprintf("run%d", k))
		if _, err := record.WriteGenerated(d, sc, sim.GenerateOptions{Interval: time.Second, Seed: int64(k + 1), Info: true}, time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// The exit status of llmrec diff: 0 compared, 1 when a --fail-on verdict
// is worse, 2 for a wrong command line (one line, with a suggestion).
func TestDiffExitCodes(t *testing.T) {
	base := diffRuns(t, filepath.Join(t.TempDir(), "base"), 4, 1)
	slow := diffRuns(t, filepath.Join(t.TempDir(), "slow"), 4, 0.9)
	args := func(extra ...string) []string {
		a := append([]string{"diff", "--quiet"}, base...)
		a = append(a, "--")
		return append(append(a, slow...), extra...)
	}
	out, _, err := runCLI(args()...)
	if exitCode(err) != 0 {
		t.Fatalf("no --fail-on: %v", err)
	}
	if !strings.Contains(out, "decode tokens/s") || !strings.Contains(out, " worse\n") {
		t.Errorf("table:\n%s", out)
	}
	_, _, err = runCLI(args("--fail-on", "worse")...)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "decode tokens/s on e: worse") {
		t.Errorf("--fail-on worse: exit %d, %v", exitCode(err), err)
	}
	_, _, err = runCLI(args("--fail-on", "decode,ttft_p99")...)
	if exitCode(err) != 1 {
		t.Errorf("--fail-on decode: exit %d, %v", exitCode(err), err)
	}
	// Prompt tokens/s did not change: a gate on it passes.
	if _, _, err = runCLI(args("--fail-on", "prompt")...); exitCode(err) != 0 {
		t.Errorf("--fail-on prompt: exit %d, %v", exitCode(err), err)
	}
	// A threshold wider than the change: no worse row, the gate passes.
	if _, _, err = runCLI(args("--fail-on", "worse", "--threshold", "20%")...); exitCode(err) != 0 {
		t.Errorf("--threshold 20%%: exit %d, %v", exitCode(err), err)
	}
	// The same from a config file; a flag given wins over it.
	cfg := filepath.Join(t.TempDir(), "diff.toml")
	os.WriteFile(cfg, []byte("threshold = \"20%\"\nfail_on = [\"worse\"]\n[thresholds]\ndecode = \"20%\"\n"), 0o644)
	if _, _, err = runCLI(args("--config", cfg)...); exitCode(err) != 0 {
		t.Errorf("--config: exit %d, %v", exitCode(err), err)
	}
	if _, _, err = runCLI(args("--config", cfg, "--threshold", "decode=5%")...); exitCode(err) != 1 {
		t.Errorf("--config and --threshold decode=5%%: exit %d, %v", exitCode(err), err)
	}
	// JSON and Markdown to files, the page too.
	dir := t.TempDir()
	if _, _, err = runCLI(args("--json", filepath.Join(dir, "d.json"), "--md", filepath.Join(dir, "d.md"), "-o", filepath.Join(dir, "d.html"))...); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"d.json", "d.md", "d.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}

	usage := []struct {
		args []string
		want string
	}{
		{[]string{"diff", base[0], slow[0]}, `want BASE... -- CAND...`},
		{[]string{"diff", "--", slow[0]}, "no baseline run folder"},
		{[]string{"diff", base[0], "--"}, "no candidate run folder"},
		{[]string{"diff", base[0], "--", slow[0], "--match", "model"}, "--match \"model\": want name or engine"},
		{[]string{"diff", base[0], "--", slow[0], "--threshold", "ttft_p98=10%"}, "(did you mean ttft_p99?)"},
		{[]string{"diff", base[0], "--", slow[0], "--threshold", "five"}, "is not a percentage"},
		{[]string{"diff", base[0], "--", slow[0], "--fail-on", "wrose"}, "(did you mean worse?)"},
		{[]string{"diff", base[0], "--", slow[0], "--treshold", "5%"}, "(did you mean --threshold?)"},
		{[]string{"diff", "--quiet", base[0], "--", slow[0], "--phase", "steady 9"}, "no aligned phase of that name"},
	}
	for _, c := range usage {
		_, stderr, err := runCLI(c.args...)
		if exitCode(err) != 2 || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("llmrec %q: exit %d, %v; want 2 with %q", c.args, exitCode(err), err, c.want)
		}
		if strings.Contains(stderr, "Flags:") {
			t.Errorf("llmrec %q printed the help", c.args)
		}
	}
}

// demo --diff replaces its own earlier folder (two recordings, the page
// and the summary) and refuses one holding anything else.
func TestDiffDemoFolder(t *testing.T) {
	dir := t.TempDir()
	diffRunsInto(t, filepath.Join(dir, "baseline"))
	os.WriteFile(filepath.Join(dir, "diff.md"), []byte("x"), 0o644)
	var stderr strings.Builder
	if err := freshDiffDemo(dir, &stderr); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 || !strings.Contains(stderr.String(), "replaced the earlier diff demo") {
		t.Errorf("left %v; said %q", entries, stderr.String())
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if err := freshDiffDemo(dir, &stderr); exitCode(err) != 2 || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a foreign file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("the foreign file is gone: %v", err)
	}
}

func diffRunsInto(t *testing.T, dir string) {
	t.Helper()
	sc := &sim.Scenario{Name: "d", Start: sim.DefaultStart, Duration: 5 * time.Second, Engines: []sim.EngineSpec{{Name: "e", Format: sim.FormatVLLM}}}
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second}, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
}

// Client records on each side: the side is in the flag's name; a bare
// --client is refused, as is a count of lists that does not match the
// folders; a bad line is the reader's error naming the file and line;
// read, the client's rows are in the table, labelled as the client's.
func TestDiffClientFlags(t *testing.T) {
	dir := t.TempDir()
	base := diffRuns(t, filepath.Join(dir, "base"), 1, 1)
	cand := diffRuns(t, filepath.Join(dir, "cand"), 1, 1)
	t0 := float64(sim.DefaultStart.UnixNano())/1e9 + 3
	write := func(name string, ttft float64) string {
		var b strings.Builder
		for i := range 200 {
			s := t0 + 1 + float64(i)*0.12
			fmt.Fprintf(&b, `{"start":%.3f,"end":%.3f,"ttft_s":%.4f,"input_tokens":300,"output_tokens":200,"phase":"profiling"}`+"\n",
				s, s+1.5+float64(i%7)*0.01, ttft+float64(i%11)*0.003)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bf, cf := write("base.jsonl", 0.2), write("cand.jsonl", 0.4)
	args := func(extra ...string) []string {
		a := append([]string{"diff", "--quiet"}, base...)
		return append(append(append(a, "--"), cand...), extra...)
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--client", bf}, "--client names no side"},
		{[]string{"--client-anchor-cand", "1=1700000000"}, "--client-anchor-cand needs --client-cand FILE"},
		{[]string{"--client-tz", "UTC"}, "--client-tz needs --client-base or --client-cand"},
	} {
		_, _, err := runCLI(args(c.extra...)...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: exit %d, %v", c.extra, exitCode(err), err)
		}
	}
	two := diffRuns(t, filepath.Join(dir, "two"), 2, 1)
	a := append(append([]string{"diff", "--quiet"}, two...), "--")
	_, _, err := runCLI(append(append(a, cand...), "--client-base", bf)...)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "one --client-base per folder") {
		t.Errorf("2 folders, 1 list: exit %d, %v", exitCode(err), err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"start":1786678148.5,"end":1786678149.5,"ttft_s":0.1}`+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(args("--client-cand", bad)...); exitCode(err) != 1 || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("bad line: exit %d, %v", exitCode(err), err)
	}
	out, _, err := runCLI(args("--client-base", bf, "--client-cand", cf)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "the client's latency and error rows: each request") || !strings.Contains(out, "profiling · client") || !strings.Contains(out, "client TTFT p50") || !strings.Contains(out, " worse\n") {
		t.Errorf("table:\n%s", out)
	}
	hout, herr, _ := runCLI("diff", "--help")
	if help := hout + herr; !strings.Contains(help, "--client-base") || !strings.Contains(help, "client_ttft_p99") {
		t.Errorf("diff --help:\n%s", help)
	}
}
