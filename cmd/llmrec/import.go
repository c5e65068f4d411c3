package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/record/promimport"
	"github.com/llmrec/llmrec/record/redact"
)

const importUsage = `Usage: llmrec import prometheus --url URL --match SELECTOR... --start T --end T --out DIR

Reads what a Prometheus-compatible store (Prometheus, Thanos, Mimir,
VictoriaMetrics) already scraped: the raw samples of every series the
selectors match, with their scrape timestamps (instant queries over a range
selector, paged by --chunk: no PromQL extrapolation), and writes them as a
recording in DIR: one row per target and scrape, with its samples and no
body, marked as imported from URL (credentials never written). analyze,
render and diff read it as any recording; they say the bodies are absent and
which checks cannot apply.

Targets are the series' job and instance labels ("job/instance"), or the
values of --target-label; those labels are taken out of the samples, as a
scraped page has none. Types come from the store's /api/v1/metadata where it
serves them, else from the names (a _bucket series with le is a histogram).

Bounds: a redirect is an error unless --follow-redirects, which follows
only one to the same scheme, host and port (credentials never go
elsewhere); each chunk's answers are read as a stream and stop with an
error past --max-series, --max-samples or 256 MiB of JSON; an import makes
at most 10,000 targets. A chunk that fails after others were written
leaves the folder marked partial (its manifest, and every later read, say
so and why); an import that finds not one sample is an error.

Limits: the store keeps one sample per scrape interval (its resolution, not
the engine's), no staleness markers come back, and a failed scrape is known
only when up is among the series matched.

Times are RFC 3339 (2026-12-03T10:00:00Z) or Unix seconds.

Examples:
  llmrec import prometheus --url http://prometheus:9090 --match '{job="vllm"}' \
      --start 2026-12-03T10:00:00Z --end 2026-12-03T11:00:00Z --out runs/prod
  llmrec import prometheus --url http://127.0.0.1:9090 --match '{llmrec_run=~".+"}' \
      --target-label llmrec_target --start 1796216000 --end 1796219600 -o runs/back
`

func importRun(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	if len(args) == 0 || args[0] != "prometheus" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, importUsage)
			return nil
		}
		return fmt.Errorf("%w: import: want \"import prometheus\" (the one store it reads); see %s import -h", errUsage, self)
	}
	fs := newFlags("import prometheus", importUsage, stdout)
	rawURL := fs.String("url", "", "the store's base URL (http://host:9090); user information is sent as basic auth and never written")
	var match multiFlag
	fs.Var(&match, "match", "a series selector (repeatable): '{job=\"vllm\"}', 'vllm:num_requests_running'")
	start := fs.String("start", "", "the first time read: RFC 3339 or Unix seconds")
	end := fs.String("end", "", "the last time read: RFC 3339 or Unix seconds")
	out := fs.String("out", "", "the run folder to write (new, or empty)")
	fs.StringVar(out, "o", "", "same as --out")
	label := fs.String("target-label", "", "group series into targets by this label (default: job and instance)")
	chunk := fs.Duration("chunk", promimport.DefaultChunk, "time read by one query: memory holds one chunk's samples")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long one query may take")
	follow := fs.Bool("follow-redirects", false, "follow a redirect to the same scheme, host and port (never elsewhere); by default a redirect is an error")
	maxSeries := fs.Int("max-series", promimport.DefaultBudget.Series, "the most series one chunk's answers may hold")
	maxSamples := fs.Int("max-samples", promimport.DefaultBudget.Samples, "the most samples one chunk's answers may hold (memory: about 400 bytes each)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"--url", *rawURL}, {"--start", *start}, {"--end", *end}, {"--out", *out}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(match) == 0 {
		missing = append(missing, "--match")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: import prometheus: missing %s; see %s import -h", errUsage, strings.Join(missing, ", "), self)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: import prometheus: unexpected argument %q", errUsage, fs.Arg(0))
	}
	t0, err := parseWhen(*start)
	if err != nil {
		return fmt.Errorf("%w: import prometheus: --start %v", errUsage, err)
	}
	t1, err := parseWhen(*end)
	if err != nil {
		return fmt.Errorf("%w: import prometheus: --end %v", errUsage, err)
	}
	if !t1.After(t0) {
		return fmt.Errorf("%w: import prometheus: --end is not after --start", errUsage)
	}
	if *chunk < time.Second || *timeout <= 0 {
		return fmt.Errorf("%w: import prometheus: --chunk must be at least 1s and --timeout positive", errUsage)
	}
	if *maxSeries <= 0 || *maxSamples <= 0 {
		return fmt.Errorf("%w: import prometheus: --max-series and --max-samples must be positive", errUsage)
	}
	opts := promimport.Options{URL: *rawURL, Match: match, Start: t0, End: t1, Chunk: *chunk, TargetLabel: *label,
		Out: *out, Client: &http.Client{Timeout: *timeout}, FollowRedirects: *follow,
		Budget: promimport.Budget{Series: *maxSeries, Samples: *maxSamples}}
	shown := redact.URL(*rawURL)
	fmt.Fprintf(stderr, "importing from %s: %s, %s .. %s\n", shown, strings.Join(match, " "),
		t0.UTC().Format(time.RFC3339), t1.UTC().Format(time.RFC3339))
	sum, err := promimport.Import(ctx, opts)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	fmt.Fprintf(stdout, "imported %d scrapes (%d samples) of %d targets into %s, session %s, types from %s\n",
		sum.Rows+sum.Failed, sum.Samples, len(sum.Targets), *out, sum.RunID, sum.Types)
	for _, t := range sum.Targets {
		fmt.Fprintf(stdout, "  %s: %d scrapes, every %s\n", t.Name, t.Rows, t.Interval)
	}
	if sum.Failed > 0 {
		fmt.Fprintf(stdout, "  %d of them failed in the store (up = 0): rows of outcome error\n", sum.Failed)
	}
	return nil
}

// parseWhen reads RFC 3339 or Unix seconds (a fraction allowed).
func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f < 0 || f > 1e11 {
		return time.Time{}, errors.New(strconv.Quote(s) + " is neither RFC 3339 nor Unix seconds")
	}
	return time.UnixMilli(int64(f*1000 + 0.5)), nil
}
