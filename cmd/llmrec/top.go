package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/analyze/rate"
	livetext "github.com/llmrec/llmrec/render/live"
)

const topUsage = `Usage: llmrec top DIR [--once] [--interval D] [--speed X] [--follow] [--listen 127.0.0.1:PORT] [--window D] [--span D] [--json]

Watches a recording while it records (or replays a finished one): per
target its state (busy, idle, down, stalled), decode and prompt tokens/s,
TTFT and ITL p50, running and waiting requests, KV usage, and its scrapes'
health (time to first byte p99, missed ticks, failures over the window);
the fleet's totals; the named phase under way (llmrec mark); the incidents
found so far (restart, engine_stall, gap, refused windows, ...) with their
times; a sparkline of decode tokens/s per target.

Every number is what llmrec analyze publishes for the same polls: top reads
the folder through the same engine readers, gated estimator and findings
(docs/top.md). It only reads: it never writes or creates anything in DIR
(no lock file; a live journal is told from a crashed one by trying its
flock for an instant, as inspect and analyze do), so it can watch from any
terminal while llmrec record writes.

KV usage from 80 % reads "warn", from 95 % "saturated"; "saturating" marks
a waiting queue that rose over the window (a positive least-squares slope,
by one request or more).

Without --once, a frame every --interval (250ms to 1s): on a terminal it
redraws in place, with colour, and q or Ctrl-C quits at once; to a pipe
the frames follow each other without colour. A finished recording is
replayed from its start at --speed recorded seconds per second, and its
last frame stays (to a pipe, top then exits); --follow never replays and
waits for a recording not started yet. --once prints one frame and exits
(for scripts and tests).

--listen 127.0.0.1:PORT serves the same view as a self-updating page
(everything inline, nothing fetched from elsewhere) on a loopback address
only. As the recorder's mark endpoint, it answers only a Host that is its
own address and port, no other origin's page, and a frame only to a
request with the header X-Llmrec-Top: 1 (the page sends it).

llmrec record on a terminal shows this view (a "top --follow" child at low
priority); --quiet, --no-top or a pipe keep its progress lines.

Examples:
  llmrec top runs/bench1
  llmrec top runs/bench1 --interval 250ms
  llmrec top runs/bench1 --once
  llmrec top runs/bench1 --listen 127.0.0.1:9465
  llmrec top runs/bench1 --once --json | jq '.targets[].state'
`

func topRun(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("top", topUsage, stdout)
	once := fs.Bool("once", false, "print one frame and exit")
	asJSON := fs.Bool("json", false, "with --once: print the frame as JSON")
	interval := fs.Duration("interval", time.Second, "refresh interval, 250ms to 1s")
	window := fs.Duration("window", 30*time.Second, "the trailing window of scrape health and the waiting slope")
	follow := fs.Bool("follow", false, "watch the folder as a recording in progress even before its first file, never replaying it (llmrec record's own view)")
	listen := fs.String("listen", "", "serve the view as a self-updating page on this loopback HOST:PORT instead of the terminal")
	speed := fs.Float64("speed", 10, "replaying a finished recording: recorded seconds per second")
	span := fs.Duration("span", 0, "the estimator's span, as llmrec analyze --span (default: analyze's)")
	if err := parseFlags(fs, interleave(args, map[string]bool{"once": true, "json": true, "follow": true})); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: top: want exactly one run folder, got %d arguments", errUsage, fs.NArg())
	}
	if *interval < 250*time.Millisecond || *interval > time.Second {
		return fmt.Errorf("%w: top: --interval %v is outside 250ms..1s", errUsage, *interval)
	}
	if *speed <= 0 {
		return fmt.Errorf("%w: top: --speed must be positive", errUsage)
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
	if *listen != "" {
		return topListen(ctx, stderr, *listen, func(w io.Writer) error {
			return topLoop(ctx, w, opts, *interval, *speed, *follow)
		}, fs.Arg(0), *interval)
	}
	return topLoop(ctx, stdout, opts, *interval, *speed, *follow)
}

