package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/sweep"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/render"
)

const diffUsage = `Usage: llmrec diff BASE... -- CAND... [--phase NAME] [--match name|engine] [--threshold [QTY=]P%]...
                   [--fail-on worse|boundary|QTY,...] [--slo METRIC_pNN=D,...] [--md FILE] [-o FILE.html] [--json FILE] [--config FILE]
                   [--client-base FILE[,FILE...]]... [--client-cand FILE[,FILE...]]...

Is the candidate faster or slower than the baseline, by how much, and can
the reviewer trust it? BASE and CAND are run folders, one or more a side
(repeats of one configuration), each analysed as "llmrec analyze" does.

Phases are aligned by name (named phases, marked while recording or given
with --phases / --candidate-phases, on both sides), else by order of each
target's steady phases when both sides have as many at matching load
levels (mean running requests within a factor 1.25), else over each
target's busy time. Targets are matched by name, or with --match engine by
engine (the k-th target of an engine on each side, by name).

Per aligned phase, target (and the fleet, over named phases) and quantity
(decode and prompt tokens/s, requests/s, TTFT/TPOT/ITL/e2e/queue p50 and
p99, preemptions/s, max KV usage, prefix-hit ratio): the baseline and
candidate medians with their intervals, the change with its interval, the
p-value and a verdict. The values compared are never overlapping polls:
with two or more run folders a side, one value per run (the phase figure
from the engine's own counters); with one, the phase's non-overlapping
blocks. The test is Mann-Whitney U, the change's interval Hodges-Lehmann
(package analyze/diff/stat; docs/diff-format.md).

Verdicts: "better" or "worse" only when the test is significant at alpha
(0.05) AND the change's whole interval lies beyond the quantity's noise
threshold (default 5 %) on one side; "unlike" across a seam that makes the
sides different things (engine, engine version, model): the numbers are
shown, no verdict is issued; "insufficient" when the samples cannot
support one (saying what is missing); "~" otherwise. Higher is better for
throughputs and ratios, lower for latencies, preemptions and KV usage.

The seams come first: different engine, version, model or tokenizer,
gates, span, cadence, number of engines, a target or phase on one side
only, incidents inside a compared phase.

Client records (--client-base, --client-cand): each side may carry the
load generator's own record of its runs (the formats of "llmrec analyze
--client": AIPerf, GuideLLM, generic CSV/JSONL, summary-only formats,
AIPerf GPU telemetry). --client-base names the baseline's files,
--client-cand the candidate's; the side is in the flag's name, never in
where it stands on the command line ("--client" alone is refused here).
With one run folder a side every file of the side is that run's; with
several, give one --client-base per baseline folder in the folders' order,
each a comma-separated list of that run's files (the same for
--client-cand). --client-tz ZONE applies to both sides;
--client-anchor-base and --client-anchor-cand place each side's
monotonic clocks (MONO=EPOCH, as --client-anchor). The client's phases
are named phases of each run, so they align by name; per phase the
client's figures are rows of target "client" (origin client): output
tokens/s, requests/s, TTFT/ITL/e2e p50/p90/p99, error rate and, with GPU
telemetry on both sides, energy per output token. Latency quantiles and
the error rate are compared on the per-request records (p50: Mann-Whitney
U and Hodges-Lehmann; p90/p99: the quantile test with order-statistic
intervals; error rate: two proportions), the rates on the phase's blocks
(one run a side) or one value per run. Where client and engines disagree
on one side and agree on the other, a "client_server" seam says so. A
summary-only file (no per-request times) is aligned by run bounds only and
gives figures, not samples.

Outputs: the table on stdout; --md FILE a pull-request summary (the verdict
table first, at most 40 visible lines, the rest folded); -o FILE.html one
offline page with the verdict table and each quantity's baseline and
candidate overlaid on a phase-relative axis with both runs' incidents;
--json FILE the comparison (schema llmrec.diff/1, docs/diff-format.md).
"-" writes to stdout (the table then goes to stderr).

Sweeps: where both sides hold several load levels, their curves (as
"llmrec analyze" prints them) are set side by side: the change of decode
tokens/s, TTFT p99 and ITL p99 at each level both have (matched by name,
else by offered load within 15 %), and with --slo each objective's
boundary on both sides, its fitted crossing's shift and the levels that
bound it. --fail-on boundary exits 1 when the candidate passes an
objective to a lower level than the baseline.

Exit status: 0 compared; 1 a --fail-on verdict, or under --fail-on a side
with nothing to compare (no rows, or no value of its own in any row), or a
file that could not be read; 2 the command line was wrong.

Quantities: ` + "QUANTITIES" + `

Examples:
  llmrec diff runs/main -- runs/pr
  llmrec diff runs/main-1 runs/main-2 runs/main-3 runs/main-4 -- runs/pr-1 runs/pr-2 runs/pr-3 runs/pr-4
  llmrec diff runs/main -- runs/pr --threshold 3% --threshold ttft_p99=10% --fail-on worse --md diff.md
  llmrec diff runs/a -- runs/b --match engine --phase "steady 1" -o diff.html --json diff.json

Config file (TOML; flags given on the command line win or add):
  threshold = "5%"            # every quantity
  fail_on = ["worse"]         # or quantities: ["decode", "ttft_p99"]
  alpha = 0.05
  conf = 0.95
  [thresholds]                # per quantity
  ttft_p99 = "10%"
`

