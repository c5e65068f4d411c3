package render_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
)

// reportOf records a short simulated vLLM run whose model name is model and
// in which a label set joins, then renders its page and summary.
func reportOf(t *testing.T, model string) (page, md []byte) {
	t.Helper()
	sc, err := sim.ParseScenario([]byte(`
name = "long-label"
duration = "6s"
[[engine]]
name = "vllm-0"
format = "vllm"
model = "m"
  [[engine.phase]]
  at = "0s"
  decode_tps = 500.0
  running = 4
  [[engine.event]]
  at = "3s"
  kind = "label_join"
  label = "1"
`), "long-label.toml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Engines[0].Model = model
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := render.FromAnalysis(render.Input{Result: res})
	if err != nil {
		t.Fatal(err)
	}
	var p, m bytes.Buffer
	if err := render.HTML(&p, rep); err != nil {
		t.Fatal(err)
	}
	if err := render.Markdown(&m, rep); err != nil {
		t.Fatal(err)
	}
	return p.Bytes(), m.Bytes()
}

// A label value of 10 KB (a broken or hostile engine's model_name, under
// the recorder's 16 KiB max_label_value_bytes, over which the page is
// stored unparsed) is clipped wherever the report names its label set: it
// is never copied whole, and the page grows by a few KB, not by the value
// times the number of notes and incidents that name it (a 100 KB
// model_name made a 21 MB page before).
func TestLongLabelValueIsClipped(t *testing.T) {
	long := "Q" + strings.Repeat("x", 10_000)
	page, md := reportOf(t, long)
	whole := []byte("Q" + strings.Repeat("x", 200))
	if n := bytes.Count(page, whole); n > 0 {
		t.Errorf("the page holds the long value %d times", n)
	}
	if n := bytes.Count(md, whole); n > 0 {
		t.Errorf("the summary holds the long value %d times", n)
	}
	if !bytes.Contains(page, []byte("10001 bytes")) {
		t.Error("the page does not say how long the clipped value was")
	}
	short, _ := reportOf(t, "m")
	if grew := len(page) - len(short); grew > 8<<10 {
		t.Errorf("the page grew by %d bytes for one long label value", grew)
	}
}
