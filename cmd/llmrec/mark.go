package main

import (
	"context"
	"fmt"
	"io"

	"github.com/llmrec/llmrec/record/capture"
)

const markUsage = `Usage: llmrec mark DIR NAME [--end]

Marks the start (or, with --end, the end) of a named phase of a run being
recorded into DIR, now: one line appended to DIR/marks.jsonl with one write
and an fsync, so a crash loses at most the mark being written. A load
generator marks its own phases with it (or through the recorder's mark
endpoint: llmrec record --mark-listen 127.0.0.1:9464, then
curl -X POST -H 'X-Llmrec-Mark: 1' '127.0.0.1:9464/mark?name=load-8').
A marks file is a regular file in DIR (a symlink is refused, not followed)
of at most 1000 marks.

A phase ends at its --end mark, else at the next mark that starts a phase,
else at the end of the recording. llmrec analyze and render measure each
named phase on every target from the engines' own counters, before the
phases they find themselves.

Examples:
  llmrec mark runs/bench1 warmup
  llmrec mark runs/bench1 load-8
  llmrec mark runs/bench1 load-8 --end

In DuckDB: SELECT * FROM read_json('DIR/marks.jsonl', format = 'newline_delimited').
`

func markRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("mark", markUsage, stdout)
	end := fs.Bool("end", false, "end the phase instead of starting it")
	if err := parseFlags(fs, interleave(args, map[string]bool{"end": true})); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: mark: want DIR and NAME, got %d argument(s)", errUsage, fs.NArg())
	}
	m, err := capture.AppendMark(fs.Arg(0), capture.Mark{Name: fs.Arg(1), End: *end, Source: "cli"})
	if err != nil {
		return err
	}
	what := "start"
	if m.End {
		what = "end"
	}
	fmt.Fprintf(stdout, "%s of %q at %s\n", what, m.Name, m.Time)
	return nil
}
