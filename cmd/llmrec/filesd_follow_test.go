package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

const twoEngines = `
name = "two"
duration = "10m"
[[engine]]
name = "a"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 900.0
  prompt_tps = 2500.0
  running = 8
[[engine]]
name = "b"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 400.0
  prompt_tps = 1000.0
  running = 4
`

// A real `llmrec record --file-sd F` whose file is rewritten while it
// records, two simulated engines on loopback: b added mid-run joins, a
// removed leaves and comes back; the manifest holds their presence, and
// `llmrec analyze` reports the joins and leaves as incidents, a's absence
// as no gap, and the fleet with an engine absent.
func TestRecordFollowsFileSD(t *testing.T) {
	bin := buildBinary(t)
	srv := serveScenario(t, twoEngines, "two.toml", sim.Options{NoMemoryLog: true})
	addr := map[string]string{}
	for _, tg := range srv.Targets() {
		addr[tg.Name] = strings.TrimSuffix(strings.TrimPrefix(tg.MetricsURL, "http://"), "/metrics")
	}
	sd := filepath.Join(t.TempDir(), "fleet.json")
	write := func(names ...string) {
		var gs []map[string]any
		for _, n := range names {
			gs = append(gs, map[string]any{"targets": []string{addr[n]}, "labels": map[string]string{"llmrec_name": n, "llmrec_engine": "vllm"}})
		}
		b, _ := json.Marshal(gs)
		if err := os.WriteFile(sd+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(sd+".tmp", sd); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "record", "--out", dir, "--interval", "200ms", "--quiet", "--file-sd", sd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// wait until the manifest shows name's n-th join (leave: its n-th leave).
	wait := func(name string, n int, leave bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			ms, _ := filepath.Glob(filepath.Join(dir, "*.manifest.json"))
			if len(ms) == 1 {
				if m, err := capture.ReadManifest(ms[0]); err == nil {
					for _, tg := range m.Targets {
						got := 0
						for _, p := range tg.Presence {
							if !leave || p.LeaveNs != nil {
								got++
							}
						}
						if tg.Name == name && got >= n {
							return
						}
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s never showed join/leave %d (leave %v)\n%s", name, n, leave, stderr.String())
	}
	wait("a", 1, false)
	time.Sleep(500 * time.Millisecond)
	write("a", "b")
	wait("b", 1, false)
	time.Sleep(500 * time.Millisecond)
	write("b")
	wait("a", 1, true)
	time.Sleep(time.Second)
	write("a", "b")
	wait("a", 2, false)
	time.Sleep(600 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr.String())
	}

	js := filepath.Join(t.TempDir(), "a.json")
	// One named phase over the whole recording: a's figures in it are
	// differenced across its time away, and say so.
	phasesCSV := filepath.Join(t.TempDir(), "phases.csv")
	if err := os.WriteFile(phasesCSV, []byte("name,start,end\nall,0,4102444800\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runCLI("analyze", dir, "--quiet", "--phases", phasesCSV, "--json", js); err != nil {
		t.Fatalf("analyze: %v\n%s", err, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Incidents []struct {
			Kind       string
			Target     *string
			T          *float64
			Start, End *float64
		}
		Phases []struct {
			Name    string
			Targets []struct {
				Target string
				Bounds struct {
					Away float64 `json:"away_s"`
				}
			}
		}
		Targets []struct {
			Name string
			Busy struct {
				Bounds struct {
					Windows []struct{ Start, End float64 }
					Away    float64 `json:"away_s"`
				}
			}
		}
		Fleet struct {
			Summary struct {
				Joins        int `json:"joins"`
				Leaves       int `json:"leaves"`
				AbsentPoints int `json:"absent_points"`
			}
		}
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	var left, back float64
	for _, in := range res.Incidents {
		if in.Target != nil && (in.Kind == "target_join" || in.Kind == "target_leave") {
			got = append(got, in.Kind+"/"+*in.Target)
			if *in.Target == "a" && in.Kind == "target_leave" {
				left = *in.T
			} else if *in.Target == "a" {
				back = *in.T
			}
		}
	}
	if want := []string{"target_join/b", "target_leave/a", "target_join/a"}; !slices.Equal(got, want) {
		t.Errorf("incidents %v, want %v", got, want)
	}
	// A loaded machine may leave real gaps; none is a's time away.
	for _, in := range res.Incidents {
		if in.Target != nil && *in.Target == "a" && in.Start != nil && in.End != nil && *in.Start <= left && *in.End >= back {
			t.Errorf("a's absence (%.3f to %.3f) taken for a %s", left, back, in.Kind)
		}
	}
	// The busy figures say how much of their steady phases a was away.
	for _, tg := range res.Targets {
		want := 0.0
		for _, w := range tg.Busy.Bounds.Windows {
			if tg.Name == "a" {
				want += max(0, min(w.End, back)-max(w.Start, left))
			}
		}
		if math.Abs(tg.Busy.Bounds.Away-want) > 1e-6 {
			t.Errorf("%s: away %.3f s of its steady phases, want %.3f (windows %v, away %.3f to %.3f)", tg.Name, tg.Busy.Bounds.Away, want, tg.Busy.Bounds.Windows, left, back)
		}
		if want > 0 {
			t.Logf("%s: away %.3f s of its steady phases", tg.Name, want)
		}
	}
	sawA := false
	for _, ph := range res.Phases {
		if ph.Name != "all" {
			continue
		}
		for _, f := range ph.Targets {
			want := 0.0
			if f.Target == "a" {
				want, sawA = back-left, true
			}
			if math.Abs(f.Bounds.Away-want) > 1e-6 {
				t.Errorf("phase all, %s: away %.3f s, want %.3f", f.Target, f.Bounds.Away, want)
			}
		}
	}
	if !sawA {
		t.Errorf("no figures of a in the named phase all: %+v", res.Phases)
	}
	if s := res.Fleet.Summary; s.Joins != 2 || s.Leaves != 1 || s.AbsentPoints == 0 {
		t.Errorf("fleet summary %+v", s)
	}
}
