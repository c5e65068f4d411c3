package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
)

// demoDiffLength is how long each side of the diff demo is recorded.
const demoDiffLength = 32 * time.Second

// isSet says whether flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// diffScenario is the diff demo's configuration: a vLLM and a llama.cpp
// engine under steady load after 2 s idle; speed scales the vLLM engine.
func diffScenario(name string, speed sim.Speed) *sim.Scenario {
	return &sim.Scenario{Name: name, Duration: demoDiffLength, Engines: []sim.EngineSpec{
		{Name: "vllm-0", Format: sim.FormatVLLM, Speed: speed, Phases: []sim.Phase{
			{At: 0, Idle: true, KVUsage: -1},
			{At: 2 * time.Second, DecodeTPS: 1500, PromptTPS: 4000, CachedFraction: 0.3, Running: 12, OutputLen: 200, KVUsage: -1},
		}},
		{Name: "llama-0", Format: sim.FormatLlamaCpp, Phases: []sim.Phase{
			{At: 0, Idle: true, KVUsage: -1},
			{At: 2 * time.Second, DecodeTPS: 80, PromptTPS: 300, Running: 4, OutputLen: 200, KVUsage: -1},
		}},
	}}
}

// demoDiff records a baseline and a slower candidate side by side on
// loopback and writes their diff.
func demoDiff(ctx context.Context, stdout, stderr io.Writer, dir string, interval time.Duration) error {
	if err := freshDiffDemo(dir, stderr); err != nil {
		return err
	}
	sides := []struct {
		name string
		sc   *sim.Scenario
	}{
		{"baseline", diffScenario("baseline", sim.Speed{})},
		{"candidate", diffScenario("candidate: vllm-0 decodes 10 % slower, TTFT 30 % longer", sim.Speed{Decode: 0.9, TTFT: 1.3})},
	}
	fmt.Fprintf(stderr, "demo: recording a baseline and a candidate (its vllm-0 decodes 10 %% slower, its TTFT 30 %% longer) side by side for %s into %s\n", demoDiffLength, dir)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(sides))
	for i, s := range sides {
		srv, err := sim.Serve(ctx, s.sc, sim.Options{NoMemoryLog: true})
		if err != nil {
			return err
		}
		defer srv.Close()
		cfg := &record.Config{Interval: record.Duration(interval)}
		for _, t := range srv.Targets() {
			cfg.Targets = append(cfg.Targets, record.Target{Name: t.Name, URL: t.MetricsURL, Engine: string(t.Format)})
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		opt := record.Options{Dir: filepath.Join(dir, s.name), Duration: demoDiffLength}
		// One side's progress is enough to watch.
		if i == 0 {
			opt.Progress, opt.Live, opt.ProgressEvery = stderr, isTerminal(stderr), 5*time.Second
		}
		go func() {
			_, err := record.Run(ctx, cfg, opt)
			errs <- err
		}()
	}
	for range sides {
		if err := <-errs; err != nil {
			return err
		}
	}
	bs, _, err := analyzeSide("baseline", []string{filepath.Join(dir, "baseline")}, nil, nil, analyze.Options{}, true, true, io.Discard, stderr)
	if err != nil {
		return err
	}
	defer closeSide(bs)
	cs, _, err := analyzeSide("candidate", []string{filepath.Join(dir, "candidate")}, nil, nil, analyze.Options{}, true, true, io.Discard, stderr)
	if err != nil {
		return err
	}
	defer closeSide(cs)
	rep, err := diff.Compare(bs, cs, diff.Options{Generator: "llmrec " + capture.Version})
	if err != nil {
		return err
	}
	if err := render.DiffText(stdout, rep); err != nil {
		return err
	}
	page, err := render.DiffReport(rep)
	if err != nil {
		return err
	}
	html, md := filepath.Join(dir, "diff.html"), filepath.Join(dir, "diff.md")
	if err := writeFile(html, func(w io.Writer) error { return render.HTML(w, page) }); err != nil {
		return err
	}
	if err := writeFile(md, func(w io.Writer) error { return render.DiffMarkdown(w, rep) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nDiff page: %s (open it in a browser; it works offline)\nSummary for a pull request: %s\nNext: %s diff %s -- %s --fail-on worse\n",
		html, md, self, filepath.Join(dir, "baseline"), filepath.Join(dir, "candidate"))
	return nil
}

// freshDiffDemo makes dir ready for a new diff demo: an earlier one (its
// two recordings, page and summary) is replaced, saying so; a folder with
// anything else in it is refused.
func freshDiffDemo(dir string, stderr io.Writer) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // missing: made by the recorder
	}
	ours := []string{"baseline", "candidate", "diff.html", "diff.md"}
	for _, e := range entries {
		if !slices.Contains(ours, e.Name()) {
			return fmt.Errorf("%w: demo: %s holds %s, which is not the diff demo's; give another -o", errUsage, dir, e.Name())
		}
	}
	for _, side := range ours[:2] {
		if err := freshDemoFolder(filepath.Join(dir, side), io.Discard); err != nil {
			return err
		}
	}
	for _, f := range ours[2:] {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("demo: replace the earlier diff demo in %s: %w", dir, err)
		}
	}
	if len(entries) > 0 {
		fmt.Fprintf(stderr, "demo: replaced the earlier diff demo in %s\n", dir)
	}
	return nil
}