// diffFile is the TOML form of the diff's settings.
type diffFile struct {
	Threshold  string            `toml:"threshold"`
	Thresholds map[string]string `toml:"thresholds"`
	FailOn     []string          `toml:"fail_on"`
	Alpha      float64           `toml:"alpha"`
	Conf       float64           `toml:"conf"`
}

// splitSides splits the arguments at the first "--" into the baseline's
// and the candidate's folders, and the flags of either part.
func splitSides(args []string, bools map[string]bool) (flags, base, cand []string, sep bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" && !sep {
			sep = true
			continue
		}
		if n := flagAt(args, i, bools); n > 0 {
			flags = append(flags, args[i:i+n]...)
			i += n - 1
			continue
		}
		if sep {
			cand = append(cand, a)
		} else {
			base = append(base, a)
		}
	}
	return flags, base, cand, sep
}

func diffRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("diff", strings.Replace(diffUsage, "QUANTITIES", strings.Join(diff.QuantityKeys(), ", "), 1), stdout)
	phase := fs.String("phase", "", "compare only the aligned phase of this name")
	match := fs.String("match", diff.MatchName, "match targets by name or by engine")
	var thresholds multiFlag
	fs.Var(&thresholds, "threshold", "noise threshold: 5% for every quantity, or QTY=10% (repeatable; default 5%)")
	var failOn multiFlag
	fs.Var(&failOn, "fail-on", `exit 1 when a row is "worse": worse (any quantity) or quantities, comma-separated (unlike, insufficient: those too)`)
	alpha := fs.Float64("alpha", 0, "the test's level (default 0.05, or the config's)")
	conf := fs.Float64("conf", 0, "the intervals' confidence (default 0.95, or the config's)")
	md := fs.String("md", "", `write a Markdown summary to FILE ("-": stdout)`)
	out := fs.String("out", "", "write one offline HTML page to FILE")
	fs.StringVar(out, "o", "", "short for --out")
	jsonPath := fs.String("json", "", `write the comparison as JSON to FILE ("-": stdout)`)
	configPath := fs.String("config", "", "TOML file with thresholds, fail_on, alpha, conf")
	basePhases := fs.String("phases", "", "named phases of the baseline's runs (CSV name,start,end or JSON, as llmrec analyze)")
	candPhases := fs.String("candidate-phases", "", "named phases of the candidate's runs")
	quiet := fs.Bool("quiet", false, "no progress output")
	sloFlag := fs.String("slo", "", "service-level objectives judged on both sides' sweeps, e.g. ttft_p99=500ms,itl_p99=50ms")
	gpus := fs.Int("gpus", 0, "GPUs per engine (both sides): the sweeps' tokens/s per GPU and cost")
	usd := fs.Float64("gpu-hour-usd", 0, "US dollars per GPU hour (with --gpus): the sweeps' cost per million tokens")
	var clientBase, clientCand multiFlag
	fs.Var(&clientBase, "client-base", "the baseline's client records: FILE[,FILE...] (repeatable; with several baseline folders one per folder, in order)")
	fs.Var(&clientCand, "client-cand", "the candidate's client records: FILE[,FILE...] (repeatable; with several candidate folders one per folder, in order)")
	clientTZ := fs.String("client-tz", "", "the zone of client files' local times written without one (both sides)")
	anchorBase := fs.String("client-anchor-base", "", "MONO=EPOCH: the baseline's client monotonic clock anchor (as analyze's --client-anchor)")
	anchorCand := fs.String("client-anchor-cand", "", "MONO=EPOCH: the candidate's client monotonic clock anchor")
	var clientBare multiFlag
	fs.Var(&clientBare, "client", "refused here: use --client-base and --client-cand")
	flags, base, cand, sep := splitSides(args, map[string]bool{"quiet": true, "h": true, "help": true})
	if err := parseFlags(fs, flags); err != nil {
		return err
	}
	switch {
	case !sep:
		return fmt.Errorf("%w: diff: want BASE... -- CAND...: the baseline's run folders, \"--\", the candidate's", errUsage)
	case len(base) == 0:
		return fmt.Errorf("%w: diff: no baseline run folder before \"--\"", errUsage)
	case len(cand) == 0:
		return fmt.Errorf("%w: diff: no candidate run folder after \"--\"", errUsage)
	case *match != diff.MatchName && *match != diff.MatchEngine:
		return fmt.Errorf("%w: diff: --match %q: want name or engine", errUsage, *match)
	case *md == "-" && *jsonPath == "-":
		return fmt.Errorf("%w: diff: --md and --json cannot both write to stdout", errUsage)
	case len(clientBare) > 0:
		return fmt.Errorf("%w: diff: --client names no side: give the baseline's files with --client-base FILE and the candidate's with --client-cand FILE", errUsage)
	}
	bclients, err := sideClients("baseline", "--client-base", clientBase, base, *clientTZ, *anchorBase, "--client-anchor-base")
	if err != nil {
		return err
	}
	cclients, err := sideClients("candidate", "--client-cand", clientCand, cand, *clientTZ, *anchorCand, "--client-anchor-cand")
	if err != nil {
		return err
	}
	if len(clientBase)+len(clientCand) == 0 && *clientTZ != "" {
		return fmt.Errorf("%w: diff: --client-tz needs --client-base or --client-cand", errUsage)
	}
	o := diff.Options{Phase: *phase, Match: *match, Generator: "llmrec " + capture.Version}
	var fails []string
	th := &diff.Thresholds{Default: diff.DefaultThreshold}
	if *configPath != "" {
		c, err := loadDiffConfig(*configPath, th)
		if err != nil {
			return err
		}
		o.Alpha, o.Conf, fails = c.Alpha, c.Conf, c.FailOn
	}
	// The flags come after the config's: theirs win.
	for _, t := range thresholds {
		if err := th.Set(t); err != nil {
			return fmt.Errorf("%w: diff: --threshold: %v", errUsage, err)
		}
	}
	o.Thresholds = th
	if *alpha != 0 {
		o.Alpha = *alpha
	}
	if *conf != 0 {
		o.Conf = *conf
	}
	if !(o.Alpha >= 0 && o.Alpha < 1) || !(o.Conf >= 0 && o.Conf < 1) {
		return fmt.Errorf("%w: diff: --alpha and --conf are between 0 and 1", errUsage)
	}
	for _, f := range failOn {
		for _, w := range strings.Split(f, ",") {
			if w = strings.TrimSpace(w); w != "" {
				fails = append(fails, w)
			}
		}
	}
	if err := diff.CheckFailOn(fails); err != nil {
		return fmt.Errorf("%w: diff: %v", errUsage, err)
	}
	sw := analyze.Options{GPUs: *gpus, GPUHourUSD: *usd}
	if *gpus < 0 || *usd < 0 {
		return fmt.Errorf("%w: diff: --gpus and --gpu-hour-usd are not negative", errUsage)
	}
	if *sloFlag != "" {
		slos, err := sweep.ParseSLOs(*sloFlag)
		if err != nil {
			return fmt.Errorf("%w: diff: --slo: %v", errUsage, err)
		}
		sw.SLOs = slos
	}
	if slices.Contains(fails, diff.FailBoundary) && len(sw.SLOs) == 0 {
		return fmt.Errorf("%w: diff: --fail-on boundary needs --slo: a boundary is an objective's", errUsage)
	}
	var bp, cp []phases.Phase
	for _, x := range []struct {
		path string
		dst  *[]phases.Phase
	}{{*basePhases, &bp}, {*candPhases, &cp}} {
		if x.path == "" {
			continue
		}
		ps, err := phases.ReadFile(x.path)
		if err != nil {
			return fmt.Errorf("%w: diff: %v", errUsage, err)
		}
		*x.dst = ps
	}
	charts := *out != ""
	progress := stderr
	if *quiet {
		progress = io.Discard
	}
	// One run on either side: the phases' blocks are the samples.
	blocks := len(base) < 2 || len(cand) < 2
	// The two sides are analysed at once: they share nothing, and a diff
	// then takes about as long as analysing the larger side.
	var (
		bs, cs               diff.Side
		bproblems, cproblems int
		berr, cerr           error
		wg                   sync.WaitGroup
	)
	wg.Go(func() {
		bs, bproblems, berr = analyzeSide("baseline", base, bp, bclients, sw, charts, blocks, progress, stderr)
	})
	wg.Go(func() {
		cs, cproblems, cerr = analyzeSide("candidate", cand, cp, cclients, sw, charts, blocks, progress, stderr)
	})
	wg.Wait()
	defer closeSide(bs)
	defer closeSide(cs)
	if err := cmp.Or(berr, cerr); err != nil {
		return err
	}
	rep, err := diff.Compare(bs, cs, o)
	if err != nil {
		if *phase != "" {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	table := stdout
	if *md == "-" || *jsonPath == "-" {
		table = stderr
	}
	if err := render.DiffText(table, rep); err != nil {
		return err
	}
	if *jsonPath != "" {
		write := func(w io.Writer) error { return diff.WriteJSON(w, rep) }
		if err := writeTo(*jsonPath, stdout, write); err != nil {
			return err
		}
	}
	if *md != "" {
		if err := writeTo(*md, stdout, func(w io.Writer) error { return render.DiffMarkdown(w, rep) }); err != nil {
			return err
		}
	}
	if *out != "" {
		page, err := render.DiffReport(rep)
		if err != nil {
			return err
		}
		if err := writeFile(*out, func(w io.Writer) error { return render.HTML(w, page) }); err != nil {
			return err
		}
	}
	if failed := rep.FailOn(fails); len(failed) > 0 {
		return fmt.Errorf("diff: --fail-on %s: %d row(s): %s", strings.Join(fails, ","), len(failed), firstOf(failed, 5))
	}
	if n := bproblems + cproblems; n > 0 {
		return fmt.Errorf("%d file(s) could not be read (listed above); the rest was compared", n)
	}
	return nil
}

// writeTo writes to path, or to stdout for "-".
func writeTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	return writeFile(path, write)
}

