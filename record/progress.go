package record

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// progress prints one line per target: on a terminal redrawn in place every
// second, otherwise appended every ten seconds as log lines.
func (r *recorder) progress(ctx context.Context, opt Options, done chan struct{}) {
	defer close(done)
	every := opt.ProgressEvery
	if every <= 0 {
		every = 10 * time.Second
		if opt.Live {
			every = time.Second
		}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	drawn := 0
	for {
		select {
		case <-ctx.Done():
			if opt.Live {
				r.draw(opt, &drawn)
			}
			return
		case <-tick.C:
			r.draw(opt, &drawn)
		}
	}
}

func (r *recorder) draw(opt Options, drawn *int) {
	r.mu.Lock()
	stats := append([]TargetStats(nil), r.stats...)
	r.mu.Unlock()
	written := r.written.Load()
	elapsed := time.Since(r.clock.Start()).Round(time.Second)
	var b strings.Builder
	if opt.Live && *drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", *drawn)
	}
	for _, s := range stats {
		if opt.Live {
			b.WriteString("\x1b[2K")
		} else {
			fmt.Fprintf(&b, "%s ", time.Now().UTC().Format(time.RFC3339))
		}
		b.WriteString(StatusLine(s))
		b.WriteString("\n")
	}
	if opt.Live {
		b.WriteString("\x1b[2K")
	} else {
		fmt.Fprintf(&b, "%s ", time.Now().UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "elapsed %s, %s written to closed segments\n", elapsed, humanBytes(written))
	*drawn = len(stats) + 1
	fmt.Fprint(opt.Progress, b.String())
}

// StatusLine is one target's progress line. A target whose pages are
// stored unparsed (over a parse limit) answered: it is "up, unparsed",
// with the reason, not down.
func StatusLine(s TargetStats) string {
	state := "down"
	switch {
	case s.Left:
		state = "left" // discovery no longer finds it
	case s.Up && s.LastUnparsed:
		state = "up, unparsed"
	case s.Up:
		state = "up"
	}
	unparsed := ""
	if s.Unparsed > 0 {
		unparsed = fmt.Sprintf("  unparsed %d", s.Unparsed)
	}
	line := fmt.Sprintf("%-16s %-4s ok %d  failed %d%s  missed %d  last %s  %s received",
		s.Name, state, s.OK, s.Failed, unparsed, s.Missed, s.LastLatency.Round(time.Millisecond), humanBytes(s.BodyBytes))
	if (!s.Up || s.LastUnparsed) && s.LastError != "" {
		msg := s.LastError
		if len(msg) > 80 {
			msg = msg[:77] + "..."
		}
		line += "  (" + msg + ")"
	}
	return line
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
