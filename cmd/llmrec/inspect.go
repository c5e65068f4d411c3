package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/redact"
)

const inspectUsage = `Usage: llmrec inspect DIR [--json]

Summarises a recording: its sessions, closed segments (rows, bytes), live
journals, time range, and per target and endpoint the rows by outcome (ok,
parse_error, http_error, error, missed) with the distinct error messages.
It never changes the folder: a crashed session's journal is read in memory
(llmrec repair seals it), and files llmrec did not write are listed, not
read.

Each segment is checked against its seal (size, CRC-32C and rows, recorded
when it was written: docs/capture-format.md); one recorded before seals
existed is listed as unverified. A damaged segment is skipped, not counted,
and listed under problems; the exit status is then 1.

Examples:
  llmrec inspect runs/bench1
  llmrec inspect runs/bench1 --json | jq '.targets[].endpoints[].outcomes'
`

func inspectRun(_ context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("inspect", inspectUsage, stdout)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, interleave(args, map[string]bool{"json": true})); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: inspect: want exactly one run folder, got %d arguments", errUsage, fs.NArg())
	}
	r, err := capture.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	rep := capture.Inspect(r)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printReport(stdout, rep)
		printImports(stdout, r)
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%d problem(s): file(s) skipped, not counted (listed under problems)", len(rep.Problems))
	}
	return nil
}

func printReport(w io.Writer, rep capture.Report) {
	fmt.Fprintf(w, "run folder %s\n", rep.Dir)
	fmt.Fprintf(w, "sessions   %s\n", strings.Join(rep.Runs, ", "))
	var bytes int64
	for _, s := range rep.Segments {
		bytes += s.Bytes
	}
	fmt.Fprintf(w, "segments   %d closed (%s), %d live journal(s)", len(rep.Segments), byteCount(bytes), len(rep.Live))
	if len(rep.Crashed) > 0 {
		fmt.Fprintf(w, ", %d crashed session journal(s) read in memory", len(rep.Crashed))
	}
	fmt.Fprintln(w)
	var unverified []string
	for _, s := range rep.Segments {
		if !s.Verified {
			unverified = append(unverified, s.File)
		}
	}
	if len(unverified) > 0 {
		// Recorded before the seal ledger: read as they are.
		fmt.Fprintf(w, "unverified %d segment(s) without a seal: %s\n", len(unverified), strings.Join(unverified, ", "))
	}
	for _, rc := range rep.Recovered {
		fmt.Fprintf(w, "recovered  %s: %s\n", rc.Name(), rc)
	}
	for _, f := range rep.Foreign {
		fmt.Fprintf(w, "foreign    %s (not llmrec's: not read, left alone)\n", f)
	}
	if rep.Rows > 0 {
		first, last := time.Unix(0, rep.FirstNs).UTC(), time.Unix(0, rep.LastNs).UTC()
		fmt.Fprintf(w, "time       %s .. %s (%s)\n", first.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano), last.Sub(first).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "rows       %d\n", rep.Rows)
	outcomes := []string{capture.OutcomeOK, capture.OutcomeParseError, capture.OutcomeHTTPError, capture.OutcomeError, capture.OutcomeMissed}
	for _, t := range rep.Targets {
		for _, e := range t.Endpoints {
			fmt.Fprintf(w, "\n%s %s: %d rows, seq %d..%d, %s of bodies\n", t.Name, e.Endpoint, e.Rows, e.FirstSeq, e.LastSeq, byteCount(e.BodyBytes))
			var parts []string
			for _, o := range outcomes {
				if n := e.Outcomes[o]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", o, n))
				}
			}
			for o, n := range e.Outcomes {
				if !slices.Contains(outcomes, o) {
					parts = append(parts, fmt.Sprintf("%s %d", o, n))
				}
			}
			fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
			for i, ec := range e.Errors {
				if i == 5 {
					fmt.Fprintf(w, "  ... %d more distinct errors\n", len(e.Errors)-5)
					break
				}
				fmt.Fprintf(w, "  error x%d: %s\n", ec.Count, ec.Message)
			}
			for i, ec := range e.ParseFails {
				if i == 5 {
					fmt.Fprintf(w, "  ... %d more distinct parse errors\n", len(e.ParseFails)-5)
					break
				}
				fmt.Fprintf(w, "  parse error x%d: %s\n", ec.Count, ec.Message)
			}
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "\nPROBLEM: %s\n", p)
	}
}

// interleave moves flags after positional arguments to the front, so
// "inspect DIR --json" works as well as "inspect --json DIR". bools names
// the flags that take no value.
func interleave(args []string, bools map[string]bool) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if n := flagAt(args, i, bools); n > 0 {
			flags = append(flags, args[i:i+n]...)
			i += n - 1
			continue
		}
		pos = append(pos, args[i])
	}
	return append(flags, pos...)
}

// flagAt is how many arguments the flag at args[i] takes with its value
// (2 for "--out DIR", 1 for "--json" or "--out=DIR"); 0 when args[i] is no
// flag. bools names the flags that take no value.
func flagAt(args []string, i int, bools map[string]bool) int {
	a := args[i]
	if !strings.HasPrefix(a, "-") || len(a) == 1 {
		return 0
	}
	name := strings.TrimLeft(a, "-")
	if !strings.Contains(name, "=") && !bools[name] && i+1 < len(args) {
		return 2
	}
	return 1
}

// printImports says which sessions were imported from a metrics store:
// their rows have no body.
func printImports(w io.Writer, r *capture.Run) {
	for _, m := range r.Manifests {
		if im := m.Import; im != nil {
			fmt.Fprintf(w, "imported   %s from %s at %s (%s, types from %s): samples only, no bodies\n",
				m.RunID, im.Source, redact.URL(im.URL), strings.Join(im.Match, " "), im.Types)
			if im.Partial != "" {
				fmt.Fprintf(w, "PARTIAL    %s: %s\n", m.RunID, redact.Text(im.Partial))
			}
		}
	}
}
