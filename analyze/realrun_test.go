package analyze

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/internal/sharedtest"
)

// realRuns are real llama.cpp recordings with their client's truth
// (../shared/real-runs, README there), relative to this package.
const realRuns = "../../shared/real-runs/llamacpp-b4748"

// realRun analyses one real run twice: with its phases.csv (the marks
// naming the same phases join them: one set) and by its marks alone; it
// skips where the shared folder is absent, and fails under CI=true.
func realRun(t *testing.T, name string) (byFile, byMarks *Result, truth []truthRow) {
	t.Helper()
	dir := filepath.Join(realRuns, name)
	sharedtest.Need(t, filepath.Join(dir, "truth.csv"), "real run "+name)
	ps, err := phases.ReadFile(filepath.Join(dir, "phases.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		res **Result
		ps  []phases.Phase
	}{{&byFile, ps}, {&byMarks, nil}} {
		res, err := Analyze(Options{Dirs: []string{filepath.Join(dir, "rec")}, Phases: o.ps, SkipPolls: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Close() })
		*o.res = res
	}
	return byFile, byMarks, readRunTruth(t, filepath.Join(dir, "truth.csv"))
}

// truthRow is one phase of a truth.csv: the client's own tokens/s.
type truthRow struct {
	phase          string
	clients        int
	decode, prompt float64
}

func readRunTruth(t *testing.T, path string) []truthRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var out []truthRow
	for _, r := range recs[1:] {
		n, _ := strconv.Atoi(r[col["clients"]])
		d, err1 := strconv.ParseFloat(r[col["decode_tok_s"]], 64)
		p, err2 := strconv.ParseFloat(r[col["prompt_tok_s"]], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", path, err1, err2)
		}
		out = append(out, truthRow{r[col["phase"]], n, d, p})
	}
	return out
}

// phaseFigure is a named phase's figure on target llama, from one source
// (file: --phases; mark: the recording's marks).
func phaseFigure(t *testing.T, res *Result, target, source, phase, figure string) (phases.Figure, phases.Bounds) {
	t.Helper()
	for _, m := range res.Phases {
		if m.Kind != "named" || m.Source != source || m.Name != phase {
			continue
		}
		for _, tg := range m.Targets {
			if tg.Target != target {
				continue
			}
			for _, f := range tg.Figures {
				if f.Name == figure {
					return f, tg.Bounds
				}
			}
		}
	}
	t.Fatalf("no %s phase %s figure %s on %s", source, phase, figure, target)
	return phases.Figure{}, phases.Bounds{}
}

// checkPhase: a load phase within tol of the client's truth, an idle one
// exactly 0.
//
// wider names figures allowed a wider tolerance, by source/phase/figure.
func checkPhase(t *testing.T, res *Result, source string, tr truthRow, tol float64, wider map[string]float64) {
	t.Helper()
	base := tol
	for _, c := range []struct {
		figure string
		truth  float64
	}{{"decode_tokens_per_second", tr.decode}, {"prompt_tokens_per_second", tr.prompt}} {
		f, b := phaseFigure(t, res, "llama", source, tr.phase, c.figure)
		tol := base
		if w, ok := wider[source+"/"+tr.phase+"/"+c.figure]; ok {
			tol = w
		}
		switch {
		case !f.Value.Valid:
			t.Errorf("%s %s %s: withheld (%s), truth %.1f", source, tr.phase, c.figure, f.Reason, c.truth)
		case tr.clients == 0 && f.Value.V != 0:
			t.Errorf("%s %s %s = %v, an idle phase reads exactly 0", source, tr.phase, c.figure, f.Value.V)
		case tr.clients > 0 && math.Abs(f.Value.V-c.truth) > tol*c.truth:
			t.Errorf("%s %s %s = %.1f, truth %.1f (%+.1f %%, over %d process(es), restarts left out %v, from 0 %v)", source, tr.phase,
				c.figure, f.Value.V, c.truth, 100*(f.Value.V-c.truth)/c.truth, b.Processes, b.RestartsLeftOut, b.FromZero)
		}
	}
}

func countKind(res *Result, kind string) (n int, details []string) {
	for _, in := range res.Incidents {
		if in.Kind == kind {
			n++
			details = append(details, in.Detail)
		}
	}
	return n, details
}