// analyzeSide analyses each folder of a side on its own (each a repeat);
// the first keeps its polls' values for the charts when asked.
// With blocks, each phase's figures carry their blocks (the samples when a
// side has one run).
// clients[i] are the client records of dirs[i].
func analyzeSide(name string, dirs []string, named []phases.Phase, clients [][]*client.Run, sw analyze.Options, charts, blocks bool, progress, stderr io.Writer) (diff.Side, int, error) {
	s := diff.Side{Dirs: dirs}
	if charts {
		s.Polls = diff.NewPolls()
	}
	problems := 0
	for i, dir := range dirs {
		opts := analyze.Options{Dirs: []string{dir}, Phases: named, SkipPolls: true, Blocks: blocks,
			SLOs: sw.SLOs, GPUs: sw.GPUs, GPUHourUSD: sw.GPUHourUSD}
		if i < len(clients) {
			opts.Clients = clients[i]
		}
		if i == 0 && charts {
			opts.SkipPolls, opts.Polls = false, s.Polls.Add
		}
		fmt.Fprintf(progress, "diff: analysing the %s's %s\n", name, dir)
		res, err := analyze.Analyze(opts)
		if err != nil {
			closeSide(s)
			return diff.Side{}, 0, fmt.Errorf("diff: %s %s: %w", name, dir, err)
		}
		for _, p := range res.Problems {
			fmt.Fprintf(stderr, "diff: %s %s: %s: %s\n", name, dir, p.File, p.Error)
		}
		problems += len(res.Problems)
		s.Runs = append(s.Runs, res)
	}
	return s, problems, nil
}

