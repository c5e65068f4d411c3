package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

func runCLI(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), &out, &errb, args)
	return out.String(), errb.String(), err
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"record"}, "--out DIR is required"},
		{[]string{"record", "--out", "x", "--target", "vllm"}, "want NAME=URL"},
		{[]string{"record", "--out", "x", "extra"}, `unexpected argument "extra"`},
		{[]string{"record", "--out", "x", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"record", "--out", "x", "--target", "a=ftp://h/m"}, "is not an http(s) URL"},
		{[]string{"inspect"}, "want exactly one run folder"},
		{[]string{"export", "d"}, "--target and --seq are required"},
		{[]string{"demo", "x"}, `unexpected argument "x"`},
		// Not positive: refused with the reason, never read as a default
		// (--duration -3s recorded until interrupted, --interval 0s was 2 s).
		{[]string{"record", "--out", "x", "--target", "a=http://127.0.0.1:9/m", "--duration", "-3s"}, "--duration -3s: want a positive duration"},
		{[]string{"record", "--out", "x", "--target", "a=http://127.0.0.1:9/m", "--interval", "0s"}, "--interval 0s: want a positive duration"},
		{[]string{"record", "--out", "x", "--target", "a=http://127.0.0.1:9/m", "--timeout", "-1ms"}, "--timeout -1ms: want a positive duration"},
		// A mistyped flag: one line, the closest flag, where help is.
		{[]string{"record", "--otu", "x"}, "flag provided but not defined: -otu (did you mean --out?); see llmrec record -h"},
		{[]string{"render", "--md-x", "y"}, "(did you mean --md?)"},
		{[]string{"sim", "--scenari", "f"}, "(did you mean --scenario?)"},
		{[]string{"sim", "x"}, `unexpected argument "x"`},
		{[]string{"sim", "--duration", "-1s"}, "--duration -1s: want a positive duration"},
		{[]string{"sim", "--speed", "20"}, "go with --replay DIR"},
		{[]string{"sim", "--replay", "x", "--speed", "0"}, "--speed 0: want a positive factor"},
		{[]string{"sim", "--replay", "x", "--scenario", "s.toml"}, "it takes no --scenario"},
		{[]string{"load", "--url", "http://127.0.0.1:9", "--duration", "1s"}, "--out FILE is required"},
		{[]string{"load", "--url", "http://127.0.0.1:9", "-o", "x"}, "--duration D (e.g. 60s) or --stages N:D,... is required"},
		{[]string{"load", "--url", "http://10.0.0.1:9", "-o", "x", "--duration", "1s"}, "10.0.0.1 is not a loopback address (llmrec load drives engines on this machine unless --allow-remote)"},
		{[]string{"load", "--allow-remote", "--url", "ftp://gpu-node:9", "-o", "x", "--duration", "1s"}, "want http(s)://HOST:PORT"},
		{[]string{"load", "--url", "http://127.0.0.1:9", "-o", "x", "--stages", "4"}, "--stages: stage 1 \"4\": want CONCURRENCY:DURATION"},
		{[]string{"load", "--url", "http://127.0.0.1:9", "-o", "x", "--stages", "1:1s", "--duration", "1s"}, "exclude each other"},
		{[]string{"load", "--url", "http://127.0.0.1:9", "-o", "x", "--duration", "1s", "--format", "csv"}, `format: "csv" is not aiperf or jsonl`},
		{[]string{"load", "--concurency", "2"}, "(did you mean --concurrency?)"},
	}
	for _, c := range cases {
		stdout, stderr, err := runCLI(c.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("llmrec %v: error %v, want a usage error with %q", c.args, err, c.want)
		}
		// The help is for -h: a mistake prints no page of it.
		if len(c.args) > 0 && (strings.Contains(stderr, "Flags:") || strings.Contains(stdout, "Flags:")) {
			t.Errorf("llmrec %v printed the help:\n%s%s", c.args, stdout, stderr)
		}
	}
}

// Help asked for goes to stdout with exit 0 ("llmrec record -h | less"
// shows it); "help CMD" is "CMD -h"; no command at all is a usage error
// whose usage goes to stderr.
func TestHelpStdoutAndHelpCommand(t *testing.T) {
	for _, args := range [][]string{{"record", "-h"}, {"help", "record"}, {"record", "--help"}, {"help", "import"}, {"import", "-h"}} {
		out, errOut, err := runCLI(args...)
		cmd := args[0]
		if cmd == "help" {
			cmd = args[1]
		}
		if exitCode(err) != 0 || !strings.Contains(out, "Usage: llmrec "+cmd) || errOut != "" {
			t.Errorf("llmrec %v: exit %d (%v); stdout %d bytes, stderr %q; want the %s help on stdout only", args, exitCode(err), err, len(out), errOut, cmd)
		}
	}
	h1, _, _ := runCLI("help", "diff")
	h2, _, _ := runCLI("diff", "-h")
	if h1 != h2 || h1 == "" {
		t.Errorf("help diff and diff -h differ:\n%s\n---\n%s", h1, h2)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		out, errOut, err := runCLI(args...)
		if exitCode(err) != 0 || !strings.Contains(out, "Commands:") || errOut != "" {
			t.Errorf("llmrec %v: exit %d; want the usage on stdout", args, exitCode(err))
		}
	}
	out, errOut, err := runCLI()
	if exitCode(err) != 2 || out != "" || !strings.Contains(errOut, "Commands:") {
		t.Errorf("llmrec without a command: exit %d, stdout %q; want exit 2 and the usage on stderr", exitCode(err), out)
	}
}

