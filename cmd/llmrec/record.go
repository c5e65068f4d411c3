package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
)

const recordUsage = `Usage: llmrec record --out DIR [--config FILE] [--target NAME=URL]... [flags]

Scrapes every target's Prometheus /metrics on a fixed cadence and writes each
attempt to Parquet segments in DIR: the body byte-exact, its send, first-byte
and end times, and its parsed samples. Runs until Ctrl-C (SIGINT), SIGTERM or
--duration, then closes the open segment and exits 0: scrapes still running
then get half a second, are cancelled (each written as a row saying so) and
the segment is sealed. A second Ctrl-C exits at once, non-zero, leaving the
open segment's journal synced for the next record or read to recover.

A slow or hung target never delays another; a tick that finds the previous
scrape of that target still running is written as a missed tick, never fired
late. The targets' ticks are spread over the interval. One recorder takes at
most 1000 scrapes per second over all targets; a config asking for more is
refused. A SIGKILL loses no completed scrape: the open segment's journal is
recovered by the next record into DIR and by every read of it.

On a terminal the progress is llmrec top's live view of DIR (states, rates,
KV, incidents: see llmrec top -h), drawn by a "top --follow" child at the
lowest priority; --quiet, --no-top or a pipe keep the progress lines.

Redirects are not followed: a 3xx answer is a row (outcome http_error) with
its status and location. --follow-redirects (follow_redirects = true, in the
file or per target) follows them only to the same scheme, host and port, so
credentials never reach another origin; no Referer is sent.

Nothing secret is written or printed: URLs lose their user information and
every query value (keys stay), in every column, error text and line of
output; header values (those sent, and the response's, stored in the headers
column) are kept only for Accept, Accept-Charset, Accept-Encoding,
Accept-Language, Cache-Control, Connection, Content-Encoding, Content-Length,
Content-Type, Date, Host, Pragma, Server, Transfer-Encoding, User-Agent and
Vary, and are otherwise written as a digest ("<redacted sha256:...>": equal
values give equal digests).

Examples:
  # two engines at the default 2 s cadence for ten minutes
  llmrec record --out runs/bench1 --duration 10m \
    --target vllm=http://127.0.0.1:8000/metrics \
    --target llama=http://127.0.0.1:8080/metrics

  # from a config file, with a 500 ms cadence overriding the file
  llmrec record --out runs/bench2 --config llmrec.toml --interval 500ms

Config file (TOML):
  interval = "2s"            # default cadence
  timeout = "2s"             # default per-scrape timeout (default: the interval)
  rotate = "60s"             # segment length
  compact_every = 10         # merge this many closed segments into one file (1: never)
  max_body_bytes = 67108864  # bodies above this (after gzip) are refused (at most 104857600)
  follow_redirects = false   # follow same-origin redirects (also per target)
  file_sd = ["targets/*.json"]     # Prometheus file_sd target files (see Discovery below)
  resolve_dns = false        # one target per address of a host name (also per target; see DNS below)
  max_series = 200000        # pages with more sample lines are stored unparsed
  max_label_value_bytes = 16384   # ... or with a longer label value
  max_label_bytes = 33554432 # ... or with more label bytes in all
  [[target]]
  name = "vllm"
  url = "http://127.0.0.1:8000/metrics"
  engine = "vllm"            # hint for analysis
  bearer_token_env = "VLLM_API_KEY"   # the variable's name; the token is never written
  headers = { "X-Bench" = "run-7" }
  process_start_header = ""  # a response header carrying the process start (a proxy's;
                             # llama.cpp's Process-Start-Time-Unix by default);
                             # its change between answers is a restart to analyze
  [target.tls]               # for an https:// url; [tls] at the top sets every target's default
  ca_file = "ca.pem"         # the authority that signs the engine's certificate (default: the system's)
  cert_file = "client.pem"   # a client certificate and its key, for mTLS
  key_file = "client-key.pem"
  server_name = "vllm.internal"    # the name to verify when the URL's host is not on the certificate
  insecure_skip_verify = false     # check nothing (warned on stderr and in the manifest)
  [[target.endpoint]]        # extra captures on the same cadence, or once at start
  path = "/slots"
  once = false

TLS: an https:// target is verified by the system's authorities unless the
config or --tls-ca-file names one; --tls-* flags override the file's [tls]
and every target's own. A failed handshake is a row whose error says why in
plain words (unknown authority, expired, wrong name, a client certificate
required or refused), and the first is said on stderr with the target's name.
The manifest names the files by base name (with the SHA-256 of a
certificate), never by path; the key is never copied anywhere.

Discovery: file_sd = ["targets/*.json"] (or --file-sd FILE) reads Prometheus'
file_sd target files: [{"targets": ["HOST:PORT", ...], "labels": {...}}].
Each address is a target at __scheme__://HOST:PORT__metrics_path__ (default
http and /metrics), named by its llmrec_name label or its address, with
llmrec_engine as its engine hint; other labels go into the manifest. Files
ending .yml or .yaml are read as YAML. The files are checked every interval
while recording: targets added join at their next tick, targets removed
leave (their ticks stop; the scrape in flight is kept), and the manifest
records each target's joins and leaves. A file caught mid-write keeps its
last good targets and is warned of with its line.

DNS: resolve_dns = true (in the file or a [[target]]; or --resolve-dns)
scrapes a target whose URL names a host once per address the name resolves
to, as NAME@ADDRESS, asking for the name (Host header, TLS name), and
resolves it again every interval: addresses that come and go join and
leave (a Kubernetes headless Service's name lists its ready pods).

Phases: --mark-listen ADDR serves POST /mark?name=NAME[&end=1] (loopback only
unless --mark-public); each mark is appended to DIR/marks.jsonl, as
llmrec mark DIR NAME [--end] does. A mark must carry the header
X-Llmrec-Mark: 1 and a Host that is an IP address or localhost (llmrec load
--mark sends both); a request from a web page (Origin set) is refused, so a
page cannot forge one. At most 1000 marks a run.

Afterwards: llmrec inspect DIR; query with DuckDB: SELECT * FROM read_parquet('DIR/*.parquet').
`

