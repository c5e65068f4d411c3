package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/internal/sharedtest"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/replay"
)

// realRun is the folder of a real run under ../shared/real-runs, or a skip
// (a failure under CI=true) where the shared material is absent.
func realRun(t *testing.T, rel string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "real-runs", rel)
	sharedtest.Need(t, dir, "real run "+rel)
	return dir
}

// scrapeRow is what the comparison reads of a row: not its samples.
type scrapeRow = capture.Scrape

// readRows reads every row of a run folder's segments, per endpoint in seq
// order.
func readRows(t *testing.T, dir string) map[string][]scrapeRow {
	t.Helper()
	run, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Journals()) > 0 {
		t.Fatalf("%s: journals left unsealed: %v", dir, run.Journals())
	}
	out := map[string][]scrapeRow{}
	for _, seg := range run.Segments {
		if err := capture.ReadScrapes(seg, capture.OmitSamples, func(r *scrapeRow) error {
			out[r.Endpoint] = append(out[r.Endpoint], *r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, rows := range out {
		for i := range rows {
			if rows[i].Seq != int64(i) {
				t.Fatalf("%s: row %d has seq %d", dir, i, rows[i].Seq)
			}
		}
	}
	return out
}

func digest(b []byte) [32]byte { return sha256.Sum256(b) }

// phaseFigures are a JSON analysis's named phases' figures, by phase and
// figure name (value nil when withheld, with the reason).
type phaseFigure struct {
	Value  *float64
	Reason string
}

func phaseFigures(t *testing.T, path string) map[string]map[string]phaseFigure {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Phases []struct {
			Name, Kind string
			Targets    []struct {
				Target  string
				Figures []struct {
					Name   string
					Value  *float64
					Reason string
				}
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]phaseFigure{}
	for _, p := range doc.Phases {
		if p.Kind != "named" {
			continue
		}
		out[p.Name] = map[string]phaseFigure{}
		for _, tg := range p.Targets {
			for _, f := range tg.Figures {
				out[p.Name][f.Name] = phaseFigure{f.Value, f.Reason}
			}
		}
	}
	return out
}

// TestReplayRealRecording: `sim --replay` of a real recording, recorded by
// the real `llmrec record` at the recording's interval ÷ speed, analyses
// equal to the recording itself. Equal means, stated precisely:
//
//   - Bodies: the replay's poll k of each endpoint (/metrics and /slots)
//     carries the body of the original's row k, byte-exact (same SHA-256),
//     so every counter value and every series is the same, in the same
//     order. The replay polls half an interval after the original's (a
//     --from of half an interval), so a poll lands on a neighbour only
//     when the recorder's tick is late by more than half the scaled
//     interval (25 ms at 20×): at most 10 % of polls may carry row k−1's
//     or k+1's body instead, never another, or be missed by a stalled
//     recorder or fail at its timeout of one scaled interval and carry
//     none (on a machine shared with other work: 0–2 of 214 polls when
//     this test ran alone, 20 while the package's other tests and other
//     sessions' work ran beside it). Polls after the
//     recording's end carry its last body (the replay holds it).
//   - Status, outcome and stored headers (the process-start digest
//     included) the same as the row's whose body was served.
//   - Phases: the recorded marks mapped onto the replay's wall clock (where
//     its polls carry the bodies recorded at the mark's time); each
//     named phase's decode and prompt tok/s (the engine's counters across
//     the phase) times 1/speed within 3 % of the original's (the replay's
//     poll times jitter by milliseconds against phases of 1–3 s), or
//     withheld alike with the same reason.
func TestReplayRealRecording(t *testing.T) {
	orig := filepath.Join(realRun(t, filepath.Join("llamacpp-b4748", "a-baseline")), "rec")
	const speed = 20.0
	r := replayRecorded(t, orig, time.Second, speed)
	comparePolls(t, orig, r.out)

	// The marks, onto the replay's wall clock where its polls carry the
	// bodies recorded then: poll k, answered with row k's body (its request
	// sent at S_k), went at the wall time of S_k + from, so a mark at m
	// goes to the wall time of m + from (from = Clock.Rec − rec.Start).
	marks, bad, err := capture.ReadMarks(orig)
	if err != nil || len(bad) > 0 || len(marks) == 0 {
		t.Fatalf("marks: %v %v (%d)", err, bad, len(marks))
	}
	c := r.srv.Clock()
	for _, m := range marks {
		m.TNs = c.Wall.UnixNano() + int64(float64(m.TNs-r.rec.Start)/speed)
		if _, err := capture.AppendMark(r.out, m); err != nil {
			t.Fatal(err)
		}
	}
	wantJSON, gotJSON := analyzeJSON(t, orig), analyzeJSON(t, r.out)
	wf, gf := phaseFigures(t, wantJSON), phaseFigures(t, gotJSON)
	if len(wf) == 0 || len(gf) != len(wf) {
		t.Fatalf("named phases: %d replayed, %d recorded", len(gf), len(wf))
	}
	for name, figs := range wf {
		for _, fig := range []string{"decode_tokens_per_second", "prompt_tokens_per_second"} {
			w, g := figs[fig], gf[name][fig]
			switch {
			case w.Value == nil || g.Value == nil:
				if (w.Value == nil) != (g.Value == nil) || w.Reason != g.Reason {
					t.Errorf("%s %s: replay %v (%s), recorded %v (%s)", name, fig, ptr(g.Value), g.Reason, ptr(w.Value), w.Reason)
				}
			case *w.Value == 0:
				if *g.Value != 0 {
					t.Errorf("%s %s: replay %g, recorded 0", name, fig, *g.Value)
				}
			default:
				rel := *g.Value / speed / *w.Value
				if math.Abs(rel-1) > 0.03 {
					t.Errorf("%s %s: replay %g ÷ %g = %g, recorded %g (%+.1f %%)", name, fig, *g.Value, speed, *g.Value/speed, *w.Value, 100*(rel-1))
				}
				t.Logf("%s %s: recorded %.1f, replay ÷ speed %.1f", name, fig, *w.Value, *g.Value/speed)
			}
		}
	}
}

// TestReplayRealRestart: the real run whose only evidence of a restart is
// llama.cpp's Process-Start-Time-Unix header (stored as digests), replayed
// at 25× and recorded at 200 ms: the polls carry the recorded bodies and
// headers as in TestReplayRealRecording, and the analysis of the replay
// finds the same header restart, from the same digest to the same digest.
func TestReplayRealRestart(t *testing.T) {
	orig := filepath.Join(realRun(t, filepath.Join("llamacpp-b4748", "e-restart-overtake")), "rec")
	r := replayRecorded(t, orig, 5*time.Second, 25)
	comparePolls(t, orig, r.out)
	want, got := headerRestarts(t, analyzeJSON(t, orig)), headerRestarts(t, analyzeJSON(t, r.out))
	if len(want) != 1 || !slices.Equal(got, want) {
		t.Errorf("header restarts: replay %q, recorded %q (want the one, alike)", got, want)
	}
}

// headerRestarts are the "changed from A to B" of an analysis's restarts
// found by a response header.
func headerRestarts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Incidents []struct{ Kind, Detail string }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range doc.Incidents {
		_, after, ok := strings.Cut(in.Detail, "response header ")
		if in.Kind != "restart" || !ok {
			continue
		}
		what, _, _ := strings.Cut(after, " at ")
		out = append(out, what)
	}
	return out
}

// replayed is a recording served by replay and recorded by llmrec record.
type replayed struct {
	rec *replay.Recording
	srv *replay.Server
	out string // the replay's recording
}

// replayRecorded serves the recording orig (recorded at interval) at
// speed, half an interval in (--from), and records it with the real
// "llmrec record" at interval ÷ speed, with orig's target, its process
// start header and its /slots endpoint, until its end and ten polls more.
func replayRecorded(t *testing.T, orig string, interval time.Duration, speed float64) replayed {
	t.Helper()
	scaled := time.Duration(float64(interval) / speed)
	rec, err := replay.Load(orig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := replay.Serve(ctx, rec, replay.Options{Speed: speed, From: interval / 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	target := srv.Targets()[0]
	if len(srv.Targets()) != 1 || target.Name != "llama" || target.MetricsURL == "" {
		t.Fatalf("served %+v, want the target llama with its /metrics", srv.Targets())
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "llmrec.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `interval = %q

[[target]]
name = "llama"
url = %q
process_start_header = "Process-Start-Time-Unix"

[[target.endpoint]]
path = "/slots"
once = false
`, scaled.String(), target.MetricsURL), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rec")
	span := time.Duration(rec.End - rec.Start)
	dur := time.Duration(float64(span)/speed) + 10*scaled
	if _, errOut, err := runCLI("record", "--out", out, "--config", cfg, "--duration", dur.String(), "--quiet"); err != nil {
		t.Fatalf("record: %v\n%s", err, errOut)
	}
	return replayed{rec: rec, srv: srv, out: out}
}

// comparePolls checks the replay's polls against the recording's rows
// (see TestReplayRealRecording for what is asserted).
func comparePolls(t *testing.T, orig, out string) {
	t.Helper()
	want, got := readRows(t, orig), readRows(t, out)
	for _, ep := range []string{capture.EndpointMetrics, "/slots"} {
		w, g := want[ep], got[ep]
		if len(w) == 0 || len(g) < len(w) {
			t.Fatalf("%s: %d replayed polls for %d recorded", ep, len(g), len(w))
		}
		off := 0
		for k := range g {
			i := min(k, len(w)-1) // after the end the last answer holds
			// A poll this machine could not make in time (the recorder
			// stalled: a missed tick; or its timeout of one scaled interval
			// passed) carries no body: counted with the neighbours' against
			// the same 10 %.
			if (g[k].Outcome == capture.OutcomeError || g[k].Outcome == capture.OutcomeMissed) && w[i].Outcome != g[k].Outcome {
				t.Logf("%s: replayed poll %d failed here: %s", ep, k, deref(g[k].Error))
				off++
				continue
			}
			j := -1
			for _, c := range []int{i, i - 1, i + 1} {
				if c >= 0 && c < len(w) && digest(g[k].Body) == digest(w[c].Body) {
					j = c
					break
				}
			}
			if j < 0 {
				t.Fatalf("%s: replayed poll %d (%s %s, first byte after %s) carries a body of no recorded row near %d:\n%.300s",
					ep, k, g[k].Outcome, deref(g[k].Error), time.Duration(g[k].FirstByteNs-g[k].StartNs), i, g[k].Body)
			}
			if j != i {
				off++
			}
			if g[k].Outcome != w[j].Outcome || status(g[k].Status) != status(w[j].Status) {
				t.Errorf("%s poll %d: %s %d, recorded %s %d", ep, k, g[k].Outcome, status(g[k].Status), w[j].Outcome, status(w[j].Status))
			}
			if g[k].Headers == nil || w[j].Headers == nil || *g[k].Headers != *w[j].Headers {
				t.Errorf("%s poll %d: headers %v, recorded %v", ep, k, deref(g[k].Headers), deref(w[j].Headers))
			}
		}
		if limit := max(len(w)/10, 1); off > limit {
			t.Errorf("%s: %d of %d polls carried a neighbour's body or failed here (at most %d)", ep, off, len(w), limit)
		}
		t.Logf("%s: %d polls, %d recorded, %d on a neighbour or failed here", ep, len(g), len(w), off)
	}
}

// analyzeJSON runs "llmrec analyze --json" over dir; the document's path.
func analyzeJSON(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "analysis.json")
	if _, errOut, err := runCLI("analyze", "--json", path, dir); err != nil {
		t.Fatalf("analyze %s: %v\n%s", dir, err, errOut)
	}
	return path
}

func ptr(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

func status(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// TestSimReplayCLI: "llmrec sim --replay" prints each target's URL on
// stdout and what it serves where on stderr, and says when the replay
// reached the recording's end.
func TestSimReplayCLI(t *testing.T) {
	orig := filepath.Join(realRun(t, filepath.Join("llamacpp-b4748", "a-baseline")), "rec")
	out, errOut, err := runCLI("sim", "--replay", orig, "--speed", "1000", "--now", "--duration", "1s")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, "llama http://127.0.0.1:") || !strings.HasSuffix(out, "/metrics\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("stdout %q, want one line: llama and its /metrics URL", out)
	}
	for _, want := range []string{
		"1 target(s), 428 answers over 3m33s of recording (213ms at 1000x)", "/metrics (214 answers), /slots (214 answers)",
		"the replay reached the recording's end; its last answers hold",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