// A mistyped command gets one line naming the nearest, and no usage page.
func TestUnknownCommandSuggests(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"recrod"}, `unknown command "recrod" (did you mean record?); see llmrec -h`},
		{[]string{"help", "rendr"}, `unknown command "rendr" (did you mean render?)`},
		{[]string{"imp"}, `(did you mean import?)`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"; see llmrec -h`},
	} {
		out, errOut, err := runCLI(c.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("llmrec %v: exit %d, %v; want 2 with %q", c.args, exitCode(err), err, c.want)
		}
		if out != "" || errOut != "" {
			t.Errorf("llmrec %v printed more than its one error line:\n%s%s", c.args, out, errOut)
		}
	}
}

func TestHelpTeaches(t *testing.T) {
	out, _, err := runCLI("--help")
	if err != nil || !strings.Contains(out, "record") || !strings.Contains(out, "demo") {
		t.Fatalf("help: %v\n%s", err, out)
	}
	for _, cmd := range []string{"record", "inspect", "export", "demo", "sim", "analyze", "render", "diff"} {
		help, _, err := runCLI(cmd, "-h")
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(help, "Examples:") || !strings.Contains(help, "Usage: llmrec "+cmd) {
			t.Errorf("%s -h: %v\n%s", cmd, err, help)
		}
	}
	if out, _, _ := runCLI("version"); !strings.HasPrefix(out, "llmrec ") {
		t.Errorf("version: %q", out)
	}
}

func TestConfigErrorNamesFileAndLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(p, []byte("interval = \"1s\"\n[[target]]\nname = \"a\"\nurll = \"http://x\"\n"), 0o644)
	_, _, err := runCLI("record", "--out", t.TempDir(), "--config", p)
	if err == nil || !strings.Contains(err.Error(), "bad.toml:4: unknown key \"target.urll\"") {
		t.Fatalf("%v", err)
	}
}

// inspect and export read a recording: counts per outcome, JSON, and a
// body byte-exact.
func TestInspectAndExport(t *testing.T) {
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI("inspect", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vllm-0 metrics: 30 rows", "llamacpp-0 metrics: 30 rows", "ok ", "http_error"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	js, _, err := runCLI("inspect", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep capture.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil || rep.Rows != 60 {
		t.Fatalf("inspect --json: %v rows %d", err, rep.Rows)
	}
	body, _, err := runCLI("export", dir, "--target", "vllm-0", "--seq", "7")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := capture.Open(dir)
	want, _ := capture.Find(r, "", "vllm-0", capture.EndpointMetrics, 7)
	if body != string(want.Body) {
		t.Error("export is not the stored body byte for byte")
	}
	if _, _, err := runCLI("export", dir, "--target", "nope", "--seq", "1"); err == nil || !strings.Contains(err.Error(), `no row for target "nope"`) {
		t.Errorf("export of a missing target: %v", err)
	}
}

// sim -generate writes a recording without waiting for the clock; off a
// terminal its progress is a line per tenth of the work.
func TestSimGenerate(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := runCLI("sim", "-generate", dir, "-engines", "1", "-duration", "10m")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, ": 300 scrapes of 1 engines") {
		t.Errorf("stdout %q", out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[9], "generated 300 of 300 scrapes (100%)") || strings.Contains(errOut, "\r") {
		t.Errorf("progress:\n%s", errOut)
	}
	if rep, _, err := runCLI("inspect", dir); err != nil || !strings.Contains(rep, "metrics: 300 rows") {
		t.Errorf("inspect: %v\n%s", err, rep)
	}
}

// version and --version say the version and, when the build stamped one,
// the VCS revision, its time and whether the tree had changes.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := runCLI(args...)
		if err != nil || !strings.HasPrefix(out, "llmrec ") {
			t.Errorf("llmrec %v: %q %v", args, out, err)
		}
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "835e0490f0cb8e291156379129680ff761d97680"},
		{Key: "vcs.time", Value: "2026-12-03T11:21:10Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(bi, true), "llmrec v1.2.3 (revision 835e0490f0cb of 2026-12-03T11:21:10Z, with uncommitted changes; go1.26.8)"; got != want {
		t.Errorf("versionLine %q, want %q", got, want)
	}
	if got := buildVersion(bi, true); got != "v1.2.3" {
		t.Errorf("buildVersion %q, want the module's v1.2.3", got)
	}
	bi.Main.Version = "(devel)"
	if got := buildVersion(bi, true); got != "dev+835e0490f0cb+dirty" {
		t.Errorf("buildVersion %q, want dev with the revision", got)
	}
	bi.Settings, bi.Main.Version = nil, "(devel)"
	if got := buildVersion(bi, true); got != "dev" {
		t.Errorf("buildVersion %q without a revision, want dev", got)
	}
	if got, want := versionLine(bi, true), "llmrec dev (no VCS revision in this build; go1.26.8)"; got != want {
		t.Errorf("versionLine %q, want %q", got, want)
	}
}

