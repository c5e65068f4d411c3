package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/render/browsertest"
)

const payload = `</script><img src=x onerror=alert(1)>__f__(function(){alert(2)})__f__`

// mdPayload is what could make a link, an image, a mention, a heading or a
// table cell of a value pasted into a pull request.
const mdPayload = "a|b\n# heading\n[x](http://evil.example/) ![i](http://evil.example/i.png) <http://evil.example> " +
	"https://evil.example/p www.evil.example mail@evil.example @someone #12 <img src=y> `code` **bold**"

// A recording whose model name and label values hold markup and go-echarts'
// function markers goes through record, analyze and render: the page holds
// them only as text and, in Chromium, nothing runs and nothing is fetched.
func TestHostileLabelsThroughThePipeline(t *testing.T) {
	sc, err := sim.ParseScenario([]byte(`
name = "hostile"
duration = "20s"
[[engine]]
name = "vllm-0"
format = "vllm"
model = "m"
  [[engine.phase]]
  at = "0s"
  decode_tps = 500.0
  running = 4
  [[engine.event]]
  at = "8s"
  kind = "label_join"
  label = "1"
`), "hostile.toml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Engines[0].Model = payload + mdPayload
	sc.Engines[0].Events[0].Label = mdPayload + payload
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := render.FromAnalysis(render.Input{Result: res, Title: payload})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := render.HTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page.Bytes(), []byte("<img src=x")) {
		t.Fatal("the page holds the payload as markup")
	}
	var md bytes.Buffer
	if err := render.Markdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "<img src=x") {
		t.Fatal("the summary holds the payload as markup")
	}
	if !strings.Contains(md.String(), "evil") {
		t.Fatal("the summary does not show the hostile label at all: the check below would see nothing")
	}
	checkSummary(t, "hostile", md.String(), rep, 60)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t)
	p := loadAndDraw(t, b, path)
	checkClean(t, p)
	title, err := browsertest.Eval[string](p, `document.querySelector("h1").textContent`)
	if err != nil || !strings.Contains(title, "<img src=x") {
		t.Errorf("the title shows %q (%v), want the payload as text", title, err)
	}
	imgs, err := browsertest.Eval[int](p, `document.querySelectorAll("img").length`)
	if err != nil || imgs != 0 {
		t.Errorf("%d <img> elements (%v)", imgs, err)
	}
}
