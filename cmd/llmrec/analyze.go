package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/analyze/sweep"
	"github.com/llmrec/llmrec/record"
)

const analyzeUsage = `Usage: llmrec analyze RUN... [--span D] [--min-window D] [--spans D,D...] [--cap [ENGINE.]CELL=MAX]...
                      [--phases FILE] [--client FILE]... [--client-tz ZONE] [--client-anchor MONO=EPOCH]
                      [--slo METRIC_pNN=D,...] [--gpus N] [--gpu-hour-usd X]
                      [--config FILE] [--json FILE]

Replays one or more run folders offline: every segment, per target in time
order (a crashed session's journal is recovered first, a live one read as it
stands), through the target's engine reader and the gated rate estimator.
Each poll becomes cells that carry their provenance: the value or null, the
series or formula it came from, the window it was measured over, and the
reason whenever it is null (floor, ceiling, reset, jump, stale, no_baseline,
absent, not_exported, ...). Absent is never 0.

The engine of each target is the one configured when recording (--target's
engine hint in the config), else detected from its series: vllm (V1),
vllm-v0, nim, llamacpp (and forks), sglang, tgi, trtllm, triton; anything
else gets a rate for every counter and a value for every gauge (generic).

Then the run's story (docs/analysis-format.md has every key):
  incidents  where the numbers could not be trusted and why: gap, host_stall
             (every target stalled at once: the recording host, not an
             engine), missed_tick, scrape_error, slow_scrape, refused,
             restart (a monotonic counter falling, two together for an
             unknown engine; a new process start, series or header; a
             "Loading model" answer), engine_stall (the progress counter
             frozen while requests run), target_down/target_up,
             label_join/label_leave; each
             with the cells affected, the gate that fired and what a naive
             delta over time would have printed instead
  edges      load starts and ends found on each decode counter (on the
             step counter of an engine that counts decode only when a
             request completes, as llama.cpp does); an edge
             whose new regime holds 5 polls is judged: its settle poll is
             the first whose published rate is within |ln| 0.1 of the new
             level (exactly 0 for an end). The same polls are replayed under
             each counterfactual span (--spans) to show what a shorter or
             longer window would have published
  rollups    per-minute max and mean of every rate; with --cap, the values
             above the cap, published (must be 0) and naive
  fleet      totals over the engines that answered each tick, and the seams
             where adding them up compares different things
  facts      what each engine said about itself: the queue's ceiling
             (capacity queueing), prefill speed per prefilling stream,
             prefix caching, the KV pool, FLOPs counters left at 0,
             speculative decoding acceptance, llama.cpp's hidden queue
             (every slot busy, nothing deferred)
  drift      what the engine's version should publish and did not, and
             series under renamed names
  energy     joules per generated token over the busy windows, when a DCGM
             (or Triton, nvidia_gpu_exporter) target was recorded too
  phases     idle, ramp and steady phases found at each target's load edges,
             and named phases (--phases FILE, and the marks of llmrec mark
             in the run folder), which come first and span every target;
             each measured from the engines' own counters: Δcounter/Δt
             between its first and last good polls (per process across a
             restart), request rate, running and waiting, KV, prefix hits,
             TTFT/TPOT/ITL/e2e/queue p50, p90 and p99 from the histograms'
             bucket deltas, beside the distribution of the values published
             per poll; a median more than 10 % off is a finding

On stdout: per target the engine, what it said about itself (the ceiling
first), the polls, its busy figures (its steady phases together, from its
own counters), then the whole recording's median of each headline cell
(idle included) with the window it was measured over, nulls by reason and
the series the engine's reader does not know; then the findings and the
phases. A file that cannot be read is reported by name and
the rest is analysed; the exit status is then 1. With --json FILE every
poll's cells go to FILE (schema: docs/analysis-format.md); while the run is
replayed they wait in a temporary folder beside FILE, removed afterwards.

The gates (see package analyze/rate):
  --span D         how far back a window may reach, for every counter.
                   Without it, spans are by counter kind: counters the
                   engine moves on every step (vLLM's token counters,
                   llama.cpp n_decode_total) span the target's interval,
                   so an idle engine reads 0 by the second poll; counters
                   that move once per request (llama.cpp's, SGLang's and
                   TGI's token counters) span the request duration measured
                   over the last minute (the e2e histogram's mean, or
                   Little's law from busy slots and completions), bounded by
                   [interval, 60s], 10s until measured; the rest span 10s
  --min-window D   the floor: a shorter window is a catch-up poll (default 500ms)
  ceiling, jump and stale fractions are set in the config file.
A negative value turns a gate off.
  --spans D,D      counterfactual spans replayed for the edges (default
                   2s,10s; a --span given is left out; "none": none)
  --phases FILE    named phases, CSV with the header name,start,end (times in
                   RFC 3339 or Unix seconds) or a JSON array of
                   {"name", "start", "end"}
  --client FILE    a load generator's own record of the run, repeatable:
                   AIPerf profile_export.jsonl, GuideLLM benchmarks.json/.yaml,
                   a generic CSV or JSONL (docs/client-format.md), or a
                   summary-only file (placed by run bounds alone). Its phases
                   (warmup/profiling, stages, else concurrency levels) become
                   named phases of source "client"; each is set beside the
                   fleet's figures over the same bounds, quantity by quantity
                   (ratio, tolerance, agree/disagree/not comparable), and a
                   disagreement is a finding naming its likely seam
  --client-tz ZONE a client file's local times without a zone are in ZONE
  --client-anchor MONO=EPOCH
                   a monotonic reading (seconds) and the Unix time it was
                   taken at: reads inference-perf's per-request perf_counter
  --cap [ENGINE.]CELL=MAX
                   a plausibility cap, repeatable: decode=5000,
                   llamacpp.decode=300. CELL is a rate cell or decode, prompt,
                   prompt_computed, preemptions, requests_finished
  --slo ttft_p99=500ms,itl_p99=50ms
                   service-level objectives each level of the sweep is judged
                   by (metrics ttft, itl, e2e; any quantile): the share under
                   each threshold from the histogram's buckets (exact at a
                   bucket bound, else a bracket), the client's goodput with
                   --client, and the boundary between the highest level that
                   passes and the first that fails
  --gpus N, --gpu-hour-usd X
                   GPUs per engine and the price of a GPU hour: the sweep's
                   tokens/s per GPU and US dollars per million output tokens

The sweep: where a run holds several load levels (named phases: marks,
--phases, the client's stages, a warmup left out; else the steady phases
found), each is a point in order of offered load (the client's requests in
flight, else the engine's mean running + waiting) with its throughput and
latencies from the engine's own counters, the evidence of saturation
(waiting rising, queued, KV ≥ 95 %, preemptions rising, decode not
following the load, capacity queueing) and the knee where it begins.

Examples:
  llmrec analyze runs/bench1
  llmrec analyze runs/bench1 runs/bench1-after-restart --span 2s --json analysis.json
  llmrec analyze runs/bench1 --spans 2s,5s,30s --cap decode=5000 --cap llamacpp.decode=300
  llmrec analyze runs/bench1 --json - | jq '.incidents[] | {kind, target, detail}'
  llmrec analyze runs/bench1 --config gates.toml
  llmrec analyze runs/bench1 --client artifacts/profile_export.jsonl --json analysis.json

Config file (TOML; flags given on the command line win):
  span = "10s"
  min_window = "500ms"
  ceiling_factor = 2.0     # a window longer than this × span is a stall
  jump_factor = 8.0        # a rate this × the last accepted one is held until confirmed
  jump_floor = 10.0        # per second: the last rate counts as at least this
  stale_fraction = 0.25    # largest request-to-first-byte time, as a fraction of the window
  spans = ["2s", "10s"]    # counterfactual spans ([] for none)
  gpus = 1                 # GPUs per engine (--gpus)
  gpu_hour_usd = 2.5       # price of a GPU hour (--gpu-hour-usd)
  [slo]                    # service-level objectives (--slo adds to them)
  ttft_p99 = "500ms"
  itl_p99 = "50ms"
  [caps]                   # plausibility caps; quote a key with an engine
  decode = 5000.0
  "llamacpp.decode" = 300.0

The JSON document (schema "llmrec.analysis/1") is described in
docs/analysis-format.md.
`

