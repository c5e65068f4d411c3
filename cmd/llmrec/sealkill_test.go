package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// servedLog is what loopback targets served: for each target and serial,
// when the response was completely written.
type servedLog struct {
	mu     sync.Mutex
	served map[string][]int64 // target -> serial -> unix ns, appended in order
}

// bigPage is a ~460 KB exposition page: histograms of a few hundred models
// with a serial gauge first, which names the response.
func bigPage(target string, serial int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# TYPE test_serial gauge\ntest_serial{target=%q} %d\n", target, serial)
	b.WriteString("# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.\n")
	b.WriteString("# TYPE vllm:e2e_request_latency_seconds histogram\n")
	for m := 0; b.Len() < 460_000; m++ {
		for _, le := range []string{"0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0", "+Inf"} {
			fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=%q,model_name=\"org/model-%04d-instruct\"} %d\n", le, m, serial*7+m)
		}
		fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"org/model-%04d-instruct\"} %d.5\n", m, serial)
		fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"org/model-%04d-instruct\"} %d\n", m, serial*7+m)
	}
	return b.Bytes()
}

// serveBig starts a loopback target that serves bigPage with a fresh serial
// at every request and logs when each response was completely written.
func (l *servedLog) serveBig(t *testing.T, name string) string {
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r) // the engine-info probes
			return
		}
		mu.Lock()
		serial := next
		next++
		mu.Unlock()
		page := bigPage(name, serial)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		if _, err := w.Write(page); err != nil {
			return
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			return
		}
		done := time.Now().UnixNano()
		l.mu.Lock()
		defer l.mu.Unlock()
		for len(l.served[name]) <= serial {
			l.served[name] = append(l.served[name], 0)
		}
		l.served[name][serial] = done
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// sealEpsilon is how long a recorder may take, after a target finished
// writing a response, to hand it to the writer and journal it (the parse
// comes after the journal): a scrape served earlier than this before a
// SIGKILL must survive it. On a host busy with other work the recorder is
// slow to read a response, and slowest while it seals, which is when it is
// killed: four times the longest it took to read a stored one is added
// (twice was 102 ms, and a page served 120 ms before a kill inside a seal
// was not read yet in a CI run beside other packages' tests; the loss
// this test was written for was of pages served 0.4-0.6 s before).
const sealEpsilon = 50 * time.Millisecond

