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

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/replay"
	"github.com/llmrec/llmrec/record/sim"
)

const simUsage = `Usage: llmrec sim [flags]

Serve simulated LLM inference engines on loopback, for tests, demos and
benchmarks. Each engine is an independent target on its own port and serves
GET /metrics in the real text format of vLLM V1 or the llama.cpp server, with
counters that follow the load phases and events of a scenario: load starts
and ends, idle spells, queueing, an engine restart that resets the counters,
a second label set joining, and hung, failing, slow or stale responses.
Offsets in the scenario run from the moment the server starts.

vLLM engines also answer /version and /v1/models, llama.cpp engines /props
and /slots; both answer /health.

Both serve real requests on POST /v1/completions and /v1/chat/completions
(OpenAI-compatible; stream=true gives one SSE chunk per token and, with
stream_options.include_usage, a usage chunk). Each request is admitted into
the engine's batch like the scenario's load and shows in its /metrics:
running, waiting, KV usage, token and request counters, TTFT, inter-token,
e2e and queue histograms. A token is one word of the prompt or the answer.
The scenario's [engine.serve] table sets the batch size, the step time and
front_threads, a queue of HTTP threads before the engine that the engine's
waiting gauge never sees (llama.cpp's); see -print-scenario. llmrec load
drives these endpoints.

--listen NAME=ADDR gives an engine a fixed loopback address instead of a
port the system picks (repeatable, or a comma-separated list; a bare ADDR
when the scenario has one engine), so a recorder's config and a load
generator can name it before the simulator starts.

Replay (--replay DIR):
  Serve a recording again, a real engine's included, as a scenario for
  tests and dashboards. Each recorded target gets its own port and answers
  its recorded paths (/metrics and extra endpoints such as /slots) with the
  recorded answers, byte-exact, with their status codes and response
  headers (as stored: a redacted value is served as its digest, which still
  changes when the engine's process changed). A request arriving at wall
  time t gets the answer whose request was sent last at or before
  t0 + from + (t - start) * speed, where t0 is the recording's first
  request and start the first request the replay got (--now: the moment it
  began); it leaves as late as it came (its recorded latency / speed). A
  recorded failure answers as it failed: its status, or a connection held
  as long as the attempt lasted and closed. Missed ticks are left out (the
  answer before holds). After the end the last answers hold, or with
  --loop the recording starts over (its counters then fall, like a
  restart). The whole recording is held in memory. The journals of a live
  or crashed recording are read as analyze reads them.
  To record the replay as the original was, scrape at the original's
  interval / speed (1s at --speed 20: --interval 50ms); --from of half an
  interval puts each poll between two recorded ones.

Output:
  One line per engine on stdout, "NAME URL", where URL is its /metrics
  address, as soon as the engines listen (with --replay, one per recorded
  target, and its paths with their number of answers on stderr).

Examples:
  llmrec sim
  llmrec sim -duration 30s -truth truth.jsonl
  llmrec sim -print-scenario > my.toml
  llmrec sim -scenario my.toml -listen-host 127.0.0.2
  llmrec sim --listen vllm-0=127.0.0.1:8000 --listen llamacpp-0=127.0.0.1:8080
  llmrec sim -generate runs/day -engines 8 -duration 24h
  llmrec sim -replay runs/bench1 -speed 20
  llmrec sim -replay runs/bench1 -listen 127.0.0.1:9100 -loop
  curl -N 127.0.0.1:PORT/v1/completions -d '{"prompt": "hi there", "max_tokens": 8, "stream": true}'
`

