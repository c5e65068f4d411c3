// Command llmrec records the Prometheus /metrics of LLM inference engines
// during a benchmark run and turns them into evidence a reviewer can trust.
//
//	llmrec demo     record simulated engines for ~30 s: the built-in default
//	llmrec record   scrape engines on a fixed cadence into Parquet
//	llmrec inspect  summarise a recording: segments, counts, errors
//	llmrec export   print one captured body byte-exact
//	llmrec repair   seal a crashed recording's journals (only record and repair write captures)
//	llmrec mark     mark the start or end of a named phase while recording
//	llmrec analyze  replay captures through the engine readers and the gated estimator
//	llmrec render   one offline HTML report and a Markdown summary (of one run: into its folder)
//	llmrec diff     compare a candidate's runs with a baseline's: better, worse or ~, and how sure
//	llmrec sim      serve simulated engines on loopback
//	llmrec load     send streaming requests at fixed concurrency and record the client's side
//	llmrec top      watch a recording while it records: states, rates, incidents as analyze finds them
//	llmrec import   read what a Prometheus-compatible store already scraped into a recording
//
// Run "llmrec COMMAND -h" for each command's flags and examples.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/llmrec/llmrec/internal/suggest"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

type command struct {
	run     func(ctx context.Context, stdout, stderr io.Writer, args []string) error
	summary string
}

func commands() map[string]command {
	return map[string]command{
		"demo":    {demoRun, "record simulated engines on loopback for ~30 s (the built-in default)"},
		"record":  {recordRun, "scrape engines' /metrics on a fixed cadence into Parquet"},
		"render":  {renderRun, "write one offline HTML report and a Markdown summary of a recording"},
		"inspect": {inspectRun, "summarise a recording: segments, time range, counts, errors"},
		"analyze": {analyzeRun, "replay recordings offline into cells with provenance (rates, ratios, latencies)"},
		"diff":    {diffRun, "compare a candidate's runs with a baseline's: better, worse or ~ per phase and quantity"},
		"mark":    {markRun, "mark the start or end of a named phase of a run being recorded"},
		"export":  {exportRun, "print one captured body byte-exact (a test fixture), or every sample as OpenMetrics for promtool"},
		"repair":  {repairRun, "seal a crashed recording's journals into segments (reads never change a folder)"},
		"sim": {func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			return simRun(stdout, stderr, args)
		}, "serve simulated vLLM and llama.cpp engines on loopback"},
		"top":     {topRun, "watch a recording while it records (or replay a finished one): states, rates, incidents"},
		"version": {versionRun, "print llmrec's version"},
		"load":    {loadRun, "send streaming completions at fixed concurrency levels; write the client's records (AIPerf, JSONL)"},
		"import":  {importRun, "read what a Prometheus-compatible store already scraped into a recording (samples, no bodies)"},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: llmrec COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Run \"%s COMMAND -h\" (or \"%[1]s help COMMAND\") for a command's flags and examples.\n", self)
}

// errUsage marks errors that are the caller's words, answered with exit 2.
var errUsage = errors.New("usage")

func run(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	// No command is a usage error: the usage goes where errors go.
	if len(args) == 0 {
		usage(stderr)
		return errUsage
	}
	// "help CMD" is "CMD -h"; help asked for goes to stdout.
	if args[0] == "help" && len(args) > 1 {
		args = []string{args[1], "-h"}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := commands()[args[0]]
	if !ok {
		return fmt.Errorf("%w: unknown command %q%s; see %s -h", errUsage, args[0], commandHint(args[0]), self)
	}
	if err := c.run(ctx, stdout, stderr, args[1:]); err != nil {
		return redactedError{err}
	}
	return nil
}

// commandHint names the command closest to a mistyped one, as
// " (did you mean record?)"; "" when none is close.
func commandHint(name string) string {
	var names []string
	for n := range commands() {
		names = append(names, n)
	}
	if best := suggest.Closest(name, names); best != "" {
		return " (did you mean " + best + "?)"
	}
	return ""
}

// redactedError is an error as it may be printed: URLs and user
// information in its text redacted (a config error may quote a URL with
// its token); errors.Is and As still see the original.
type redactedError struct{ err error }

func (e redactedError) Error() string { return redact.Text(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

func main() {
	capture.Version = buildVersion(debug.ReadBuildInfo())
	self = selfName(os.Args[0])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	code := exitCode(err)
	switch {
	case code == 2:
		if msg := strings.TrimPrefix(err.Error(), errUsage.Error()); msg != "" {
			fmt.Fprintln(os.Stderr, "llmrec:"+strings.TrimPrefix(msg, ":"))
		}
	case code != 0:
		fmt.Fprintln(os.Stderr, "llmrec:", err)
	}
	if code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit status of a command's error: 0 done (or -h), 2 the
// command line was wrong, 1 anything else.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	return 1
}

func versionRun(_ context.Context, stdout, _ io.Writer, _ []string) error {
	_, err := fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
	return err
}

// buildVersion is the version written into manifests, segments, analyses
// and reports: the one the build set with -ldflags, else the module's, else
// "dev" with the VCS revision ("dev+835e0490f0cb", "+dirty" for a tree with
// changes) when the build stamped one.
func buildVersion(bi *debug.BuildInfo, ok bool) string {
	v := capture.Version
	if v != "dev" || !ok {
		return v
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return v
	}
	return fmt.Sprintf("dev+%.12s%s", rev, dirty)
}

// versionLine says which llmrec this is: the version the build set (or
// the module's), and the VCS revision and time Go stamped into the binary
// ("+dirty" for a tree with changes). `go run` and `go test` builds carry
// no revision: the line says so rather than guess.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	v := capture.Version
	if !ok {
		return "llmrec " + v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", with uncommitted changes"
			}
		}
	}
	if rev == "" {
		return fmt.Sprintf("llmrec %s (no VCS revision in this build; %s)", v, bi.GoVersion)
	}
	return fmt.Sprintf("llmrec %s (revision %.12s of %s%s; %s)", v, rev, at, modified, bi.GoVersion)
}

// newFlags returns a flag set that prints its help (usage text and flags)
// to stdout, for -h only (a mistake is one line on stderr, see
// parseFlags), and returns errors instead of exiting.
func newFlags(name, usageText string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprint(stdout, usageText)
		fmt.Fprintln(stdout, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and wraps a bad flag as a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The help is printed for -h only: a mistake gets one line (the flag
	// package prints the error, the whole help, and the caller the error
	// again).
	help, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		help()
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v%s; see %s %s -h", errUsage, fs.Name(), err, flagHint(fs, err), self, fs.Name())
	}
	return nil
}

// flagHint names the defined flag closest to an undefined one, as
// " (did you mean --out?)"; "" when none is close.
func flagHint(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		// A one-letter alias (-o) is no suggestion for a word.
		if len(f.Name) > 1 || len(name) == 1 {
			names = append(names, f.Name)
		}
	})
	if best := suggest.Closest(name, names); best != "" {
		return " (did you mean --" + best + "?)"
	}
	return ""
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
