package main

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// The scale benchmark's knobs (see BenchmarkScale).
var (
	scaleN        = flag.String("scale.n", "8,32,64,128,256,512,1000", "BenchmarkScale: the numbers of targets to record, comma-separated")
	scaleDuration = flag.Duration("scale.duration", 20*time.Second, "BenchmarkScale: how long each recording runs")
	scaleFind     = flag.Bool("scale.find", false, "BenchmarkScale: after -scale.n, bisect between the largest N that held and the smallest that did not")
	scaleBin      = flag.String("scale.bin", "", "BenchmarkScale: the llmrec binary to measure (default: built from this tree), to compare another build")
	scaleGzip     = flag.Bool("scale.gzip", false, "BenchmarkScale: serve the pages gzipped (as prometheus_client does when asked), compressed at each request")
)

// Scale targets: what "holds" means for one recorder.
const (
	scaleInterval = time.Second
	scaleP99      = 20 * time.Millisecond // cadence error, start_ns - scheduled_ns
	// scaleWarm is the start left out of p99-steady-ms: the first ticks
	// meet empty interners, new connections and the engine-information
	// requests.
	scaleWarm = 2 * time.Second
)

// BenchmarkScale records N simulated vLLM engines at 1 s with one real
// `llmrec record` process for -scale.duration (20 s) per N, and reports
// whether the recorder held its cadence: the p99 and maximum of the cadence
// error (start_ns - scheduled_ns, as BenchmarkCadenceHostile), the missed
// ticks and the failed scrapes (holds = 1 when p99 < 20 ms and none was
// missed or failed), and what the recorder cost: its CPU (the child
// process's own rusage: user + system, start and final seal included) per
// target per second, its peak RSS (VmHWM, read every 20 ms; see watchHWM)
// and its peak heap (GODEBUG=gctrace=1), in all and per target. The load average when the run began is reported
// too (load1), and the host's own lateness (host-p99-ms, host-max-ms: how
// late a goroutine of the benchmark process woke from 10 ms sleeps, see
// watchHost): on a shared machine the figures are pessimistic, and a
// cadence error no larger than the host's is the machine's.
//
// Each target is its own loopback listener, its own simulated engine (the
// loads differ), rendering its 47 KB vLLM V1 page for the current second
// at each request (11 µs; with -scale.gzip also compressed at the fastest
// level). The simulators run in the benchmark process, not the recorder's:
// their CPU is reported apart (sim-cpu-ms/target/s, this process's rusage
// over the run, the watchers' included) and is not in the recorder's
// figures, though on 2 cores it competes with the recorder for them.
//
// Nothing of it runs without -bench. The table, one row per N:
//
//	go test ./cmd/llmrec -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -timeout 60m
//
// and the largest N that holds, bisected past the table's largest that held:
//
//	go test ./cmd/llmrec -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -timeout 60m -scale.find
//
// record refuses more than record.MaxScrapeRate scrapes a second: at 1 s,
// 1,000 targets is the most one recorder is asked to take.
func BenchmarkScale(b *testing.B) {
	var ns []int
	for f := range strings.SplitSeq(*scaleN, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > record.MaxScrapeRate {
			b.Fatalf("-scale.n: %q is not a number of targets from 1 to %d", f, record.MaxScrapeRate)
		}
		ns = append(ns, n)
	}
	slices.Sort(ns)
	bin := *scaleBin
	if bin == "" {
		bin = buildBinary(b)
	}
	fleet := &simFleet{gzip: *scaleGzip}
	defer fleet.close()

	held := map[int]bool{}
	run := func(n int) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if err := fleet.grow(n); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs() // the benchmark process's: the simulators and the reading
			// With -benchtime Nx, the figures are the worst recording's
			// (the largest p99), and N holds only if every one held.
			var worst scaleResult
			holds := true
			for b.Loop() {
				res := recordFleet(b, bin, fleet.urls[:n], *scaleDuration)
				holds = holds && res.holds()
				if res.p99 >= worst.p99 {
					worst = res
				}
			}
			worst.report(b, n, holds)
			held[n] = holds
		})
	}
	for _, n := range ns {
		run(n)
	}
	lo, hi := 0, 0 // the largest N that held below the smallest that did not
	for _, n := range ns {
		if !held[n] {
			hi = n
			break
		}
		lo = n
	}
	if *scaleFind && hi > 0 {
		for hi-lo > max(4, lo/16) {
			mid := (lo + hi) / 2
			run(mid)
			if held[mid] {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	switch {
	case lo == 0:
		b.Logf("no N held (p99 cadence error < %v, no missed tick, no failed scrape); the smallest tried: %d", scaleP99, ns[0])
	case hi == 0:
		b.Logf("every N held up to %d, the largest tried (record takes at most %d targets at 1 s)", lo, record.MaxScrapeRate)
	default:
		b.Logf("largest N that held: %d; %d did not", lo, hi)
	}
}

// scaleResult is one recording's figures.
type scaleResult struct {
	ticks, missed, failed int
	p50, p99, worst       time.Duration
	p99Took               time.Duration // p99 of end_ns - start_ns
	p99Steady             time.Duration // p99 of the ticks after the first scaleWarm
	hostP99, hostWorst    time.Duration // lateness of this process's own 10 ms sleeps (watchHost)
	recorderCPU, simCPU   time.Duration
	rssKiB                int64
	heapMB                int // the largest heap a GC started at
	liveMB                int // the largest heap left after a GC
	elapsed, duration     time.Duration
	load1                 float64
}

func (r scaleResult) holds() bool {
	return r.ticks > 0 && r.p99 < scaleP99 && r.missed == 0 && r.failed == 0
}

func (r scaleResult) report(b *testing.B, n int, holds bool) {
	perTargetSecond := float64(n) * r.duration.Seconds()
	b.ReportMetric(float64(r.p99)/1e6, "p99-ms")
	b.ReportMetric(float64(r.worst)/1e6, "max-ms")
	b.ReportMetric(float64(r.p50)/1e6, "p50-ms")
	b.ReportMetric(float64(r.missed), "missed")
	b.ReportMetric(float64(r.failed), "failed")
	b.ReportMetric(float64(r.ticks), "ticks")
	b.ReportMetric(float64(r.p99Took)/1e6, "p99-scrape-ms")
	b.ReportMetric(float64(r.p99Steady)/1e6, "p99-steady-ms")
	b.ReportMetric(float64(r.hostP99)/1e6, "host-p99-ms")
	b.ReportMetric(float64(r.hostWorst)/1e6, "host-max-ms")
	b.ReportMetric(float64(r.recorderCPU)/1e6/perTargetSecond, "cpu-ms/target/s")
	b.ReportMetric(float64(r.rssKiB)/1024, "rss-MiB")
	b.ReportMetric(float64(r.rssKiB)/1024/float64(n), "rss-MiB/target")
	b.ReportMetric(float64(r.heapMB), "heap-MB")
	b.ReportMetric(float64(r.heapMB)/float64(n), "heap-MB/target")
	b.ReportMetric(float64(r.simCPU)/1e6/perTargetSecond, "sim-cpu-ms/target/s")
	b.ReportMetric((r.elapsed - r.duration).Seconds(), "stop-s")
	b.ReportMetric(r.load1, "load1")
	b.ReportMetric(map[bool]float64{true: 1}[holds], "holds")
}

// scaleRow is what the benchmark reads of a row: not the bodies, samples
// or headers (scaleOmits).
type scaleRow = capture.Scrape

const scaleOmits = capture.OmitBody | capture.OmitSamples | capture.OmitHeaders

// seqNumber is the tick number in a missed tick's reason, left out when
// the reasons are counted.
var seqNumber = regexp.MustCompile(`seq \d+`)

// gcLine finds a gctrace line's heap sizes: at the GC's start, at its end,
// and live (marked).
var gcLine = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB`)

// recordFleet runs one `llmrec record` of the urls at 1 s for d and reads
// what it wrote.
func recordFleet(b *testing.B, bin string, urls []string, d time.Duration) scaleResult {
	dir := filepath.Join(b.TempDir(), "run")
	cfg := filepath.Join(b.TempDir(), "scale.toml")
	var t bytes.Buffer
	fmt.Fprintf(&t, "interval = %q\n", scaleInterval.String())
	for i, u := range urls {
		fmt.Fprintf(&t, "[[target]]\nname = \"vllm%04d\"\nurl = %q\nengine = \"vllm\"\n", i, u)
	}
	if err := os.WriteFile(cfg, t.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	res := scaleResult{duration: d, load1: loadAverage(b)}
	cmd := exec.Command(bin, "record", "--config", cfg, "--out", dir, "--duration", d.String(), "--quiet")
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	before := selfCPU(b)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	hwm := watchHWM(cmd.Process.Pid)
	host := watchHost()
	cpuAt := watchCPU(cmd.Process.Pid)
	err := cmd.Wait()
	res.rssKiB = hwm()
	cpuQuarters, simQuarters, fdsAt := cpuAt()
	res.hostP99, res.hostWorst = host()
	if err != nil {
		b.Fatalf("recorder: %v\n%s", err, stderr.Bytes())
	}
	res.elapsed = time.Since(start)
	res.simCPU = selfCPU(b) - before
	res.recorderCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	errText := slices.Clone(stderr.Bytes()) // the scanner below drains stderr
	sc := bufio.NewScanner(&stderr)
	said := 0
	for sc.Scan() {
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			if !strings.HasPrefix(sc.Text(), "gc ") && !strings.HasPrefix(sc.Text(), "recording ") {
				if said++; said <= 5 {
					b.Logf("recorder: %s", sc.Text())
				}
			}
			continue
		}
		at, _ := strconv.Atoi(m[1])
		live, _ := strconv.Atoi(m[3])
		res.heapMB, res.liveMB = max(res.heapMB, at), max(res.liveMB, live)
	}

	r, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	var lags, took []time.Duration
	var at []int64       // the scheduled time of each of lags
	var worst []scaleRow // the latest ticks
	first := int64(0)    // the first tick's scheduled time
	whys := map[string]int{}
	var missedAt []int64 // the scheduled times of the missed ticks
	for _, seg := range r.Segments {
		err := capture.ReadScrapes(seg, scaleOmits, func(s *scaleRow) error {
			res.ticks++
			switch s.Outcome {
			case capture.OutcomeMissed:
				res.missed++
				missedAt = append(missedAt, s.ScheduledNs)
			case capture.OutcomeOK:
			default:
				res.failed++
			}
			if s.Outcome != capture.OutcomeOK {
				why, _, _ := strings.Cut(deref(s.Error), ":")
				whys[s.Outcome+": "+seqNumber.ReplaceAllString(why, "seq N")]++
			}
			if first == 0 || s.ScheduledNs < first {
				first = s.ScheduledNs
			}
			if s.StartNs != 0 {
				lags = append(lags, time.Duration(s.StartNs-s.ScheduledNs))
				at = append(at, s.ScheduledNs)
				worst = append(worst, *s)
				if len(worst) > 64 {
					slices.SortFunc(worst, func(a, b scaleRow) int { return cmp.Compare(b.StartNs-b.ScheduledNs, a.StartNs-a.ScheduledNs) })
					worst = worst[:5]
				}
			}
			if s.StartNs != 0 && s.EndNs != 0 {
				took = append(took, time.Duration(s.EndNs-s.StartNs))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// One line, the most frequent first: the benchmark's log keeps only
	// its first lines.
	reasons := slices.Collect(maps.Keys(whys))
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(cmp.Compare(whys[b], whys[a]), strings.Compare(a, b)) })
	var whyLines []string
	for _, w := range reasons {
		whyLines = append(whyLines, fmt.Sprintf("%d %s", whys[w], w))
	}
	if len(whyLines) > 0 {
		b.Logf("not ok: %s", strings.Join(whyLines, "; "))
		// When in the run the ticks were missed: at the start (new
		// connections, first pages), or throughout.
		perSecond := map[int64]int{}
		for _, at := range missedAt {
			perSecond[(at-first)/1e9]++
		}
		var when []string
		for k := range int64(d/time.Second) + 1 {
			if perSecond[k] > 0 {
				when = append(when, fmt.Sprintf("%d s: %d", k, perSecond[k]))
			}
		}
		b.Logf("missed by second of the run: %s", strings.Join(when, ", "))
	}
	if os.Getenv("SCALE_DEBUG") != "" {
		bucket := map[int64]time.Duration{}
		for _, seg := range r.Segments {
			capture.ReadScrapes(seg, scaleOmits, func(s *scaleRow) error {
				if s.StartNs != 0 {
					k := (s.ScheduledNs - first) / 250e6
					bucket[k] = max(bucket[k], time.Duration(s.StartNs-s.ScheduledNs))
				}
				return nil
			})
			if st, err := os.Stat(seg); err == nil {
				b.Logf("segment %s mtime %.3f", filepath.Base(seg), float64(st.ModTime().UnixNano()-first)/1e9)
			}
		}
		for k := int64(0); k < 100; k++ {
			if bucket[k] > 10*time.Millisecond {
				b.Logf("%.2f s: max lag %.1f ms", float64(k)/4, float64(bucket[k])/1e6)
			}
		}
		for _, l := range strings.Split(string(errText), "\n") {
			if strings.HasPrefix(l, "gc ") {
				b.Logf("%s", l)
			}
		}
		var cpu []string
		for i, c := range cpuQuarters {
			cpu = append(cpu, fmt.Sprintf("%.2f s: %d+%d ms", float64(i+1)/4, c.Milliseconds(), simQuarters[i].Milliseconds()))
		}
		b.Logf("CPU by quarter second of the process, recorder+simulators: %s", strings.Join(cpu, ", "))
		b.Logf("recorder's open files by quarter second: %v", fdsAt)
	}
	slices.SortFunc(worst, func(a, b scaleRow) int { return cmp.Compare(b.StartNs-b.ScheduledNs, a.StartNs-a.ScheduledNs) })
	for _, s := range worst[:min(5, len(worst))] {
		b.Logf("late: %s tick at %.3f s fired %.1f ms late", s.Target, float64(s.ScheduledNs-first)/1e9, float64(s.StartNs-s.ScheduledNs)/1e6)
	}
	// Every target ticks once a second: a recording with far fewer rows
	// lost ticks without saying so.
	if want := len(urls) * int(d/scaleInterval); res.ticks < want*9/10 {
		b.Fatalf("%d rows for %d targets over %v, want about %d", res.ticks, len(urls), d, want)
	}
	var steady []time.Duration
	for i, l := range lags {
		if at[i]-first >= int64(scaleWarm) {
			steady = append(steady, l)
		}
	}
	if len(steady) > 0 {
		slices.Sort(steady)
		res.p99Steady = steady[len(steady)*99/100]
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		slices.Sort(took)
		res.p50, res.p99, res.worst = lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1]
		res.p99Took = took[len(took)*99/100]
	}
	if said > 5 {
		b.Logf("recorder: %d more lines", said-5)
	}
	b.Logf("%d targets: recorder CPU %v over %v (%.0f %% of one core), peak RSS %d MiB, heap at most %d MB (live %d MB), load average %.2f",
		len(urls), res.recorderCPU.Round(time.Millisecond), res.elapsed.Round(time.Millisecond),
		100*res.recorderCPU.Seconds()/res.elapsed.Seconds(), res.rssKiB/1024, res.heapMB, res.liveMB, res.load1)
	return res
}

// watchHWM reads the peak RSS (VmHWM) of process pid every 20 ms until
// the returned function is called, which returns the last reading, in KiB.
// The rusage of a child cannot tell it: Linux carries the parent's peak
// RSS into the child's at exec (os/exec starts the child sharing the
// parent's memory), so a recorder started by a benchmark process that had
// grown to 200 MiB would report 200 MiB whatever it used itself.
func watchHWM(pid int) func() int64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var last atomic.Int64
	read := func() {
		data, err := os.ReadFile(path)
		if err != nil {
			return // exited
		}
		for l := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				last.Store(max(last.Load(), kib))
			}
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return last.Load()
	}
}

// watchCPU reads the user + system CPU of process pid (/proc/PID/stat,
// in clock ticks of 10 ms) every 250 ms until the returned function is
// called, which returns the CPU spent in each quarter second since the
// call: where in the run the recorder's work is (SCALE_DEBUG), and the
// same of this process (the simulators'), and the recorder's open files
// (its connections) at each reading.
func watchCPU(pid int) func() (recorder, self []time.Duration, fds []int) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	read := func() (time.Duration, bool) {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, false // exited
		}
		// The fields after the command name, which is in parentheses.
		_, rest, _ := bytes.Cut(data, []byte(") "))
		f := strings.Fields(string(rest))
		if len(f) < 13 {
			return 0, false
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(u+s) * 10 * time.Millisecond, true
	}
	var quarters, selfQuarters []time.Duration
	var fdsAt []int
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		last, selfLast := time.Duration(0), selfCPU(nil)
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			c, ok := read()
			if !ok {
				return
			}
			self := selfCPU(nil)
			quarters, selfQuarters = append(quarters, c-last), append(selfQuarters, self-selfLast)
			if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				fdsAt = append(fdsAt, len(fds))
			}
			last, selfLast = c, self
		}
	}()
	return func() ([]time.Duration, []time.Duration, []int) {
		close(stop)
		<-done
		return quarters, selfQuarters, fdsAt
	}
}

// watchHost measures the host's own noise while the recorder runs: a
// goroutine of this process (the simulators', which are mostly idle) sleeps
// to every 10 ms boundary and notes how late it woke. The returned
// function stops it and returns the p99 and the largest lateness. When
// these are as large as the recorder's cadence error, the machine (other
// work on its cores) was late, not the recorder.
func watchHost() func() (p99, worst time.Duration) {
	const step = 10 * time.Millisecond
	var lates []time.Duration
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		due := time.Now().Truncate(step).Add(step)
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				lates = append(lates, now.Sub(due))
				due = now.Truncate(step).Add(step)
				t.Reset(time.Until(due))
			}
		}
	}()
	return func() (time.Duration, time.Duration) {
		close(stop)
		<-done
		if len(lates) == 0 {
			return 0, 0
		}
		slices.Sort(lates)
		return lates[len(lates)*99/100], lates[len(lates)-1]
	}
}

// selfCPU is this process's CPU time so far (the simulators'); b nil:
// an error reads as 0.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil && b != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the host's one-minute load average.
func loadAverage(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Logf("no load average: %v", err)
		return 0
	}
	f, _, _ := strings.Cut(string(data), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

// simFleet serves simulated vLLM engines, each on its own loopback
// listener (a fleet is many hosts: one connection each).
type simFleet struct {
	gzip    bool
	start   time.Time
	urls    []string
	servers []*http.Server
}

// grow starts engines until there are n.
func (f *simFleet) grow(n int) error {
	if f.start.IsZero() {
		f.start = time.Now()
	}
	for i := len(f.urls); i < n; i++ {
		e, err := sim.NewEngine(sim.EngineSpec{
			Name: fmt.Sprintf("vllm%04d", i), Format: sim.FormatVLLM, Model: "meta-llama/Llama-3.1-8B-Instruct",
			Phases: []sim.Phase{{DecodeTPS: float64(600 + 37*(i%29)), PromptTPS: float64(2000 + 113*(i%13)),
				CachedFraction: 0.3, Running: 4 + i%12, Waiting: i % 5, KVUsage: -1}},
		}, f.start)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: f.handler(e), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		f.servers = append(f.servers, srv)
		f.urls = append(f.urls, "http://"+ln.Addr().String()+"/metrics")
	}
	return nil
}

func (f *simFleet) close() {
	for _, s := range f.servers {
		s.Close()
	}
}

// pageBuffers are the buffers pages are rendered into.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// gzipWriters compress pages at the fastest level.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// handler serves the engine's page of the current second, and its /version.
func (f *simFleet) handler(e *sim.Engine) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			if body := e.InfoJSON(r.URL.Path, f.start); body != nil {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
				return
			}
			http.NotFound(w, r)
			return
		}
		buf := pageBuffers.Get().(*[]byte)
		defer pageBuffers.Put(buf)
		page := e.AppendRender((*buf)[:0], time.Since(f.start).Truncate(time.Second))
		*buf = page
		w.Header().Set("Content-Type", e.ContentType())
		if f.gzip && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzipWriters.Get().(*gzip.Writer)
			zw.Reset(w)
			zw.Write(page)
			zw.Close()
			gzipWriters.Put(zw)
		} else {
			w.Write(page)
		}
	})
}