// SIGKILL of a real recorder at moments chosen to fall inside seals and
// merges (a *.parquet.tmp is being written), with three targets serving
// 460 KB pages every 200 ms: after recovery every response a target
// finished writing more than sealEpsilon (plus four times the longest read) before the
// kill is stored, once. Before seals ran off the append path, rows finished
// during a seal waited in memory and 2-6 of them, served 0.4-0.6 s before
// the kill, were lost.
func TestSIGKILLInsideSealsLosesNoScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a recorder inside seals")
	}
	bin := buildBinary(t)
	log := &servedLog{served: map[string][]int64{}}
	names := []string{"a", "b", "c"}
	// A timeout of ten intervals: a response served is read to its end (a
	// timed-out one would be a row without the body that names it).
	args := []string{"record", "--interval", "200ms", "--timeout", "2s", "--quiet"}
	for _, n := range names {
		args = append(args, "--target", n+"="+log.serveBig(t, n))
	}
	dir := filepath.Join(t.TempDir(), "run")
	// Sessions of two kinds, in turn: eight-second segments of 120 large
	// pages, which take a while to seal, killed 0.3-0.9 s into their first
	// seal; and one-second segments merged two by two, killed inside their
	// first merge.
	kinds := []struct {
		what          string
		rotate        time.Duration
		merge         bool // kill inside a merge, not a seal
		delay, spread int  // ms after the seal or merge started
	}{{"seal", 8 * time.Second, false, 300, 600}, {"merge", time.Second, true, 0, 300}}
	for i, k := range kinds {
		cfg := filepath.Join(t.TempDir(), k.what+".toml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, "rotate = %q\ncompact_every = 2\n", k.rotate), 0o644); err != nil {
			t.Fatal(err)
		}
		kinds[i].what = cfg
	}
	rng := rand.New(rand.NewPCG(3, 5))
	type session struct{ start, kill int64 }
	var sessions []session
	inside := map[bool]int{}
	// Three sessions, more (up to nine) while a loaded machine let a seal or
	// a merge pass unseen.
	for i := 0; i < 3 || i < 9 && (inside[false] == 0 || inside[true] == 0); i++ {
		k := kinds[i%len(kinds)]
		before := runsIn(dir)
		cmd := exec.Command(bin, append(args, "--append", "--out", dir, "--config", k.what)...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill at a random moment into the session's first seal or merge
		// (recovering the session before is not one), or at a deadline if
		// none is seen.
		delay := time.Duration(k.delay+rng.IntN(k.spread)) * time.Millisecond
		deadline := start.Add(2*k.rotate + 8*time.Second) // recovering the session before comes first
		for time.Now().Before(deadline) {
			if sealing(dir, before, k.merge) {
				inside[k.merge]++
				time.Sleep(delay)
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		kill := time.Now().UnixNano()
		if err := cmd.Wait(); !strings.Contains(fmt.Sprint(err), "killed") {
			t.Errorf("session %d ended before the kill: %v\n%s", i, err, stderr.Bytes())
		}
		if bytes.Contains(stderr.Bytes(), []byte("error")) {
			t.Errorf("session %d: %s", i, stderr.Bytes())
		}
		sessions = append(sessions, session{start.UnixNano(), kill})
	}
	if inside[false] == 0 || inside[true] == 0 {
		t.Fatalf("%d kills came during a seal and %d during a merge; want both", inside[false], inside[true])
	}

	stored := map[string]int{}   // "target/serial"
	ended := map[string]int64{}  // when the recorder had read the body
	where := map[string]string{} // run and seq
	var failed []string
	rows := folderRows(t, dir)
	for i := range rows {
		s := &rows[i]
		if s.Outcome != capture.OutcomeOK && s.Outcome != capture.OutcomeParseError {
			if s.Outcome != capture.OutcomeMissed {
				failed = append(failed, fmt.Sprintf("%s seq %d: %s", s.Target, s.Seq, *s.Error))
			}
			continue
		}
		line, _, _ := bytes.Cut(s.Body[bytes.IndexByte(s.Body, '\n')+1:], []byte("\n"))
		_, serial, _ := bytes.Cut(line, []byte("} "))
		stored[s.Target+"/"+string(serial)]++
		ended[s.Target+"/"+string(serial)] = s.EndNs
		where[s.Target+"/"+string(serial)] = fmt.Sprintf("%s seq %d", s.RunID, s.Seq)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var readLag time.Duration // the longest from served to read, of the stored
	for _, n := range names {
		for serial, done := range log.served[n] {
			if end, ok := ended[fmt.Sprintf("%s/%d", n, serial)]; ok && done != 0 {
				readLag = max(readLag, time.Duration(end-done))
			}
		}
	}
	epsilon := sealEpsilon + 4*readLag
	checked, lost := 0, 0
	var late []string
	for _, n := range names {
		for serial, done := range log.served[n] {
			key := fmt.Sprintf("%s/%d", n, serial)
			if c := stored[key]; c > 1 {
				t.Errorf("scrape %s stored %d times", key, c)
			}
			var kill int64
			for _, s := range sessions {
				if done >= s.start && done <= s.kill {
					kill = s.kill
				}
			}
			if done == 0 || kill == 0 || done > kill-int64(epsilon) {
				continue // served too close to a kill to promise anything
			}
			checked++
			if stored[key] == 0 {
				lost++
				prev, next := fmt.Sprintf("%s/%d", n, serial-1), fmt.Sprintf("%s/%d", n, serial+1)
				late = append(late, fmt.Sprintf("%s served %s before the kill (stored before it: %s; after it: %s)", key,
					time.Duration(kill-done).Round(time.Millisecond), where[prev], where[next]))
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d scrapes served more than %s (%s + four times the longest read, %s) before a SIGKILL are lost:\n%s\nfailed scrapes stored:\n%s",
			lost, checked, epsilon.Round(time.Millisecond), sealEpsilon, readLag.Round(time.Millisecond), strings.Join(late, "\n"), strings.Join(failed, "\n"))
	}
	if checked < 120 {
		t.Fatalf("only %d scrapes to check; the sessions were too short", checked)
	}
	t.Logf("%d sessions (%d killed inside a seal, %d inside a merge), %d rows, %d served scrapes checked; the longest from served to read %s",
		len(sessions), inside[false], inside[true], len(rows), checked, readLag.Round(time.Millisecond))
}

// runsIn lists the run ids of the files in dir.
func runsIn(dir string) map[string]bool {
	ents, _ := os.ReadDir(dir)
	runs := map[string]bool{}
	for _, e := range ents {
		if i := strings.LastIndexByte(e.Name(), '-'); i > 0 {
			runs[e.Name()[:i]] = true
		}
	}
	return runs
}

// sealing reports whether a seal (or, with merge, a merge) of a run not in
// old is writing a file in dir.
func sealing(dir string, old map[string]bool, merge bool) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		name := e.Name()
		i := strings.LastIndexByte(name, '-')
		if i <= 0 || !strings.HasSuffix(name, ".parquet.tmp") || old[name[:i]] {
			continue
		}
		// A merged file is named for its range: RUN-000001_000002.parquet.
		if strings.Contains(name[i:], "_") == merge {
			return true
		}
	}
	return false
}
