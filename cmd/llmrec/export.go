package main

import (
	"context"
	"fmt"
	"io"

	"github.com/llmrec/llmrec/record/capture"
)

const exportUsage = `Usage: llmrec export DIR --target NAME --seq N [--endpoint E] [--run ID]

Prints one captured body to stdout exactly as it was received (after
transport decompression): how a moment of a run becomes a test fixture.
The seq of a scrape is its tick number, shown by "llmrec inspect" and in the
Parquet column seq.

Examples:
  llmrec export runs/bench1 --target vllm --seq 120 > testdata/vllm-busy.txt
  llmrec export runs/bench1 --target llama --endpoint /slots --seq 3
`

func exportRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("export", exportUsage, stderr)
	target := fs.String("target", "", "target name (required)")
	seq := fs.Int64("seq", -1, "tick number of the scrape (required)")
	endpoint := fs.String("endpoint", capture.EndpointMetrics, `endpoint: "metrics" or an extra endpoint's path`)
	run := fs.String("run", "", "run id, when the folder holds several sessions")
	if err := parseFlags(fs, interleave(args, nil)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: export: want exactly one run folder, got %d arguments", errUsage, fs.NArg())
	}
	if *target == "" || *seq < 0 {
		return fmt.Errorf("%w: export: --target and --seq are required", errUsage)
	}
	r, err := capture.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	s, err := capture.Find(r, *run, *target, *endpoint, *seq)
	if err != nil {
		return err
	}
	if s.Body == nil {
		why := s.Outcome
		if s.Error != nil {
			why += ": " + *s.Error
		}
		return fmt.Errorf("target %q seq %d has no body (%s)", *target, *seq, why)
	}
	_, err = stdout.Write(s.Body)
	return err
}
