package main

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// buildBinary builds llmrec once per test binary run.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "llmrec")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveScenario serves the simulated engines of a scenario's text on
// loopback until the test ends.
func serveScenario(t *testing.T, text, name string, o sim.Options) *sim.Server {
	t.Helper()
	sc, err := sim.ParseScenario([]byte(text), name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := sim.Serve(ctx, sc, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

const steadyScenario = `
name = "steady"
duration = "10m"
[[engine]]
name = "vllm"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 900.0
  prompt_tps = 2500.0
  running = 8
`

// SIGKILL of the recorder, a real child process, at 10 random moments into
// one run folder: after recovery every scrape the engine finished serving
// more than one interval before the kill is present exactly once, and every
// *.parquet opens.
func TestSIGKILLLosesNoCompletedScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a recorder 10 times")
	}
	bin := buildBinary(t)
	srv := serveScenario(t, steadyScenario, "steady.toml", sim.Options{})
	url := srv.Targets()[0].MetricsURL
	dir := filepath.Join(t.TempDir(), "run")
	const interval = 100 * time.Millisecond
	// Compaction every 2 segments of 200 ms, so kills land during merges too.
	cfgPath := filepath.Join(t.TempDir(), "kill.toml")
	if err := os.WriteFile(cfgPath, []byte("rotate = \"200ms\"\ncompact_every = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	type session struct{ start, kill int64 }
	var sessions []session
	// eligible counts the scrapes served inside a session more than an
	// interval before its kill: the ones the check below holds to.
	eligible := func() (n int) {
		for _, e := range srv.Log() {
			for _, s := range sessions {
				if e.Path == "/metrics" && e.Status == 200 && e.ReceivedNs >= s.start && e.ReceivedNs <= s.kill && e.SentNs < s.kill-int64(interval) {
					n++
				}
			}
		}
		return n
	}
	// At least 10 kills, more (up to 30) while a loaded machine left too
	// few scrapes to check.
	for i := 0; i < 10 || i < 30 && eligible() < 40; i++ {
		cmd := exec.Command(bin, "record", "--append", "--out", dir, "--config", cfgPath, "--interval", interval.String(),
			"--quiet", "--target", "vllm="+url)
		start := time.Now().UnixNano()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		kill := time.Now().UnixNano()
		cmd.Wait()
		sessions = append(sessions, session{start, kill})
	}

	seen := map[[32]byte]int{}
	type key struct {
		run string
		seq int64
	}
	rows := map[key]int{}
	for _, s := range folderRows(t, dir) {
		rows[key{s.RunID, s.Seq}]++
		if s.Outcome == capture.OutcomeOK {
			seen[sha256.Sum256(s.Body)]++
		}
	}
	for k, n := range rows {
		if n != 1 {
			t.Errorf("run %s seq %d stored %d times", k.run, k.seq, n)
		}
	}
	engine := srv.Engines()[0]
	var checked int
	for _, e := range srv.Log() {
		if e.Path != "/metrics" || e.Status != 200 {
			continue
		}
		var kill int64
		for _, s := range sessions {
			if e.ReceivedNs >= s.start && e.ReceivedNs <= s.kill {
				kill = s.kill
			}
		}
		if kill == 0 || e.SentNs >= kill-int64(interval) {
			continue // served too close to a kill to promise anything
		}
		checked++
		h := sha256.Sum256(engine.Render(e.Offset))
		if n := seen[h]; n != 1 {
			t.Errorf("scrape served at %s (offset %s) is stored %d times", time.Unix(0, e.SentNs).Format("15:04:05.000"), e.Offset, n)
		}
	}
	if checked < 30 {
		t.Fatalf("only %d scrapes to check; the sessions were too short", checked)
	}
	t.Logf("%d sessions, %d rows, %d served scrapes checked", len(sessions), len(rows), checked)
}

// A recorder paused by SIGSTOP (a stalled host) writes the ticks it slept
// through as missed and fires the next tick on time: no catch-up burst.
func TestSIGSTOPStallIsMissedNotCaughtUp(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses a recorder")
	}
	bin := buildBinary(t)
	srv := serveScenario(t, steadyScenario, "steady.toml", sim.Options{NoMemoryLog: true})
	dir := filepath.Join(t.TempDir(), "run")
	const interval = 200 * time.Millisecond
	cmd := exec.Command(bin, "record", "--out", dir, "--interval", interval.String(), "--quiet",
		"--target", "a="+srv.Targets()[0].MetricsURL, "--target", "b="+srv.Targets()[0].MetricsURL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGCONT)
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("recorder exited with %v after SIGINT", err)
	}
	r, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	stalled := map[string]int{}
	for _, seg := range r.Segments {
		capture.ReadSegment(seg, func(s *capture.Scrape) error {
			switch {
			case s.Outcome == capture.OutcomeMissed && strings.HasPrefix(*s.Error, "recorder stalled"):
				stalled[s.Target]++
			case s.StartNs != 0:
				if lag := time.Duration(s.StartNs - s.ScheduledNs); lag > 100*time.Millisecond {
					t.Errorf("%s seq %d fired %s after its tick", s.Target, s.Seq, lag)
				}
			}
			return nil
		})
	}
	// 1.5 s at 200 ms: 7 or 8 ticks slept through, on both targets at once.
	for _, tg := range []string{"a", "b"} {
		if n := stalled[tg]; n < 6 || n > 9 {
			t.Errorf("target %s: %d ticks missed as recorder stalled, want about 7", tg, n)
		}
	}
}
