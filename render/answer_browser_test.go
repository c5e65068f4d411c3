package render_test

import (
	"os"
	"testing"

	"github.com/llmrec/llmrec/render/browsertest"
)

// viewshot writes what the viewport shows to $LLMREC_SHOT-NAME.png when
// LLMREC_SHOT is set (to look at a first screen).
func viewshot(t *testing.T, p *browsertest.Page, name string) {
	t.Helper()
	shot := os.Getenv("LLMREC_SHOT")
	if shot == "" {
		return
	}
	png, err := p.Viewshot()
	if err == nil {
		err = os.WriteFile(shot+"-"+name+".png", png, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// On a 1400×900 first screen the answer table is visible whole, above
// the findings and the run's metadata, for the shipped recording and for
// eight engines.
func TestAnswerOnFirstScreen(t *testing.T) {
	b := browsertest.Start(t)
	for name, r := range map[string]func(*testing.T) string{
		"shipped":   func(t *testing.T) string { return writeReport(t, findingsReport(t)) },
		"8 engines": func(t *testing.T) string { return writeReport(t, fleetReport(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			// The answer is laid out before any chart: no need to wait for them.
			p := b.Open(t, r(t))
			defer checkClean(t, p)
			if err := p.SetViewport(1400, 900); err != nil {
				t.Fatal(err)
			}
			viewshot(t, p, name)
			type box struct{ Top, Bottom, Right float64 }
			got, err := browsertest.Eval[map[string]box](p, `(function () {
				window.scrollTo(0, 0);
				var out = {};
				var q = {answer: "#answer table", findings: "section.verdicts", run: "#run"};
				for (var k in q) { var e = document.querySelector(q[k]); if (e) { var r = e.getBoundingClientRect(); out[k] = {Top: r.top, Bottom: r.bottom, Right: r.right}; } }
				return out;
			})()`)
			if err != nil {
				t.Fatal(err)
			}
			a, ok := got["answer"]
			if !ok {
				t.Fatal("the page has no answer table")
			}
			if a.Top < 0 || a.Bottom > 900 || a.Right > 1400 {
				t.Errorf("the answer table spans %+v, not inside the 1400×900 first screen", a)
			}
			if f, ok := got["findings"]; !ok || f.Top < a.Bottom {
				t.Errorf("the findings (%+v) are not under the answer (%+v)", f, a)
			}
			if r, ok := got["run"]; !ok || r.Top < a.Bottom {
				t.Errorf("the run's metadata (%+v) is not under the answer (%+v)", r, a)
			}
		})
	}
}