// gatesFile is the TOML form of the estimator's gates, the
// counterfactual spans and the plausibility caps.
type gatesFile struct {
	Span          record.Duration    `toml:"span"`
	MinWindow     record.Duration    `toml:"min_window"`
	CeilingFactor float64            `toml:"ceiling_factor"`
	JumpFactor    float64            `toml:"jump_factor"`
	JumpFloor     float64            `toml:"jump_floor"`
	StaleFraction float64            `toml:"stale_fraction"`
	Spans         *[]record.Duration `toml:"spans"`
	Caps          map[string]float64 `toml:"caps"`
	SLO           map[string]string  `toml:"slo"`
	GPUs          int                `toml:"gpus"`
	GPUHourUSD    float64            `toml:"gpu_hour_usd"`
}

// analyzeConfig is what the config file sets.
type analyzeConfig struct {
	gates rate.Config
	spans []float64 // nil: not set
	caps  []findings.Cap
	slos  []sweep.SLO
	gpus  int
	usd   float64
}

// loadGates reads the gates of a config file.
func loadGates(path string) (rate.Config, error) {
	c, err := loadAnalyzeConfig(path)
	return c.gates, err
}

// loadAnalyzeConfig reads a config file: the gates, the counterfactual
// spans and the caps; errors name the file and, where known, the line.
func loadAnalyzeConfig(path string) (analyzeConfig, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return analyzeConfig{}, fmt.Errorf("read config: %w", err)
	}
	var g gatesFile
	md, err := toml.Decode(string(text), &g)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return analyzeConfig{}, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		return analyzeConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return analyzeConfig{}, fmt.Errorf("%s:%d: unknown key %q", path, record.KeyLine(text, und[0]), und[0].String())
	}
	c := analyzeConfig{gates: rate.Config{
		Span: time.Duration(g.Span).Seconds(), MinWindow: time.Duration(g.MinWindow).Seconds(),
		CeilingFactor: g.CeilingFactor, JumpFactor: g.JumpFactor, JumpFloor: g.JumpFloor, StaleFraction: g.StaleFraction,
	}}
	if g.Spans != nil {
		c.spans = []float64{}
		for _, d := range *g.Spans {
			if d <= 0 {
				return analyzeConfig{}, fmt.Errorf("%s:%d: spans: %s is not a positive duration", path, record.KeyLine(text, toml.Key{"spans"}), time.Duration(d))
			}
			c.spans = append(c.spans, time.Duration(d).Seconds())
		}
	}
	keys := slices.Sorted(maps.Keys(g.Caps))
	for _, k := range keys {
		cp, err := findings.NewCap(k, strconv.FormatFloat(g.Caps[k], 'g', -1, 64))
		if err != nil {
			return analyzeConfig{}, fmt.Errorf("%s:%d: %v", path, record.KeyLine(text, toml.Key{"caps", k}), err)
		}
		c.caps = append(c.caps, cp)
	}
	for _, k := range slices.Sorted(maps.Keys(g.SLO)) {
		o, err := sweep.ParseSLO(k + "=" + g.SLO[k])
		if err != nil {
			return analyzeConfig{}, fmt.Errorf("%s:%d: slo: %v", path, record.KeyLine(text, toml.Key{"slo", k}), err)
		}
		c.slos = append(c.slos, o)
	}
	if g.GPUs < 0 || g.GPUHourUSD < 0 {
		return analyzeConfig{}, fmt.Errorf("%s: gpus and gpu_hour_usd are not negative", path)
	}
	c.gpus, c.usd = g.GPUs, g.GPUHourUSD
	return c, nil
}