// sideClients reads a side's client files, one list per run folder: with
// one folder every file is its; with several, one flag value per folder,
// in order, each a comma-separated list. anchor places monotonic clocks.
func sideClients(side, flagName string, values, dirs []string, tz, anchor, anchorFlag string) ([][]*client.Run, error) {
	if len(values) == 0 {
		if anchor != "" {
			return nil, fmt.Errorf("%w: diff: %s needs %s FILE", errUsage, anchorFlag, flagName)
		}
		return nil, nil
	}
	var lists [][]string
	for _, v := range values {
		var files []string
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: diff: %s %q names no file", errUsage, flagName, v)
		}
		lists = append(lists, files)
	}
	if len(dirs) == 1 {
		lists = [][]string{slices.Concat(lists...)}
	} else if len(lists) != len(dirs) {
		return nil, fmt.Errorf("%w: diff: %d %s run folders, %d %s values: with several run folders give one %s per folder, in order, each FILE[,FILE...] of that run",
			errUsage, len(dirs), side, len(lists), flagName, flagName)
	}
	opt, err := clientOptions("diff", tz, anchor, anchorFlag)
	if err != nil {
		return nil, err
	}
	out := make([][]*client.Run, len(lists))
	for i, files := range lists {
		runs, err := readClients(files, opt)
		if err != nil {
			return nil, fmt.Errorf("diff: %s: %w", side, err)
		}
		out[i] = runs
	}
	return out, nil
}