// markMisses are a-baseline's figures still off by more than 2 % by the
// marks: load-1client's mark starts 10–20 ms after phases.csv's start,
// after the poll at 15:58:27.562, so its first interval and the first
// request's prompt (added in one request-sized step at its prefill) are
// outside it: prompt −2.3 % (decode −0.1 %). Request-sized steps at phase
// edges are issue 21 item 2's.
var markMisses = map[string]float64{"mark/load-1client/prompt_tokens_per_second": 0.03}

// A clean real llama.cpp run (b4748, 1 s cadence) reads clean: no restart
// (its n_busy_slots_per_decode is typed counter but a lifetime average,
// which falls at almost every poll once load changes), every load phase
// within 2 % of the client's truth by --phases and by the marks, every idle
// phase exactly 0; the lifetime average is listed once as mistyped.
func TestRealRunCleanReadsClean(t *testing.T) {
	res, marked, truth := realRun(t, "a-baseline")
	for _, k := range []string{findings.KindRestart, findings.KindHostStall, findings.KindGap} {
		if n, d := countKind(res, k); n != 0 {
			t.Errorf("%d %s incidents in a clean run, want 0: %v", n, k, d[:min(3, len(d))])
		}
	}
	for _, tr := range truth {
		checkPhase(t, res, "file", tr, 0.02, nil)
		checkPhase(t, marked, "mark", tr, 0.02, markMisses)
	}
	var mis []string
	for _, tg := range res.Targets {
		for _, m := range tg.MistypedSeries {
			mis = append(mis, m.Family)
		}
	}
	if strings.Join(mis, " ") != "llamacpp:n_busy_slots_per_decode" {
		t.Errorf("mistyped series %v, want n_busy_slots_per_decode once", mis)
	}
}

// A SIGKILL restart whose new process passed the old counters before the
// next 5 s poll is found once, from llama.cpp's own Process-Start-Time-Unix
// header; the phase after it is measured per process, the new one counted
// from 0 (its first poll holds all it did since it started), within 2 % of
// the client's truth.
func TestRealRunHeaderRestartFoundOnce(t *testing.T) {
	res, marked, truth := realRun(t, "e-restart-overtake")
	n, d := countKind(res, findings.KindRestart)
	if n != 1 || !strings.Contains(d[0], "Process-Start-Time-Unix") {
		t.Fatalf("restart incidents %d %v, want the header restart once", n, d)
	}
	for _, tr := range truth {
		if tr.phase == "load-8clients-after-restart" {
			checkPhase(t, res, "file", tr, 0.02, nil)
			checkPhase(t, marked, "mark", tr, 0.02, nil)
			if _, b := phaseFigure(t, res, "llama", "file", tr.phase, "decode_tokens_per_second"); len(b.FromZero) != 1 {
				t.Errorf("%s: from zero %v, want the new process once", tr.phase, b.FromZero)
			}
		}
		if tr.clients == 0 {
			checkPhase(t, res, "file", tr, 0, nil)
		}
	}
}

// A real llama.cpp run whose phases were both marked while recording
// (rec/marks.jsonl) and written to phases.csv: given the file, each phase
// is listed once, with the file's bounds, and says it was marked too.
func TestRealFileAndMarksOneSet(t *testing.T) {
	res, _, _ := realRun(t, "a-baseline")
	file, err := phases.ReadFile(filepath.Join(realRuns, "a-baseline", "phases.csv"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range res.Output.Phases {
		if m.Kind == phases.KindNamed {
			seen[m.Name]++
		}
	}
	if len(seen) != len(file) {
		t.Errorf("named phases %v, want the file's %d", seen, len(file))
	}
	for _, p := range file {
		if seen[p.Name] != 1 {
			t.Errorf("phase %q listed %d times, want once", p.Name, seen[p.Name])
		}
	}
	for _, m := range res.Output.Phases {
		if m.Kind == phases.KindNamed && (m.Source != phases.SourceFile || !strings.Contains(m.Why, "marked too")) {
			t.Errorf("phase %q: source %s, why %q: want the file's, marked too", m.Name, m.Source, m.Why)
		}
	}
}