// parseSpans reads "2s,10s" ("none": no counterfactual span).
func parseSpans(s string) ([]float64, error) {
	out := []float64{}
	if strings.TrimSpace(s) == "none" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: analyze: --spans: %q is not a positive duration like 2s", errUsage, part)
		}
		out = append(out, d.Seconds())
	}
	return out, nil
}

// analysisFlags registers the flags that shape an analysis (gates, spans,
// caps, progress) on fs; build turns them, after parsing, into Options for
// the run folders given. Shared by analyze and render.
func analysisFlags(fs *flag.FlagSet, stderr io.Writer) (build func(cmd string, dirs []string) (analyze.Options, error)) {
	span := fs.Duration("span", 0, "how far back a window may reach (default 10s, or the config's)")
	minWindow := fs.Duration("min-window", 0, "the floor: shorter windows are refused (default 500ms, or the config's; negative: off)")
	configPath := fs.String("config", "", "TOML file with the gates, spans and caps")
	quiet := fs.Bool("quiet", false, "no progress output")
	spansFlag := fs.String("spans", "", `counterfactual spans, e.g. 2s,10s (default 2s,10s, or the config's; "none": none)`)
	phasesPath := fs.String("phases", "", "named phases: CSV name,start,end (RFC 3339 or Unix seconds) or the same as a JSON array")
	readClients := clientFlags(fs)
	var capFlags multiFlag
	fs.Var(&capFlags, "cap", "a plausibility cap [ENGINE.]CELL=MAX, e.g. decode=5000 (repeatable; the config's are added)")
	sloFlag := fs.String("slo", "", "service-level objectives METRIC_pNN=DURATION, comma-separated, e.g. ttft_p99=500ms,itl_p99=50ms (the config's are added)")
	gpus := fs.Int("gpus", 0, "GPUs per engine: the sweep's tokens/s per GPU and cost")
	usd := fs.Float64("gpu-hour-usd", 0, "US dollars per GPU hour: the sweep's cost per million output tokens (with --gpus)")
	return func(cmd string, dirs []string) (analyze.Options, error) {
		if len(dirs) == 0 {
			return analyze.Options{}, fmt.Errorf("%w: %s: want at least one run folder", errUsage, cmd)
		}
		var gates rate.Config
		var spans []float64
		var caps []findings.Cap
		var cfg analyzeConfig
		if *configPath != "" {
			c, err := loadAnalyzeConfig(*configPath)
			if err != nil {
				return analyze.Options{}, err
			}
			cfg = c
			gates, spans, caps = c.gates, c.spans, c.caps
		}
		slos := cfg.slos
		if *sloFlag != "" {
			given, err := sweep.ParseSLOs(*sloFlag)
			if err != nil {
				return analyze.Options{}, fmt.Errorf("%w: %s: --slo: %v", errUsage, cmd, err)
			}
			// A flag naming the config's objective replaces it.
			for _, o := range given {
				slos = slices.DeleteFunc(slos, func(x sweep.SLO) bool { return x.Name == o.Name })
			}
			slos = append(slos, given...)
		}
		if *gpus < 0 || *usd < 0 {
			return analyze.Options{}, fmt.Errorf("%w: %s: --gpus and --gpu-hour-usd are not negative", errUsage, cmd)
		}
		if *gpus > 0 {
			cfg.gpus = *gpus
		}
		if *usd > 0 {
			cfg.usd = *usd
		}
		if *spansFlag != "" {
			sp, err := parseSpans(*spansFlag)
			if err != nil {
				return analyze.Options{}, err
			}
			spans = sp
		}
		for _, c := range capFlags {
			cp, err := findings.ParseCap(c)
			if err != nil {
				return analyze.Options{}, fmt.Errorf("%w: %s: --cap: %v", errUsage, cmd, err)
			}
			caps = append(caps, cp)
		}
		if *span != 0 {
			gates.Span = span.Seconds()
		}
		if *minWindow != 0 {
			gates.MinWindow = minWindow.Seconds()
		}
		if gates.Span < 0 {
			return analyze.Options{}, fmt.Errorf("%w: %s: the span must be positive", errUsage, cmd)
		}
		opts := analyze.Options{Dirs: dirs, Gates: gates, Spans: spans, Caps: caps, SLOs: slos, GPUs: cfg.gpus, GPUHourUSD: cfg.usd}
		if *phasesPath != "" {
			ps, err := phases.ReadFile(*phasesPath)
			if err != nil {
				return analyze.Options{}, err
			}
			opts.Phases = ps
		}
		clients, err := readClients(cmd)
		if err != nil {
			return analyze.Options{}, err
		}
		opts.Clients = clients
		if !*quiet {
			opts.Progress = progressPrinter(stderr)
		}
		return opts, nil
	}
}

func analyzeRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("analyze", analyzeUsage, stdout)
	jsonPath := fs.String("json", "", `write the analysis as JSON to FILE ("-": stdout, and the summary goes to stderr)`)
	build := analysisFlags(fs, stderr)
	if err := parseFlags(fs, interleave(args, map[string]bool{"quiet": true})); err != nil {
		return err
	}
	opts, err := build("analyze", fs.Args())
	if err != nil {
		return err
	}
	opts.SkipPolls = *jsonPath == ""
	if *jsonPath != "" {
		// Polls wait on disk beside the document (a day of 8 engines is
		// gigabytes of cells), in the temporary folder for stdout.
		dir := ""
		if *jsonPath != "-" {
			// The document's folder is made when missing.
			dir = filepath.Dir(*jsonPath)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("analyze: write %s: %w", *jsonPath, err)
			}
		}
		spool, err := os.MkdirTemp(dir, ".llmrec-polls-*")
		if err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		defer os.RemoveAll(spool)
		opts.Spool = spool
	}
	res, err := analyze.Analyze(opts)
	if err != nil {
		return err
	}
	defer res.Close()
	summary := stdout
	if *jsonPath != "" {
		if err := writeAnalysisJSON(res, *jsonPath, stdout); err != nil {
			return err
		}
		if *jsonPath == "-" {
			summary = stderr
		}
	}
	if err := res.WriteSummary(summary); err != nil {
		return err
	}
	if len(res.Problems) > 0 {
		return fmt.Errorf("%d file(s) could not be read (listed above); the rest was analysed", len(res.Problems))
	}
	return nil
}

// writeAnalysisJSON writes the document to path, or to stdout for "-"; a
// file is written under a temporary name and renamed, so a failed run
// never leaves half a document.
func writeAnalysisJSON(res *analyze.Result, path string, stdout io.Writer) error {
	if path == "-" {
		return res.WriteJSON(stdout)
	}
	return writeFile(path, res.WriteJSON)
}

// progressPrinter reports the files read, at most once a second and when
// the last one is done, for runs of more than one file.
func progressPrinter(w io.Writer) func(analyze.Progress) {
	var last time.Time
	start := time.Now()
	return func(p analyze.Progress) {
		done := p.Done == p.Total
		if p.Total < 2 || (!done && time.Since(last) < time.Second) {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "analyze: %d/%d files, %d rows, %d samples, %s (%s)\n",
			p.Done, p.Total, p.Rows, p.Samples, time.Since(start).Round(100*time.Millisecond), filepath.Base(p.File))
	}
}