func recordRun(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlags("record", recordUsage, stdout)
	out := fs.String("out", "", "run folder to write (created if missing; one that holds a recording needs --append)")
	fs.StringVar(out, "o", "", "short for --out")
	appendTo := fs.Bool("append", false, "record another session into a folder that already holds a recording")
	configPath := fs.String("config", "", "TOML config file")
	var targets multiFlag
	fs.Var(&targets, "target", "NAME=URL of a /metrics endpoint (repeatable; adds to the config's targets)")
	var fileSD multiFlag
	fs.Var(&fileSD, "file-sd", "Prometheus file_sd target file (JSON or YAML; a glob; repeatable; adds to the config's file_sd); re-read when it changes")
	resolveDNS := fs.Bool("resolve-dns", false, "scrape each address a target's host name resolves to, re-resolved every interval (default: the config's resolve_dns)")
	interval := fs.Duration("interval", 0, "scrape cadence of every target (default 2s, or the config's)")
	timeout := fs.Duration("timeout", 0, "per-scrape timeout (default: the interval)")
	duration := fs.Duration("duration", 0, "stop after this long (default: until SIGINT/SIGTERM)")
	rotate := fs.Duration("rotate", 0, "close a Parquet segment this often (default 60s)")
	follow := fs.Bool("follow-redirects", false, "follow redirects to the same scheme, host and port (default: a redirect is a row)")
	tlsFlags := addTLSFlags(fs)
	maxSeries := fs.Int("max-series", 0, "store pages with more sample lines unparsed (default 200000, or the config's)")
	maxLabelValue := fs.Int("max-label-value-bytes", 0, "store pages with a longer label value unparsed (default 16384, or the config's)")
	maxLabels := fs.Int64("max-label-bytes", 0, "store pages with more label bytes in all unparsed (default 33554432, or the config's)")
	quiet := fs.Bool("quiet", false, "no progress output")
	noView := fs.Bool("no-top", false, "on a terminal, progress lines instead of llmrec top's view")
	markListen := fs.String("mark-listen", "", "serve the mark endpoint (POST /mark?name=NAME[&end=1]) on this address, e.g. 127.0.0.1:9464")
	markPublic := fs.Bool("mark-public", false, "let --mark-listen take an address that is not loopback (the endpoint has no authentication)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: record: unexpected argument %q (targets are given with --target NAME=URL)", errUsage, fs.Arg(0))
	}
	if *out == "" {
		return fmt.Errorf("%w: record: --out DIR is required", errUsage)
	}
	// A duration that is not positive is refused, never read as a default:
	// --duration -3s recorded until interrupted, --interval 0s became 2 s.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", *duration}, {"interval", *interval}, {"timeout", *timeout}} {
		if set[d.name] && d.v <= 0 {
			return fmt.Errorf("%w: record: --%s %s: want a positive duration such as 2s", errUsage, d.name, d.v)
		}
	}
	cfg := &record.Config{}
	if *configPath != "" {
		c, err := record.LoadConfig(*configPath)
		if err != nil {
			return err
		}
		cfg = c
	}
	// Flags override the file.
	if set["interval"] {
		cfg.Interval = record.Duration(*interval)
		for i := range cfg.Targets {
			cfg.Targets[i].Interval = 0
		}
	}
	if set["timeout"] {
		cfg.Timeout = record.Duration(*timeout)
		for i := range cfg.Targets {
			cfg.Targets[i].Timeout = 0
		}
	}
	if set["follow-redirects"] {
		cfg.FollowRedirects = *follow
		for i := range cfg.Targets {
			cfg.Targets[i].FollowRedirects = nil
		}
	}
	tlsFlags.apply(cfg, set)
	if set["resolve-dns"] {
		cfg.ResolveDNS = *resolveDNS
		for i := range cfg.Targets {
			cfg.Targets[i].ResolveDNS = nil
		}
	}
	if set["rotate"] {
		cfg.Rotate = record.Duration(*rotate)
	}
	if set["max-series"] {
		cfg.MaxSeries = *maxSeries
	}
	if set["max-label-value-bytes"] {
		cfg.MaxLabelValueBytes = *maxLabelValue
	}
	if set["max-label-bytes"] {
		cfg.MaxLabelBytes = *maxLabels
	}
	for _, s := range targets {
		t, err := record.ParseTargetFlag(s)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		cfg.Targets = append(cfg.Targets, t)
	}
	cfg.FileSD = append(cfg.FileSD, fileSD...)
	if len(cfg.Targets) == 0 && len(cfg.FileSD) == 0 {
		return fmt.Errorf("%w: record: no targets: give --target NAME=URL, --file-sd FILE or a config file with [[target]] tables", errUsage)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: record: %v", errUsage, err)
	}
	// Sessions of one folder are read as one run: adding to one is asked
	// for, never an accident (two demos made one 5.5-minute "incident").
	if n := sessionsIn(*out); n > 0 && !*appendTo {
		return fmt.Errorf("%w: record: %s already holds a recording (%d session(s)); give --append to add a session to it, or another --out", errUsage, *out, n)
	}
	opt := record.Options{Dir: *out, Duration: *duration, Warnings: stderr}
	// On a terminal the progress is llmrec top's view of the folder; to a
	// pipe it stays lines.
	view := !*quiet && !*noView && isTerminal(stderr)
	if !*quiet && !view {
		opt.Progress = stderr
		opt.Live = isTerminal(stderr)
	}
	if *markListen != "" {
		stop, err := serveMarks(*markListen, *out, *markPublic, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	fmt.Fprintf(stderr, "recording %d target(s) into %s; Ctrl-C to stop\n", len(cfg.Targets), *out)
	stopView := func() {}
	if view {
		f, _ := stderr.(*os.File) // a terminal is a file
		var err error
		if stopView, err = recordView(*out, f); err != nil {
			return err
		}
	}
	ctx, abort, release := stopOnSignals(ctx, stderr)
	opt.Abort = abort
	s, err := record.Run(ctx, cfg, opt)
	release()
	stopView() // its last frame stays above the summary
	if s != nil {
		fmt.Fprintf(stdout, "run %s: %d segment(s), %s in %s, %s\n", s.RunID, len(s.Segments), byteCount(s.Bytes), s.Dir, s.Elapsed.Round(time.Millisecond))
		for _, t := range s.Targets {
			fmt.Fprintln(stdout, "  "+record.StatusLine(t))
		}
	}
	if err != nil || s == nil {
		return err
	}
	// Recorded, but a target never answered: most likely a wrong URL. A
	// discovered target that left may have gone before it could.
	var silent []string
	for _, t := range s.Targets {
		if !t.Answered && !t.Left {
			silent = append(silent, fmt.Sprintf("%s (%s: %s)", t.Name, t.URL, t.LastError))
		}
	}
	if len(silent) > 0 {
		return fmt.Errorf("record: %d of %d target(s) never answered: %s", len(silent), len(s.Targets), strings.Join(silent, "; "))
	}
	return nil
}

// stopOnSignals returns a context cancelled by the first SIGINT or SIGTERM
// and a channel closed by the second: stop cleanly, then stop at once.
// release stops listening.
func stopOnSignals(ctx context.Context, stderr io.Writer) (_ context.Context, abort <-chan struct{}, release func()) {
	ctx, cancel := context.WithCancel(ctx)
	ab := make(chan struct{})
	done := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sig)
		for n := 1; ; n++ {
			select {
			case s := <-sig:
				if n > 1 {
					fmt.Fprintf(stderr, "%v again: exiting at once\n", s)
					close(ab)
					return
				}
				fmt.Fprintf(stderr, "%v: stopping and sealing the open segment (again to exit at once)\n", s)
				cancel()
			case <-done:
				return
			}
		}
	}()
	return ctx, ab, func() { close(done); cancel() }
}

// serveMarks starts the recorder's mark endpoint on addr for the run
// folder dir (created if missing); stop closes it.
func serveMarks(addr, dir string, public bool, stderr io.Writer) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	m, err := record.ListenMarks(addr, dir, public)
	if err != nil {
		return nil, fmt.Errorf("%w: record: %v", errUsage, err)
	}
	fmt.Fprintf(stderr, "marks: POST http://%s/mark?name=NAME with the header %s: 1 (add &end=1 to end the phase)\n", m.Addr(), capture.MarkHeader)
	return func() { m.Close() }, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func byteCount(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// sessionsIn is how many recording sessions dir holds: 0 for a folder that
// is missing or holds none (only foreign files, say).
func sessionsIn(dir string) int {
	r, err := capture.Open(dir)
	if err != nil {
		return 0
	}
	runs := map[string]bool{}
	for _, m := range r.Manifests {
		runs[m.RunID] = true
	}
	// A session killed before its manifest was written still has files.
	if len(runs) == 0 && (len(r.Segments) > 0 || len(r.Journals()) > 0) {
		return 1
	}
	return len(runs)
}
