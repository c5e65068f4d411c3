package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render/browsertest"
)

// The page of top --listen in headless Chromium: it shows the frame (the
// replay's last, with the stalled and restarted engine's incidents), asks
// nothing of any other address, and logs no error (a CSP violation
// included).
func TestTopPageInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	base := serveTop(t, dir, "--interval", "250ms")
	p := b.OpenURL(t, base)
	var text string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var err error
		if text, err = browsertest.Eval[string](p, `document.getElementById("frame").textContent`); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "00:00:29.5") {
			break
		}
	}
	for _, want := range []string{"vllm-0", "llamacpp-0", "engine_stall", "restart", "00:00:29.5"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page's frame lacks %q:\n%s", want, text)
		}
	}
	n, err := browsertest.Eval[int](p, `document.querySelectorAll("#frame span.busy, #frame span.bad, #frame span.warn").length`)
	if err != nil || n == 0 {
		t.Errorf("no coloured state on the page (%d, %v)", n, err)
	}
	for _, r := range p.Requests() {
		if !strings.HasPrefix(r, base) {
			t.Errorf("the page asked for %s", r)
		}
	}
	for _, l := range p.Logs() {
		if strings.HasPrefix(l, "error: ") || strings.HasPrefix(l, "exception: ") {
			t.Errorf("page log: %s", l)
		}
	}
}
