package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/analyze/rate"
	livetext "github.com/llmrec/llmrec/render/live"
)

const topUsage = `Usage: llmrec top DIR [--once] [--interval D] [--window D] [--span D] [--json]

Watches a recording while it records (or replays a finished one): per
target its state (busy, idle, down, stalled), decode and prompt tokens/s,
TTFT and ITL p50, running and waiting requests, KV usage, and its scrapes'
health (time to first byte p99, missed ticks, failures over the window);
the fleet's totals; the named phase under way (llmrec mark); the incidents
found so far (restart, engine_stall, gap, refused windows, ...) with their
times; a sparkline of decode tokens/s per target.

Every number is what llmrec analyze publishes for the same polls: top reads
the folder through the same engine readers, gated estimator and findings
(docs/top.md). It only reads: it never writes, creates or locks anything in
DIR, so it can watch from any terminal while llmrec record writes.

KV usage from 80 % reads "warn", from 95 % "saturated"; "saturating" marks
a waiting queue that rose over the window (a positive least-squares slope,
by one request or more).

--once prints one frame and exits (for scripts and tests); without a
terminal the output has no colour.

Examples:
  llmrec top runs/bench1 --once
  llmrec top runs/bench1 --once --json | jq '.targets[].state'
`

func topRun(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("top", topUsage, stdout)
	once := fs.Bool("once", false, "print one frame and exit")
	asJSON := fs.Bool("json", false, "with --once: print the frame as JSON")
	interval := fs.Duration("interval", time.Second, "refresh interval, 250ms to 1s")
	window := fs.Duration("window", 30*time.Second, "the trailing window of scrape health and the waiting slope")
	span := fs.Duration("span", 0, "the estimator's span, as llmrec analyze --span (default: analyze's)")
	if err := parseFlags(fs, interleave(args, map[string]bool{"once": true, "json": true})); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: top: want exactly one run folder, got %d arguments", errUsage, fs.NArg())
	}
	if *interval < 250*time.Millisecond || *interval > time.Second {
		return fmt.Errorf("%w: top: --interval %v is outside 250ms..1s", errUsage, *interval)
	}
	if *window <= 0 {
		return fmt.Errorf("%w: top: --window must be positive", errUsage)
	}
	opts := live.Options{Dir: fs.Arg(0), Window: window.Seconds(), Gates: rate.Config{Span: span.Seconds()}}
	if *once {
		f, err := live.Read(opts)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(f)
		}
		return livetext.Text(stdout, f, livetext.TextOptions{Color: isTerminal(stdout)})
	}
	return topLoop(ctx, stdout, opts, *interval)
}

// topLoop redraws a frame every interval until ctx ends.
func topLoop(ctx context.Context, stdout io.Writer, opts live.Options, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		f, err := live.Read(opts)
		if err != nil {
			return err
		}
		if err := livetext.Text(stdout, f, livetext.TextOptions{Color: isTerminal(stdout)}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
