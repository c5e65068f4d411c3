package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

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

Flags:
  -scenario FILE      scenario in TOML (default: the built-in 30 s scenario
                      of a vLLM and a llama.cpp engine)
  -listen-host HOST   loopback address to listen on (default 127.0.0.1)
  -truth FILE         write the truth log to FILE: one JSON line per request
                      with its times, status, size and the true counters
                      the body carried
  -duration D         stop after D, e.g. 45s (default: until interrupted)
  -print-scenario     print the built-in scenario, an annotated example of
                      the format, and exit

Output:
  One line per engine on stdout, "NAME URL", where URL is its /metrics
  address, as soon as the engines listen.

Examples:
  llmrec sim
  llmrec sim -duration 30s -truth truth.jsonl
  llmrec sim -print-scenario > my.toml
  llmrec sim -scenario my.toml -listen-host 127.0.0.2
`

const simShortUsage = "usage: llmrec sim [-scenario FILE] [-listen-host HOST] [-truth FILE] [-duration D] (-h for help)"

// simRun implements "llmrec sim".
func simRun(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("llmrec sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	scenarioPath := fs.String("scenario", "", "scenario TOML file")
	host := fs.String("listen-host", "127.0.0.1", "loopback address to listen on")
	truthPath := fs.String("truth", "", "truth log file (JSON lines)")
	duration := fs.Duration("duration", 0, "stop after this long")
	printScenario := fs.Bool("print-scenario", false, "print the built-in scenario and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, simUsage)
			return nil
		}
		fmt.Fprintln(stderr, simShortUsage)
		return fmt.Errorf("sim: %w", err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, simShortUsage)
		return fmt.Errorf("sim: unexpected argument %q", fs.Arg(0))
	}
	if *duration < 0 {
		return fmt.Errorf("sim: -duration %v is negative", *duration)
	}
	if *printScenario {
		_, err := io.WriteString(stdout, sim.DefaultScenarioTOML())
		return err
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
	srv, err := sim.Serve(ctx, sc, sim.Options{Host: *host, Truth: truth, NoMemoryLog: true})
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