// A folder that holds a recording takes another session only with
// --append: two sessions of one folder are read as one run.
func TestRecordRefusesAUsedFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	url := answering(t)
	rec := func(extra ...string) error {
		_, _, err := runCLI(append([]string{"record", "-o", dir, "--duration", "300ms", "--quiet",
			"--target", "a=" + url}, extra...)...)
		return err
	}
	if err := rec(); err != nil {
		t.Fatal(err)
	}
	if err := rec(); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "already holds a recording (1 session(s)); give --append") {
		t.Fatalf("second session without --append: %v", err)
	}
	if err := rec("--append"); err != nil {
		t.Fatalf("with --append: %v", err)
	}
	if n := sessionsIn(dir); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	if _, _, err := runCLI("record", "--out", dir, "--append"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "no targets") {
		t.Errorf("no targets: %v", err)
	}
}

// The demo replaces an earlier demo's folder, saying so, and refuses a
// folder that holds anything else.
func TestDemoFolderIsFresh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var stderr bytes.Buffer
	if err := freshDemoFolder(dir, &stderr); err != nil || stderr.Len() != 0 {
		t.Fatalf("missing folder: %v %q", err, stderr.String())
	}
	if _, _, err := runCLI("record", "-o", dir, "--duration", "200ms", "--quiet", "--target", "a="+answering(t)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.html", "summary.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := freshDemoFolder(dir, &stderr); err != nil || !strings.Contains(stderr.String(), "replaced the earlier demo recording") {
		t.Fatalf("earlier demo: %v %q", err, stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the earlier demo is still there: %v", err)
	}
	if _, _, err := runCLI("record", "-o", dir, "--duration", "200ms", "--quiet", "--target", "a="+answering(t)); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := freshDemoFolder(dir, &stderr); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("a folder with other files: %v", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("the user's file: %v", err)
	}
}

// answering serves a one-line exposition page on loopback for the test.
func answering(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE up gauge\nup 1\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// A target that never answers is said on stderr at its first failed
// scrape, and record ends with exit 1 naming it; one that answers is not.
func TestRecordSaysATargetNeverAnswered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, stderr, err := runCLI("record", "-o", dir, "--duration", "500ms", "--interval", "100ms",
		"--target", "up="+answering(t), "--target", "wrong=http://127.0.0.1:9/metrics")
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "1 of 2 target(s) never answered: wrong (http://127.0.0.1:9/metrics") {
		t.Fatalf("error %v", err)
	}
	if n := strings.Count(stderr, "warning: wrong (http://127.0.0.1:9/metrics): first scrape failed: "); n != 1 || strings.Contains(stderr, "warning: up ") {
		t.Errorf("stderr says the first failure %d times:\n%s", n, stderr)
	}
}

// freeAddr is a loopback address nothing listens on: a port the system
// gave and that was closed again.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// sim --listen puts an engine at the address given and prints it; a list,
// a bare address for a many-engine scenario and a name twice are read or
// refused as the help says.
func TestSimListen(t *testing.T) {
	addr := freeAddr(t)
	out, _, err := runCLI("sim", "--listen", "vllm-0="+addr, "--duration", "200ms")
	if err != nil || !strings.Contains(out, "vllm-0 http://"+addr+"/metrics\n") {
		t.Errorf("sim --listen vllm-0=%s: %v, stdout %q", addr, err, out)
	}
	sc := sim.DefaultScenario()
	m, err := parseListen([]string{"vllm-0=127.0.0.1:8000,llamacpp-0=127.0.0.1:8080"}, sc)
	if err != nil || m["vllm-0"] != "127.0.0.1:8000" || m["llamacpp-0"] != "127.0.0.1:8080" {
		t.Errorf("a list: %v %v", m, err)
	}
	for _, bad := range [][]string{{"127.0.0.1:8000"}, {"vllm-0=127.0.0.1:1", "vllm-0=127.0.0.1:2"}} {
		if _, err := parseListen(bad, sc); !errors.Is(err, errUsage) {
			t.Errorf("--listen %v: %v, want a usage error", bad, err)
		}
	}
	if _, _, err := runCLI("sim", "--listen", "nope=127.0.0.1:0", "--duration", "200ms"); err == nil || !strings.Contains(err.Error(), `no engine "nope"`) {
		t.Errorf("an unknown engine: %v", err)
	}
}