// simRun implements "llmrec sim".
func simRun(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("sim", simUsage, stdout)
	scenarioPath := fs.String("scenario", "", "scenario in TOML (default: the built-in 30 s scenario of a vLLM and a llama.cpp engine)")
	host := fs.String("listen-host", "127.0.0.1", "loopback address to listen on")
	truthPath := fs.String("truth", "", "write the truth log to this file: one JSON line per request with its times, status, size and the true counters the body carried")
	duration := fs.Duration("duration", 0, "stop after this long, e.g. 45s (default: until interrupted)")
	printScenario := fs.Bool("print-scenario", false, "print the built-in scenario, an annotated example of the format, and exit")
	generate := fs.String("generate", "", "write a recording of the scenario to this folder without waiting for the clock, as \"llmrec record\" at --interval would have (for benchmarks)")
	engines := fs.Int("engines", 0, "with --generate: a long synthetic scenario of this many engines (every 4th a llama.cpp) lasting --duration")
	interval := fs.Duration("interval", 2*time.Second, "with --generate: the scrape interval")
	seed := fs.Int64("seed", 1, "with --generate: seed of the synthetic scenario and latencies")
	replayDir := fs.String("replay", "", "serve the recording in this folder again: each target's recorded answers on the recording's own timeline (see above)")
	speed := fs.Float64("speed", 1, "with --replay: recording seconds per wall second (20 plays a minute in 3 s)")
	loop := fs.Bool("loop", false, "with --replay: start over after the recording's end instead of holding its last answers")
	from := fs.Duration("from", 0, "with --replay: begin this far into the recording, e.g. 90s")
	now := fs.Bool("now", false, "with --replay: start the timeline at once, not with the first request")
	var listen multiFlag
	fs.Var(&listen, "listen", "an engine's address, NAME=127.0.0.1:PORT (repeatable or comma-separated; a bare ADDR for a one-engine scenario); with --replay: loopback HOST or HOST:PORT (the targets take PORT, PORT+1, ... in name order; default 127.0.0.1, free ports)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: sim: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *duration < 0 {
		return fmt.Errorf("%w: sim: --duration %s: want a positive duration such as 30s", errUsage, *duration)
	}
	if *replayDir != "" {
		if *speed <= 0 {
			return fmt.Errorf("%w: sim: --speed %g: want a positive factor such as 20", errUsage, *speed)
		}
		if *scenarioPath != "" || *generate != "" || *truthPath != "" {
			return fmt.Errorf("%w: sim: --replay serves a recording: it takes no --scenario, --generate or --truth", errUsage)
		}
		if len(listen) > 1 || strings.Contains(listen.String(), "=") {
			return fmt.Errorf("%w: sim: --replay takes one --listen HOST or HOST:PORT (its targets take PORT, PORT+1, ...), not %q", errUsage, listen.String())
		}
		return simReplay(stdout, stderr, *replayDir, replay.Options{Listen: listen.String(), Speed: *speed, Loop: *loop, From: *from, Now: *now}, *duration)
	}
	if *speed != 1 || *loop || *from != 0 || *now {
		return fmt.Errorf("%w: sim: --speed, --loop, --from and --now go with --replay DIR", errUsage)
	}
	if *printScenario {
		_, err := io.WriteString(stdout, sim.DefaultScenarioTOML())
		return err
	}

	if *generate != "" {
		return simGenerate(stdout, stderr, *generate, *scenarioPath, *engines, *duration, *interval, *seed)
	}

	sc := sim.DefaultScenario()
	if *scenarioPath != "" {
		var err error
		if sc, err = sim.LoadScenario(*scenarioPath); err != nil {
			return err
		}
	}
	var truth io.Writer
	if *truthPath != "" {
		f, err := os.Create(*truthPath)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		defer f.Close()
		truth = f
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	addrs, err := parseListen(listen, sc)
	if err != nil {
		return err
	}
	srv, err := sim.Serve(ctx, sc, sim.Options{Host: *host, Truth: truth, NoMemoryLog: true, Listen: addrs})
	if err != nil {
		return err
	}
	for _, t := range srv.Targets() {
		if _, err := fmt.Fprintf(stdout, "%s %s\n", t.Name, t.MetricsURL); err != nil {
			srv.Close()
			return fmt.Errorf("sim: %w", err)
		}
	}
	fmt.Fprintf(stderr, "llmrec sim: %d engines, scenario %q of %v; stop with Ctrl-C\n",
		len(srv.Targets()), sc.Name, sc.Duration.Round(time.Millisecond))
	<-ctx.Done()
	err = srv.Close()
	if truth != nil {
		if cerr := truth.(*os.File).Close(); cerr != nil && err == nil {
			err = fmt.Errorf("sim: truth log: %w", cerr)
		}
	}
	return err
}

// simGenerate writes a simulated recording to dir.
func simGenerate(stdout, stderr io.Writer, dir, scenarioPath string, engines int, duration, interval time.Duration, seed int64) error {
	var sc *sim.Scenario
	switch {
	case engines > 0 && scenarioPath != "":
		return fmt.Errorf("%w: sim: -engines and -scenario exclude each other", errUsage)
	case engines > 0:
		if duration <= 0 {
			duration = time.Hour
		}
		sc = sim.LongScenario(engines, duration, seed)
	case scenarioPath != "":
		var err error
		if sc, err = sim.LoadScenario(scenarioPath); err != nil {
			return err
		}
	default:
		sc = sim.DefaultScenario()
	}
	began := time.Now()
	live, tenth := isTerminal(stderr), int64(0)
	st, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: interval, Duration: duration, Seed: seed, Info: true}, 0,
		// Called once per sealed segment (a minute of simulated time): a live
		// line on a terminal, else a line per tenth of the work.
		func(written, total int64) {
			pct := 100 * float64(written) / float64(max(total, 1))
			if live {
				fmt.Fprintf(stderr, "\rgenerated %d of %d scrapes (%.0f%%)", written, total, pct)
				return
			}
			if t := 10 * written / max(total, 1); t > tenth {
				tenth = t
				fmt.Fprintf(stderr, "generated %d of %d scrapes (%.0f%%) in %s\n", written, total, pct, time.Since(began).Round(time.Second))
			}
		})
	if live {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "run %s: %d scrapes of %d engines, %d samples, %s of bodies in %s on disk (%d segments, %.1fx) in %s\n",
		st.RunID, st.Scrapes, len(sc.Engines), st.Samples, byteCount(st.BodyBytes), byteCount(st.DiskBytes), st.Segments,
		float64(st.BodyBytes)/float64(max(st.DiskBytes, 1)), time.Since(began).Round(time.Millisecond))
	return err
}

// parseListen reads --listen: NAME=ADDR entries, repeated or
// comma-separated; a bare ADDR names the one engine of a one-engine
// scenario. Which names and hosts are allowed is sim.Serve's to say.
func parseListen(vals []string, sc *sim.Scenario) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			name, addr, ok := strings.Cut(part, "=")
			if !ok {
				// A bare address: the one engine's.
				if len(sc.Engines) != 1 {
					return nil, fmt.Errorf("%w: sim: --listen %q: want NAME=ADDR with %d engines", errUsage, part, len(sc.Engines))
				}
				name, addr = sc.Engines[0].Name, part
			}
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("%w: sim: --listen: engine %q given twice", errUsage, name)
			}
			out[name] = addr
		}
	}
	return out, nil
}
