package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/render"
)

const renderUsage = `Usage: llmrec render RUN... [-o report.html] [--md summary.md] [analysis flags]

Reads the captures of one or more run folders, analyses them (as "llmrec
analyze" does) and writes one self-contained HTML report that works offline
and makes no request to any other host: a run header, a verdict strip above
the numbers, per target its throughput with refused windows shaded (never
interpolated over), requests, KV usage with its severity bands, latency
percentiles, cache and speculative ratios, and an appendix with each
target's series catalog. Every number shows its provenance on hover.

--md also writes a GitHub-flavoured Markdown summary (at most 60,000
characters) to attach to a pull request. Of one run folder without -o, the
report is RUN/report.html and the summary RUN/summary.md, beside the
captures (which are never changed); of several, -o is required.

The analysis flags (--span, --min-window, --spans, --cap, --config,
--phases, --client, --client-tz, --client-anchor) are those of "llmrec
analyze"; see "llmrec analyze -h". With --client FILE the report has a
Client section: the client's figures beside the fleet's per client phase,
the requests' latency by start (errors marked), the client's throughput
beside the fleet's decode, and TTFT client vs server.

Examples:
  llmrec render runs/bench1
  llmrec render runs/bench1 -o report.html --md summary.md
  llmrec render runs/bench1 -o report.html --span 2s --cap decode=5000
  llmrec render runs/bench1 -o report.html --client profile_export.jsonl
`

func renderRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("render", renderUsage, stdout)
	out := fs.String("out", "", "HTML report to write (default: RUN/report.html, and --md RUN/summary.md, of one run folder)")
	fs.StringVar(out, "o", "", "short for --out")
	md := fs.String("md", "", "Markdown summary to write")
	build := analysisFlags(fs, stderr)
	if err := parseFlags(fs, interleave(args, map[string]bool{"quiet": true})); err != nil {
		return err
	}
	// Of one run folder, the report and the summary go beside its captures.
	switch {
	case *out != "" || fs.NArg() == 0:
	case fs.NArg() > 1:
		return fmt.Errorf("%w: render: -o report.html is required with %d run folders (one folder's report defaults to RUN/report.html)", errUsage, fs.NArg())
	default:
		*out = filepath.Join(fs.Arg(0), capture.ReportFile)
		if *md == "" {
			*md = filepath.Join(fs.Arg(0), capture.SummaryFile)
		}
	}
	opts, err := build("render", fs.Args())
	if err != nil {
		return err
	}
	defer boundHeap()()
	in, err := analyzeForReport(opts)
	if err != nil {
		return err
	}
	res := in.Result
	if err := writeReport(in, *out, *md); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s", *out)
	if *md != "" {
		fmt.Fprintf(stdout, " and %s", *md)
	}
	fmt.Fprintln(stdout)
	if len(res.Problems) > 0 {
		return fmt.Errorf("%d file(s) could not be read (listed in the report); the rest was analysed", len(res.Problems))
	}
	return nil
}

// analyzeForReport analyses for a report, which keeps what it draws of
// each poll as the analysis replays it: holding every poll's cells of a
// long run takes gigabytes.
func analyzeForReport(opts analyze.Options) (render.Input, error) {
	polls := render.NewPolls()
	opts.Polls = polls.Add
	res, err := analyze.Analyze(opts)
	return render.Input{Result: res, Polls: polls}, err
}

// writeReport lays out an analysis and writes the HTML page and, when md is
// not empty, the Markdown summary; each through a temporary file, so a
// failure leaves no half-written report.
func writeReport(in render.Input, htmlPath, md string) error {
	rep, err := render.FromAnalysis(in)
	if err != nil {
		return err
	}
	if err := writeFile(htmlPath, func(w io.Writer) error { return render.HTML(w, rep) }); err != nil {
		return err
	}
	if md == "" {
		return nil
	}
	return writeFile(md, func(w io.Writer) error { return render.Markdown(w, rep) })
}

// writeFile writes path whole or not at all: under a temporary name in its
// folder (made when missing), renamed once written. Errors name path and
// its folder, never the temporary name.
func writeFile(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("write %s: cannot create a file in %s: %w", path, dir, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriter(tmp)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
