package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// A load, an engine stall from 3 s to 7 s (requests in the batch, no
// token out), the load again, a restart at 9 s.
const topScenario = `
name = "top"
duration = "10m"
[[engine]]
name = "vllm"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 1500.0
  prompt_tps = 4000.0
  running = 12
  [[engine.phase]]
  at = "3s"
  running = 12
  waiting = 4
  [[engine.phase]]
  at = "7s"
  decode_tps = 1500.0
  prompt_tps = 4000.0
  running = 12
  [[engine.event]]
  at = "9s"
  kind = "restart"
`

// snapshot is every file of a folder: name → size, mtime and digest.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		sum := [32]byte{}
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum = sha256.Sum256(b)
		}
		out[path] = fmt.Sprintf("%v %v %d %x", st.Mode(), st.ModTime(), st.Size(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFolder(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

// llmrec record against the simulator's scripted stall and restart, and
// llmrec top --once again and again while it records: the frames show the
// engine busy under load, stalled only in the stall (once frozen for
// findings.StallSeconds), and the restart from the poll after it, at its
// time. top changes nothing in the folder, a crashed journal's included.
func TestTopWhileRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("a 12 s recording")
	}
	srv := serveScenario(t, topScenario, "top.toml", sim.Options{})
	t0 := time.Now() // the scenario's offsets run from about here
	tg := srv.Targets()[0]
	dir := filepath.Join(t.TempDir(), "run")
	cfg := &record.Config{Targets: []record.Target{{Name: tg.Name, URL: tg.MetricsURL, Engine: "vllm",
		Interval: record.Duration(250 * time.Millisecond)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	recErr := make(chan error, 1)
	go func() {
		_, err := record.Run(context.Background(), cfg, record.Options{Dir: dir, Duration: 12 * time.Second})
		recErr <- err
	}()
	at := func(s float64) float64 { return float64(t0.UnixNano())/1e9 + s }
	crashed := filepath.Join(t.TempDir(), "crashed")
	var frames []live.Frame
	var follow *live.Reader // follows the recording, reading what is new
	done := false
	for !done {
		select {
		case err := <-recErr:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(300 * time.Millisecond):
		}
		out, stderr, err := runCLI("top", dir, "--once", "--json")
		if err != nil {
			// Before the recorder's first file there is no recording.
			if len(frames) == 0 && strings.Contains(err.Error(), "no recording here") || strings.Contains(err.Error(), "no such file") {
				continue
			}
			t.Fatalf("top: %v\n%s", err, stderr)
		}
		var f live.Frame
		if err := json.Unmarshal([]byte(out), &f); err != nil {
			t.Fatal(err)
		}
		if follow == nil {
			if follow, err = live.NewReader(live.Options{Dir: dir}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := follow.Frame(0); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		// Mid-run, a copy of the folder: its journal, no longer held by
		// a writer, reads as a crashed session's.
		if _, err := os.Stat(crashed); os.IsNotExist(err) && f.T > at(5) {
			copyDir(t, dir, crashed)
		}
	}
	if len(frames) < 10 {
		t.Fatalf("%d frames, want 10 or more", len(frames))
	}
	var busy, stalled, restarted bool
	for _, f := range frames {
		if len(f.Targets) != 1 {
			continue
		}
		tg := f.Targets[0]
		s := f.T - at(0) // the frame's instant, seconds into the scenario
		switch tg.State {
		case live.StateBusy:
			busy = busy || s < 3
		case live.StateStalled:
			stalled = true
			// Frozen from 3 s, a stall from 2 s of it on; over by the
			// first polls after 7 s.
			if s < 3+findings.StallSeconds-0.3 || s > 8 {
				t.Errorf("frame at %.2f s: stalled (%s)", s, tg.Why)
			}
		}
		if tg.Restart.Valid {
			restarted = true
			if r := tg.Restart.V - at(0); r < 8.5 || r > 9.8 || s < 9 {
				t.Errorf("frame at %.2f s: restart at %.2f s, want 9 s and only after it", s, r)
			}
		}
	}
	if !busy || !stalled || !restarted {
		for _, f := range frames {
			if len(f.Targets) == 1 {
				t.Logf("%.2f s: %s (%s) restart %v", f.T-at(0), f.Targets[0].State, f.Targets[0].Why, f.Targets[0].Restart)
			}
		}
		t.Fatalf("busy %v, stalled %v, restarted %v: want every one seen", busy, stalled, restarted)
	}

	// The reader that followed the journals, then read the segments they
	// were sealed into, ends with the frame of a read of everything.
	got, err := follow.Frame(0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := live.Read(live.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("the following reader's last frame differs from a whole read's:\n%s\n%s", gj, wj)
	}

	// Reads never write: the finished folder and the crashed copy.
	if r, err := capture.Open(crashed); err != nil || len(r.Crashed) == 0 {
		t.Fatalf("the copy has no crashed journal (%v)", err)
	}
	for _, d := range []string{dir, crashed} {
		before := snapshot(t, d)
		for _, args := range [][]string{{"top", d, "--once"}, {"top", d, "--once", "--json"}} {
			if _, stderr, err := runCLI(args...); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, stderr)
			}
		}
		sameFolder(t, d, before, snapshot(t, d))
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			continue // sealed and removed meanwhile
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Without --once and without a terminal, a finished recording is replayed
// from its start, frame after frame in time order, plain, and top exits
// after the frame of its end.
func TestTopReplaysAFinishedRun(t *testing.T) {
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, stderr, err := runCLI("top", dir, "--interval", "250ms", "--speed", "40")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("ANSI escapes in a pipe's frames")
	}
	var stamps []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "llmrec top") {
			f := strings.Fields(line)
			stamps = append(stamps, f[5]) // llmrec top DIR finished at HH:MM:SS.s
		}
	}
	// 30 s at 40 s a second: the start, then frames as often as the
	// budget lets, up to the end.
	if len(stamps) < 2 || !slices.IsSorted(stamps) || stamps[0] > "00:00:01" || stamps[len(stamps)-1] != "00:00:29.5" {
		t.Errorf("frames at %q, want the start to the end in time order", stamps)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("replay took %v: the frames were not spaced by the interval", d)
	}
	if !strings.Contains(out, "replay ×40") {
		t.Error("the replay does not say so")
	}
}

// --follow (llmrec record's own view) waits for a recording that has not
// started, then shows it live, never replaying it.
func TestTopFollowWaits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, &out, &out, []string{"top", dir, "--follow", "--interval", "250ms"}) }()
	time.Sleep(600 * time.Millisecond)
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "llmrec top") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "waiting for the recording: ") {
		t.Errorf("does not begin by waiting:\n%s", got)
	}
	if !strings.Contains(got, "llmrec top") || strings.Contains(got, "replay") {
		t.Errorf("want a live frame of the folder, no replay:\n%s", got)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// top --listen serves the view as a page on loopback only, with the mark
// endpoint's protections: its own Host, no other origin, and a frame only
// with the custom header. The page fetches nothing from elsewhere.
func TestTopListen(t *testing.T) {
	if _, _, err := runCLI("top", t.TempDir(), "--listen", "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("--listen 0.0.0.0:0: %v, want a loopback refusal", err)
	}
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	base := serveTop(t, dir)
	get := func(path string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get("", nil)
	if code != 200 || !strings.Contains(page, "X-Llmrec-Top") {
		t.Errorf("page: %d", code)
	}
	if strings.Contains(page, "src=") || strings.Contains(page, "href=") {
		t.Error("the page refers to an asset")
	}
	if code, _ := get("frame", nil); code != http.StatusForbidden {
		t.Errorf("frame without the header: %d, want 403", code)
	}
	if code, _ := get("frame", map[string]string{"X-Llmrec-Top": "1", "Host": "attacker.example:" + base[strings.LastIndex(base, ":")+1:len(base)-1]}); code != http.StatusForbidden {
		t.Errorf("frame for a rebound name: %d, want 403", code)
	}
	if code, _ := get("frame", map[string]string{"X-Llmrec-Top": "1", "Origin": "http://attacker.example"}); code != http.StatusForbidden {
		t.Errorf("frame for another origin: %d, want 403", code)
	}
	var frame string
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(frame, "00:00:29.5") && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, frame = get("frame", map[string]string{"X-Llmrec-Top": "1"})
	}
	if !strings.Contains(frame, "llmrec top") || !strings.Contains(frame, "vllm-0") || !strings.Contains(frame, "00:00:29.5") {
		t.Errorf("the frame served is not the replay's last:\n%s", frame)
	}
}

// serveTop runs llmrec top DIR --listen 127.0.0.1:0 (a replay at 100×, with
// extra flags) until the test ends, and returns the page's base URL as
// top printed it.
func serveTop(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &out, &errs, append([]string{"top", dir, "--listen", "127.0.0.1:0", "--speed", "100"}, extra...))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	var base string
	for deadline := time.Now().Add(5 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, rest, ok := strings.Cut(errs.String(), "serving "); ok {
			base, _, _ = strings.Cut(rest, " ")
		}
	}
	if base == "" {
		t.Fatalf("no address in %q", errs.String())
	}
	return base
}
