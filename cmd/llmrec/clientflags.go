package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/client"
)

// clientFlags registers --client, --client-tz and --client-anchor on fs;
// read reads the files given after parsing (nil for none). Errors are the
// reader's own, naming the file and line.
func clientFlags(fs *flag.FlagSet) (read func(cmd string) ([]*client.Run, error)) {
	var files multiFlag
	fs.Var(&files, "client", "a load generator's own record of the run: AIPerf, GuideLLM, generic CSV/JSONL, summary-only formats (repeatable)")
	tz := fs.String("client-tz", "", "the zone of a client file's local times written without one, e.g. Europe/Paris or UTC")
	anchor := fs.String("client-anchor", "", "MONO=EPOCH: a monotonic clock reading (seconds) and the Unix time (seconds or RFC 3339) it was taken at")
	return func(cmd string) ([]*client.Run, error) {
		if len(files) == 0 {
			if *tz != "" || *anchor != "" {
				return nil, fmt.Errorf("%w: %s: --client-tz and --client-anchor need a --client FILE", errUsage, cmd)
			}
			return nil, nil
		}
		opt, err := clientOptions(cmd, *tz, *anchor, "--client-anchor")
		if err != nil {
			return nil, err
		}
		return readClients(files, opt)
	}
}

// clientOptions are the read options of --client-tz and an anchor flag.
func clientOptions(cmd, tz, anchor, anchorFlag string) (client.Options, error) {
	var opt client.Options
	if tz != "" {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return opt, fmt.Errorf("%w: %s: --client-tz: %v", errUsage, cmd, err)
		}
		opt.TZ = loc
	}
	if anchor != "" {
		a, err := parseAnchor(anchor)
		if err != nil {
			return opt, fmt.Errorf("%w: %s: %s: %v", errUsage, cmd, anchorFlag, err)
		}
		opt.Anchor = a
	}
	return opt, nil
}

// readClients reads client files; an error is the reader's, naming the
// file and line.
func readClients(files []string, opt client.Options) ([]*client.Run, error) {
	var runs []*client.Run
	for _, f := range files {
		run, err := client.ReadFile(f, opt)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// parseAnchor reads MONO=EPOCH: a monotonic reading in seconds and the
// Unix time it was taken at, in seconds or RFC 3339.
func parseAnchor(s string) (*client.Anchor, error) {
	m, e, ok := strings.Cut(s, "=")
	if !ok {
		return nil, fmt.Errorf("%q: want MONO=EPOCH, e.g. 12345.678=2026-01-01T00:00:00Z", s)
	}
	mono, err := strconv.ParseFloat(strings.TrimSpace(m), 64)
	if err != nil {
		return nil, fmt.Errorf("%q: the monotonic reading %q is not a number of seconds", s, m)
	}
	e = strings.TrimSpace(e)
	epoch, err := strconv.ParseFloat(e, 64)
	if err != nil {
		t, terr := time.Parse(time.RFC3339Nano, e)
		if terr != nil {
			return nil, fmt.Errorf("%q: the epoch %q is neither Unix seconds nor RFC 3339 with a zone", s, e)
		}
		epoch = float64(t.UnixNano()) / 1e9
	}
	if epoch < 1e9 || epoch >= 1e10 {
		return nil, fmt.Errorf("%q: the epoch %g is not a Unix time in seconds after 2001", s, epoch)
	}
	return &client.Anchor{Mono: mono, Epoch: epoch}, nil
}
