package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/llmrec/llmrec/record/replay"
)

// simReplay implements "llmrec sim --replay DIR": it serves the recording
// in dir until interrupted or duration has passed.
func simReplay(stdout, stderr io.Writer, dir string, opts replay.Options, duration time.Duration) error {
	rec, err := replay.Load(dir)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	srv, err := replay.Serve(ctx, rec, opts)
	if err != nil {
		return err
	}
	for _, t := range srv.Targets() {
		u := t.MetricsURL
		if u == "" {
			u = t.URL + t.Paths[0]
		}
		if _, err := fmt.Fprintf(stdout, "%s %s\n", t.Name, u); err != nil {
			srv.Close()
			return fmt.Errorf("sim: %w", err)
		}
	}
	span := time.Duration(rec.End-rec.Start) - opts.From
	speed := max(opts.Speed, 0)
	if speed == 0 {
		speed = 1
	}
	fmt.Fprintf(stderr, "llmrec sim: replaying %s: %d target(s), %d answers over %s of recording (%s at %gx)",
		dir, len(rec.Targets), rec.Rows, span.Round(time.Millisecond), (time.Duration(float64(span) / speed)).Round(time.Millisecond), speed)
	if rec.Journals > 0 {
		fmt.Fprintf(stderr, ", %d journal(s) read in memory", rec.Journals)
	}
	if opts.Loop {
		fmt.Fprint(stderr, ", looping")
	} else {
		fmt.Fprint(stderr, ", then the last answers hold")
	}
	if opts.Now {
		fmt.Fprintln(stderr, "; stop with Ctrl-C")
	} else {
		fmt.Fprintln(stderr, "; the timeline starts with the first request; stop with Ctrl-C")
	}
	for _, t := range srv.Targets() {
		var paths []string
		for i, p := range t.Paths {
			paths = append(paths, fmt.Sprintf("%s (%d answers)", p, t.Answers[i]))
		}
		fmt.Fprintf(stderr, "  %s at %s: %s\n", t.Name, t.URL, strings.Join(paths, ", "))
	}
	if !opts.Loop {
		select {
		case <-ctx.Done():
		case <-srv.Started():
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(srv.Ends())):
				fmt.Fprintln(stderr, "llmrec sim: the replay reached the recording's end; its last answers hold")
			}
		}
	}
	<-ctx.Done()
	return srv.Close()
}