func closeSide(s diff.Side) {
	for _, r := range s.Runs {
		r.Close()
	}
}

// loadDiffConfig reads a diff config file into th and the rest.
func loadDiffConfig(path string, th *diff.Thresholds) (diffFile, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return diffFile{}, fmt.Errorf("%w: diff: read config: %w", errUsage, err)
	}
	var f diffFile
	md, err := toml.Decode(string(text), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return diffFile{}, fmt.Errorf("%w: %s:%d: %s", errUsage, path, pe.Position.Line, pe.Message)
		}
		return diffFile{}, fmt.Errorf("%w: %s: %v", errUsage, path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return diffFile{}, fmt.Errorf("%w: %s:%d: unknown key %q", errUsage, path, record.KeyLine(text, und[0]), und[0].String())
	}
	if f.Threshold != "" {
		if err := th.Set(f.Threshold); err != nil {
			return diffFile{}, fmt.Errorf("%w: %s: threshold: %v", errUsage, path, err)
		}
	}
	for k, v := range f.Thresholds {
		if err := th.Set(k + "=" + v); err != nil {
			return diffFile{}, fmt.Errorf("%w: %s:%d: thresholds: %v", errUsage, path, record.KeyLine(text, toml.Key{"thresholds", k}), err)
		}
	}
	return f, nil
}

// firstOf joins the first n of rows, and says how many more there are:
// an error line stays a line (the table above has every row).
func firstOf(rows []string, n int) string {
	if len(rows) <= n {
		return strings.Join(rows, "; ")
	}
	return fmt.Sprintf("%s; and %d more (the table above lists them)", strings.Join(rows[:n], "; "), len(rows)-n)
}
