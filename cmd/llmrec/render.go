package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render"
)

const renderUsage = `Usage: llmrec render RUN... -o report.html [--md summary.md] [--span D] [--config FILE]

Reads the captures of one or more run folders, analyses them (as "llmrec
analyze" does) and writes one self-contained HTML report that works offline
and makes no request to any other host: a run header, a verdict strip above
the numbers, per target its throughput with refused windows shaded (never
interpolated over), requests, KV usage with its severity bands, latency
percentiles, cache and speculative ratios, and an appendix with each
target's series catalog. Every number shows its provenance on hover.

--md also writes a GitHub-flavoured Markdown summary (at most 60,000
characters) to attach to a pull request.

Examples:
  llmrec render runs/bench1 -o report.html --md summary.md
  llmrec render runs/bench1 -o report.html --span 2s
`

func renderRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("render", renderUsage, stderr)
	out := fs.String("o", "", "HTML report to write (required)")
	md := fs.String("md", "", "Markdown summary to write")
	span := fs.Duration("span", 0, "how far back a window may reach (default 10s, or the config's)")
	configPath := fs.String("config", "", "TOML file with the gates (as for llmrec analyze)")
	quiet := fs.Bool("quiet", false, "no progress output")
	if err := parseFlags(fs, interleave(args, map[string]bool{"quiet": true})); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: render: want at least one run folder", errUsage)
	}
	if *out == "" {
		return fmt.Errorf("%w: render: -o report.html is required", errUsage)
	}
	var gates rate.Config
	if *configPath != "" {
		g, err := loadGates(*configPath)
		if err != nil {
			return err
		}
		gates = g
	}
	if *span != 0 {
		gates.Span = span.Seconds()
	}
	opts := analyze.Options{Dirs: fs.Args(), Gates: gates}
	if !*quiet {
		opts.Progress = progressPrinter(stderr)
	}
	res, err := analyze.Analyze(opts)
	if err != nil {
		return err
	}
	if err := writeReport(res, *out, *md); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s", *out)
	if *md != "" {
		fmt.Fprintf(stdout, " and %s", *md)
	}
	fmt.Fprintln(stdout)
	return nil
}

// writeReport lays out an analysis and writes the HTML page and, when md is
// not empty, the Markdown summary; each through a temporary file, so a
// failure leaves no half-written report.
func writeReport(res *analyze.Result, htmlPath, md string) error {
	rep, err := render.FromAnalysis(render.Input{Result: res})
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

func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
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
