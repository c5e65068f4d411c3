package main

import (
	"context"
	"fmt"
	"io"

	"github.com/llmrec/llmrec/record/capture"
)

const repairUsage = `Usage: llmrec repair DIR

Rewrites a run folder after a crash, as the next "llmrec record" into it
would: each crashed session's journal becomes a closed segment (damaged
records skipped, a torn tail dropped, duplicates dropped), segments a merged
file already holds are removed, and so are leftover temporary files. Then the
segments a stop or a crash left unmerged (a recorder that stops merges
nothing, so that it stops at once) are merged, compact_every at a time as the
session's manifest says.

It touches only files named for an llmrec run id (RUN-NNNNNN.journal,
RUN-NNNNNN.parquet, RUN-NNNNNN.parquet.tmp, RUN.manifest.json.tmp), never
those of a recording still running; every other file is listed and left
alone. A journal it cannot read is reported and left as it is (exit 1);
so is a segment no reader can read (damaged, or differing from its seal).
A segment an older llmrec wrote with a headers page over the readers' cap
(a target that sent megabytes of response headers) is rewritten with every
row and every column but the headers: the headers of each answered row are
replaced by a note, "llmrec: headers lost", that says why.

The reading commands (inspect, export, analyze, render) never change a
folder: they recover a crashed journal in memory, so a folder on read-only
media reads as well. Repair is for making the folder itself whole, for
instance before copying it or reading it with DuckDB.

Examples:
  llmrec repair runs/bench1
  llmrec repair runs/bench1 && duckdb -c "select count(*) from 'runs/bench1/*.parquet'"
`

func repairRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("repair", repairUsage, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: repair: want exactly one run folder, got %d arguments", errUsage, fs.NArg())
	}
	dir := fs.Arg(0)
	// Open first: it says whether this is a recording at all, and what is
	// not llmrec's, before anything changes.
	r, err := capture.Open(dir)
	if err != nil {
		return err
	}
	recs, err := capture.Recover(dir)
	for _, rc := range recs {
		fmt.Fprintf(stdout, "repaired   %s: %s\n", rc.Name(), rc)
	}
	if err != nil {
		return err
	}
	// A segment an older writer made with a headers page over the
	// readers' cap is rewritten without its headers; then merged, if it
	// was left single for it.
	salvaged, err := capture.SalvageHeaders(dir)
	for _, rc := range salvaged {
		fmt.Fprintf(stdout, "repaired   %s: %s\n", rc.Name(), rc)
	}
	if err != nil {
		return err
	}
	if len(salvaged) > 0 {
		more, err := capture.Recover(dir)
		for _, rc := range more {
			fmt.Fprintf(stdout, "repaired   %s: %s\n", rc.Name(), rc)
		}
		if err != nil {
			return err
		}
		recs = append(recs, salvaged...)
		recs = append(recs, more...)
	}
	// A file no reader can read is named, never "nothing to repair":
	// repair does not rewrite a damaged segment (its readable rows are
	// not recovered yet) but for one whose headers page alone is over the
	// cap (above); it is left as it is.
	var damaged []string
	if after, err := capture.Open(dir); err == nil {
		damaged = capture.Inspect(after).Problems
	}
	for _, p := range damaged {
		fmt.Fprintf(stdout, "damaged    %s (left as it is)\n", p)
	}
	if len(recs) == 0 && len(damaged) == 0 {
		fmt.Fprintf(stdout, "nothing to repair in %s\n", dir)
	}
	for _, f := range r.Foreign {
		fmt.Fprintf(stdout, "foreign    %s (not llmrec's: left alone)\n", f)
	}
	var unread int
	for _, rc := range recs {
		if rc.Error != "" {
			unread++
		}
	}
	if unread > 0 {
		return fmt.Errorf("%d journal(s) could not be read (listed above); left as they were", unread)
	}
	if len(damaged) > 0 {
		return fmt.Errorf("%d file(s) could not be read (listed above); left as they were", len(damaged))
	}
	return nil
}
