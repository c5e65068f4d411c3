package main

import (
	"context"
	"fmt"
	"io"

	"github.com/llmrec/llmrec/record/capture"
)

const exportUsage = `Usage: llmrec export DIR --target NAME --seq N [--endpoint E] [--run ID]
       llmrec export DIR --openmetrics [-o FILE] [--run ID] [--target NAME]

Prints one captured body to stdout exactly as it was received (after
transport decompression): how a moment of a run becomes a test fixture.
The seq of a scrape is its tick number, shown by "llmrec inspect" and in the
Parquet column seq.

--openmetrics writes every sample of every ok scrape as OpenMetrics text (to
-o FILE, else stdout) that Prometheus' promtool turns into TSDB blocks:
  promtool tsdb create-blocks-from openmetrics FILE BLOCKS_DIR
Each sample is at its scrape's first-byte time (milliseconds); each series
keeps the engine's name and labels and gains llmrec_run (the session's run
id) and llmrec_target (the target's name); an engine label of either name
becomes exported_NAME. Families are written once, their samples grouped and
in time order, whatever the recording's length: samples are sorted in runs of
64 MiB spilled to temporary files (beside FILE, else in the system's
temporary folder) and merged. A damaged file is skipped and said, and the
export exits 1 after writing the rest.

Examples:
  llmrec export runs/bench1 --target vllm --seq 120 > testdata/vllm-busy.txt
  llmrec export runs/bench1 --target llama --endpoint /slots --seq 3
  llmrec export runs/bench1 --openmetrics -o bench1.om
`

func exportRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("export", exportUsage, stdout)
	target := fs.String("target", "", "target name (required; with --openmetrics, only this target)")
	seq := fs.Int64("seq", -1, "tick number of the scrape (required)")
	endpoint := fs.String("endpoint", capture.EndpointMetrics, `endpoint: "metrics" or an extra endpoint's path`)
	run := fs.String("run", "", "run id, when the folder holds several sessions")
	om := fs.Bool("openmetrics", false, "write every sample as OpenMetrics text for promtool (see above)")
	out := fs.String("out", "", "with --openmetrics: file to write (default stdout)")
	fs.StringVar(out, "o", "", "short for --out")
	if err := parseFlags(fs, interleave(args, map[string]bool{"openmetrics": true})); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: export: want exactly one run folder, got %d arguments", errUsage, fs.NArg())
	}
	if *om {
		var targets []string
		if *target != "" {
			targets = []string{*target}
		}
		if *seq >= 0 || *endpoint != capture.EndpointMetrics {
			return fmt.Errorf("%w: export: --openmetrics writes every scrape; --seq and --endpoint are for one body", errUsage)
		}
		return exportOpenMetrics(stdout, stderr, fs.Arg(0), *out, *run, targets)
	}
	if *out != "" {
		return fmt.Errorf("%w: export: -o is for --openmetrics; one body goes to stdout", errUsage)
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
		for _, m := range r.Manifests {
			if m.RunID == s.RunID && m.Import != nil {
				why += "; imported from " + m.Import.Source + ": its rows carry samples only, export --openmetrics writes them"
			}
		}
		return fmt.Errorf("target %q seq %d has no body (%s)", *target, *seq, why)
	}
	_, err = stdout.Write(s.Body)
	return err
}
