package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

const demoUsage = `Usage: llmrec demo [-o DIR] [--interval D] [--diff]

Starts simulated engines on loopback (a vLLM-like and a llama.cpp-like
target, the built-in scenario of "llmrec sim": load starts and ends, a
stall, a restart, capacity queueing), records them for the scenario's
length (about 30 s) with "llmrec record", prints what was recorded, and
writes DIR/report.html (one offline page) and DIR/summary.md (for a pull
request) as "llmrec render" does. Nothing leaves this machine.

With --diff, two simulated configurations instead, recorded side by side
for 32 s every 500 ms (--interval changes it): a baseline, and a candidate whose vLLM engine decodes 10 % slower
with a 30 % longer time to first token (the scenario's speed knob). Then
"llmrec diff" of the two: the table on stdout, DIR/diff.html and
DIR/diff.md (default DIR llmrec-demo-diff, holding baseline/ and
candidate/).

Examples:
  llmrec demo
  llmrec demo -o /tmp/demo --interval 500ms
  llmrec demo --diff
`

func demoRun(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("demo", demoUsage, stdout)
	out := fs.String("out", "llmrec-demo", "folder to record into (replaced when it holds an earlier demo)")
	fs.StringVar(out, "o", "llmrec-demo", "short for --out")
	interval := fs.Duration("interval", time.Second, "scrape cadence")
	diffDemo := fs.Bool("diff", false, "record a baseline and a slower candidate side by side and compare them with llmrec diff")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: demo: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *diffDemo {
		dir := *out
		if !isSet(fs, "out") && !isSet(fs, "o") {
			dir = "llmrec-demo-diff"
		}
		// Blocks need 50 poll intervals of a phase: 30 s of load at 2
		// polls a second. Not faster: a cadence under the gates' floor
		// (0.5 s) has every per-poll window refused, and the page's
		// charts would be empty.
		every := 500 * time.Millisecond
		if isSet(fs, "interval") {
			every = *interval
		}
		return demoDiff(ctx, stdout, stderr, dir, every)
	}
	if err := freshDemoFolder(*out, stderr); err != nil {
		return err
	}
	sc := sim.DefaultScenario()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := sim.Serve(ctx, sc, sim.Options{NoMemoryLog: true})
	if err != nil {
		return err
	}
	defer srv.Close()
	cfg := &record.Config{Interval: record.Duration(*interval)}
	for _, t := range srv.Targets() {
		cfg.Targets = append(cfg.Targets, record.Target{Name: t.Name, URL: t.MetricsURL, Engine: string(t.Format)})
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "demo: %d simulated engines on loopback, scenario %q; recording %s into %s\n",
		len(cfg.Targets), sc.Name, sc.Duration, *out)
	opt := record.Options{Dir: *out, Duration: sc.Duration, Progress: stderr, Live: isTerminal(stderr), ProgressEvery: 5 * time.Second}
	if _, err := record.Run(ctx, cfg, opt); err != nil {
		return err
	}
	r, err := capture.Open(*out)
	if err != nil {
		return err
	}
	printReport(stdout, capture.Inspect(r))
	in, err := analyzeForReport(analyze.Options{Dirs: []string{*out}})
	if err != nil {
		return err
	}
	html, md := filepath.Join(*out, capture.ReportFile), filepath.Join(*out, capture.SummaryFile)
	if err := writeReport(in, html, md); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nReport: %s (open it in a browser; it works offline)\nSummary for a pull request: %s\n", html, md)
	fmt.Fprintf(stdout, "Next: %s analyze %s; %s export %s --target %s --seq 5; DuckDB: SELECT * FROM read_parquet('%s/*.parquet')\n",
		self, *out, self, *out, cfg.Targets[0].Name, *out)
	return nil
}

// freshDemoFolder makes dir ready for a new demo: a folder holding an
// earlier demo (llmrec's own files, its report and summary) is emptied,
// saying so, so that two demos are never read as one run; a folder with
// anything else in it is refused.
func freshDemoFolder(dir string, stderr io.Writer) error {
	r, err := capture.Open(dir)
	if err != nil {
		return nil // missing, or no recording: recorded into as it is
	}
	if len(r.Live) > 0 {
		return fmt.Errorf("%w: demo: %s is being recorded into now; give another -o", errUsage, dir)
	}
	if len(r.Foreign) > 0 {
		return fmt.Errorf("%w: demo: %s holds a recording and %s, which is not the demo's; give another -o", errUsage, dir, r.Foreign[0])
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("demo: replace the earlier demo in %s: %w", dir, err)
	}
	fmt.Fprintf(stderr, "demo: replaced the earlier demo recording in %s\n", dir)
	return nil
}
