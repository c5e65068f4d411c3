package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/llmrec/llmrec/record/load"
)

const loadUsage = `Usage: llmrec load --url URL --out FILE [--concurrency N --duration D | --stages N:D,...] [flags]

Sends streaming completion requests to an OpenAI-compatible engine on this
machine (llmrec sim, vLLM, llama-server), or with --allow-remote on any host
(an engine on a GPU node, over http or https), at fixed concurrency levels and
writes one record per request as the client saw it: start, first token and
end (Unix epoch ns), time to first token, inter-token latency, tokens in and
out, status. The records are AIPerf's profile_export.jsonl (its 0.3 schema,
--format aiperf) or a generic JSONL (--format jsonl); llmrec analyze and
render read both (--client FILE) to set the client's view beside the
engine's counters.

The run is a warmup (phase "warmup", at the first stage's concurrency),
then one phase per stage: "profiling" for a single stage, else
"concurrency N". Each phase keeps N requests in flight while it lasts;
requests still running at its end get --grace to finish, then are
cancelled (recorded as such, error 499). The next phase starts when the
last request of the one before has ended, so phases never overlap.
--mark posts each phase's start and end to a recorder's mark endpoint
(llmrec record --mark-listen), so the recording carries the same phases.

The prompt is --prompt-tokens words (one token each on llmrec sim); each
request asks for --output-tokens tokens and counts those the server's usage
chunk reports (else the chunks that carried text).

Examples:
  llmrec load --url http://127.0.0.1:8000 --concurrency 4 --duration 60s -o profile_export.jsonl
  llmrec load --url http://127.0.0.1:8000 --stages 1:30s,4:30s,8:30s --warmup 10s \
    --mark http://127.0.0.1:9464/mark -o profile_export.jsonl
  llmrec load --url http://127.0.0.1:8080/v1/chat/completions --stages 4:20s --format jsonl -o requests.jsonl
  llmrec load --allow-remote --url http://gpu-node-3:8000 --stages 2:60s,8:60s -o profile_export.jsonl
`

// loadRun implements "llmrec load".
func loadRun(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("load", loadUsage, stdout)
	url := fs.String("url", "", "the engine's base URL, or its /v1/completions or /v1/chat/completions URL (loopback unless --allow-remote)")
	remote := fs.Bool("allow-remote", false, "let --url name another host than this machine (http or https)")
	conc := fs.Int("concurrency", 1, "requests in flight (one stage of --duration; see --stages)")
	dur := fs.Duration("duration", 0, "how long the one stage lasts, e.g. 60s")
	stages := fs.String("stages", "", "stages as CONCURRENCY:DURATION, comma-separated, e.g. 1:30s,4:30s (instead of --concurrency and --duration)")
	warmup := fs.Duration("warmup", 2*time.Second, "warmup before the stages, at the first stage's concurrency (0: none)")
	promptTok := fs.Int("prompt-tokens", 100, "prompt length in words")
	outTok := fs.Int("output-tokens", 200, "max_tokens of each request")
	model := fs.String("model", "", "the model to ask for (default: leave it to the server)")
	grace := fs.Duration("grace", 30*time.Second, "how long requests in flight at a phase's end may run before they are cancelled")
	format := fs.String("format", load.FormatAIPerf, "records format: aiperf (profile_export.jsonl) or jsonl (generic)")
	out := fs.String("out", "", "file to write the records to (required)")
	fs.StringVar(out, "o", "", "short for --out")
	mark := fs.String("mark", "", "a recorder's mark endpoint to post each phase's start and end to, e.g. http://127.0.0.1:9464/mark")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: load: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *out == "" {
		return fmt.Errorf("%w: load: --out FILE is required", errUsage)
	}
	opts := load.Options{URL: *url, Warmup: *warmup, PromptTokens: *promptTok, OutputTokens: *outTok, Model: *model,
		Grace: *grace, Format: *format, AllowRemote: *remote}
	switch {
	case *stages != "" && *dur != 0:
		return fmt.Errorf("%w: load: --stages and --duration exclude each other", errUsage)
	case *stages != "":
		st, err := load.ParseStages(*stages)
		if err != nil {
			return fmt.Errorf("%w: load: --stages: %v", errUsage, err)
		}
		opts.Stages = st
	case *dur <= 0:
		return fmt.Errorf("%w: load: --duration D (e.g. 60s) or --stages N:D,... is required", errUsage)
	default:
		opts.Stages = []load.Stage{{Concurrency: *conc, Duration: *dur}}
	}
	if *mark != "" {
		m, err := load.MarkURL(*mark)
		if err != nil {
			return fmt.Errorf("%w: load: --mark: %v", errUsage, err)
		}
		opts.Mark = m
	}
	opts.Out = io.Discard
	if err := opts.Check(); err != nil {
		return fmt.Errorf("%w: load: %v", errUsage, err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	w := bufio.NewWriter(f)
	opts.Out = w
	opts.Warn = func(s string) { fmt.Fprintln(stderr, "llmrec load:", s) }
	opts.Progress = func(p load.PhaseSummary) {
		d := p.End.Sub(p.Start).Seconds()
		fmt.Fprintf(stderr, "%s: %d requests (%d ok, %d errors, %d cancelled) at concurrency %d, %d output tokens in %.1f s (%.0f tokens/s)\n",
			p.Name, p.Requests, p.OK, p.Errors, p.Cancelled, p.Concurrency, p.OutputTokens, d, float64(p.OutputTokens)/max(d, 1e-9))
	}
	sum, err := load.Run(ctx, opts)
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("load: %w", ferr)
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("load: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("%w (engine at %s)", err, opts.Host())
	}
	n, okN := 0, 0
	for _, p := range sum.Phases {
		n, okN = n+p.Requests, okN+p.OK
	}
	if okN == 0 {
		return fmt.Errorf("load: none of %d requests to %s succeeded; see the records in %s", n, opts.Host(), *out)
	}
	_, err = fmt.Fprintf(stdout, "%d requests to %s in %d phases (%d ok) written to %s\n", n, opts.Host(), len(sum.Phases), okN, *out)
	return err
}