// topLoop draws a frame every interval until ctx ends or q is pressed:
// a recording in progress as it grows, a finished one replayed from its
// start at speed × real time (then its last frame held). On a terminal
// each frame redraws the last; to a pipe frames follow each other, and a
// replay ends with its last frame.
func topLoop(ctx context.Context, stdout io.Writer, opts live.Options, interval time.Duration, speed float64, follow bool) error {
	term := isTerminal(stdout)
	quit := make(chan struct{})
	if term {
		if restore, ok := rawInput(os.Stdin); ok {
			defer restore()
			go readQuit(os.Stdin, quit)
		}
		io.WriteString(stdout, "\x1b[?25l\x1b[2J") // hide the cursor, clear the screen
		defer io.WriteString(stdout, "\x1b[?25h\n")
	}
	// A frame is read aside, so that q and Ctrl-C quit at once even while
	// a long recording is being read. One reader follows the recording
	// (analyze.Session): each frame reads only what is new.
	var rd *live.Reader
	read := func(o live.Options) (*live.Frame, error) {
		type answer struct {
			f   *live.Frame
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			if rd == nil {
				var err error
				if rd, err = live.NewReader(opts); err != nil {
					ch <- answer{nil, err}
					return
				}
			}
			f, err := rd.Frame(o.Until)
			ch <- answer{f, err}
		}()
		select {
		case a := <-ch:
			return a.f, a.err
		case <-ctx.Done():
			return nil, nil
		case <-quit:
			return nil, nil
		}
	}
	// A frame replays the folder from its start, so its cost grows with
	// the recording: the next is read no sooner than its cost allows
	// within topBudget of a core (cost / topBudget after the last began).
	// The cost is the CPU time the process spent meanwhile (all of it the
	// read's, but for a redraw), not the wall time: at a low priority on a
	// busy machine a read waits long for little CPU.
	var next time.Time
	var cost time.Duration
	timed := func(o live.Options) (*live.Frame, error) {
		began, cpu0 := time.Now(), cpuTime()
		f, err := read(o)
		cost = cpuTime() - cpu0
		next = began.Add(spacing(cost))
		return f, err
	}
	// Following, a recording not started yet (or a read that failed) is
	// waited for, and never replayed.
	var first *live.Frame
	for first == nil {
		f, err := timed(opts)
		switch {
		case err == nil && f == nil:
			return nil
		case err == nil:
			first = f
		case !follow:
			return err
		default:
			if err := drawWaiting(stdout, term, err); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-quit:
				return nil
			case <-time.After(interval):
			}
		}
	}
	replay := !first.Recording && !follow
	if replay {
		next = time.Time{} // the replay's first frame is its start, at once
		rd.Close()         // no read is running: the first frame has returned
		rd = nil           // a reader goes forward only: the replay's starts over
	}
	began := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if now := time.Now(); !now.Before(next) {
			o := opts
			at := 0.0
			if replay {
				// The replay's instant runs at speed × real time.
				at = min(first.T, first.Start+speed*now.Sub(began).Seconds())
				o.Until = int64(at * 1e9)
			}
			f, err := timed(o)
			switch {
			case err != nil && follow:
				err = drawWaiting(stdout, term, err)
			case err != nil || f == nil:
				return err
			default:
				err = drawFrame(stdout, f, term, replay, interval, speed, cost)
			}
			if err != nil {
				return err
			}
			// A replay to a pipe ends with the recording; on a terminal its
			// last frame stays until q.
			if replay && at >= first.T && !term {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-quit:
			return nil
		case <-tick.C:
		}
	}
}

// drawWaiting says what a followed recording is waited for.
func drawWaiting(w io.Writer, term bool, err error) error {
	line := "waiting for the recording: " + err.Error() + "\n"
	if term {
		line = "\x1b[H" + line + "\x1b[J"
	}
	_, werr := io.WriteString(w, line)
	return werr
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// topBudget is the share of a core top's reading may take: a frame that
// took longer than topBudget × interval to read delays the next.
const topBudget = 0.05

// topMaxWait bounds that delay. Frames waited for longer read more new
// records each: where parsing what the recording adds in a second takes
// more than topBudget of a second (100 vLLM pages a second), the delay
// would grow without end; past it top uses more than its budget (about
// the recorder's own parsing share) and says so.
const topMaxWait = 10 * time.Second

// spacing is how long after a frame that cost cost the next may begin.
func spacing(cost time.Duration) time.Duration {
	return min(time.Duration(float64(cost)/topBudget), topMaxWait)
}

// readQuit closes quit when q (or Q, or Ctrl-D) is typed.
func readQuit(in *os.File, quit chan<- struct{}) {
	b := make([]byte, 1)
	for {
		n, err := in.Read(b)
		if err != nil || n == 1 && (b[0] == 'q' || b[0] == 'Q' || b[0] == 4) {
			close(quit)
			return
		}
	}
}

// drawFrame writes a frame: over the last on a terminal (cursor home,
// each line cleared to its end, the rest of the screen cleared), after
// it to a pipe.
func drawFrame(w io.Writer, f *live.Frame, term, replay bool, interval time.Duration, speed float64, cost time.Duration) error {
	var b bytes.Buffer
	if err := livetext.Text(&b, f, livetext.TextOptions{Color: term}); err != nil {
		return err
	}
	mode := "live"
	if replay {
		mode = fmt.Sprintf("replay ×%g", speed)
	}
	every := interval
	if d := spacing(cost); d > every {
		every = d.Round(100 * time.Millisecond)
	}
	over := ""
	if float64(cost) > topBudget*float64(every) {
		over = fmt.Sprintf(", over it: %.0f %%", 100*float64(cost)/float64(every))
	}
	quits := ""
	if term {
		quits = " · q quits"
	}
	fmt.Fprintf(&b, "\n%s · frame read with %v of CPU · refresh every %v (budget %g %% of a core%s)%s\n", mode,
		cost.Round(time.Millisecond), every, topBudget*100, over, quits)
	if !term {
		b.WriteString("\n")
		_, err := w.Write(b.Bytes())
		return err
	}
	out := "\x1b[H" + strings.ReplaceAll(b.String(), "\n", "\x1b[K\n") + "\x1b[J"
	_, err := io.WriteString(w, out)
	return err
}
