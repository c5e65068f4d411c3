package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/render/browsertest"
)

// writeReport renders r into a fresh folder and returns the file's path.
func writeReport(t *testing.T, r render.Report) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := render.HTML(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadAndDraw opens the report and waits for every chart; it fails the
// test on any console error, dialog or request beyond the file.
func loadAndDraw(t *testing.T, b *browsertest.Browser, path string) *browsertest.Page {
	t.Helper()
	p := b.Open(t, path)
	d, err := p.WaitCharts(20 * time.Second)
	if err != nil {
		t.Fatalf("%v\nconsole: %q", err, p.Logs())
	}
	t.Logf("%d charts drawn; page script ran %.0f ms and the first chart was drawn %.0f ms after navigation start", d.Drawn, d.Script, d.First)
	canvases, err := p.Canvases()
	if err != nil {
		t.Fatal(err)
	}
	if len(canvases) != d.Total || d.Total == 0 {
		t.Fatalf("%d chart containers, the page counted %d", len(canvases), d.Total)
	}
	for _, c := range canvases {
		if !c.Instance || c.Canvases == 0 || c.Width < 100 || c.Height < 100 {
			t.Errorf("chart %s did not draw: %+v", c.ID, c)
		}
	}
	return p
}

func checkClean(t *testing.T, p *browsertest.Page) {
	t.Helper()
	if problems := p.Problems(); len(problems) > 0 {
		t.Errorf("the page misbehaved:\n%s", strings.Join(problems, "\n"))
	}
	reqs := p.Requests()
	if len(reqs) == 0 || !strings.HasPrefix(reqs[0], "file://") {
		t.Errorf("requests %q: the page's own load was not seen, so the request check saw nothing", reqs)
	}
}

func contains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q does not contain %q", what, got, w)
		}
	}
}

// TestBrowser loads reports in one headless Chromium, in two tabs at once.
func TestBrowser(t *testing.T) {
	b := browsertest.Start(t)
	t.Run("report", func(t *testing.T) { t.Parallel(); testBrowserReport(t, b) })
	t.Run("hostile", func(t *testing.T) { t.Parallel(); testBrowserHostile(t, b) })
}

// The report loads offline with no console error and no request, every
// chart draws, and hovering a value shows its provenance: in a chart's
// tooltip, for a refused point, for a bar and for a table number.
func testBrowserReport(t *testing.T, b *browsertest.Browser) {
	p := loadAndDraw(t, b, writeReport(t, sampleReport(t, plain, 120)))

	tip, err := p.HoverChart("t0-decode", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "decode tooltip", tip, "vllm:generation_tokens_total", "computed:Δvllm:generation_tokens_total/Δt over Δ2.", "(derived)", "tokens/s", "+0:20")

	tip, err = p.HoverChart("t0-decode", 0, 41) // poll 41 was refused: stale
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "refused point tooltip", tip, "no value", "refused (stale)", "over Δ0.4s", "refused window: stale ×3")

	tip, err = p.HoverChart("t0-decode", 0, 78) // in the incident, +2:30 to +2:50
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "incident tooltip", tip, "restart/down/stall: incident 1: queueing on vllm-a")

	tip, err = p.HoverChart("t0-kv", 0, 30)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "kv tooltip", tip, " %", "vllm:kv_cache_usage_perc (read; severity")

	tip, err = p.HoverChart("settle", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "bar tooltip", tip, "60s", "refused (ceiling)")

	prov, err := p.HoverProv("#t0-target td.num[data-prov]")
	if err != nil {
		t.Fatal(err)
	}
	if want := "computed:Δvllm:generation_tokens_total/Δt over Δ2.0s (derived)"; prov != want {
		t.Errorf("table provenance %q, want %q", prov, want)
	}
	prov, err = p.HoverProv(".verdict.warn [data-prov]")
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "verdict provenance", prov, "over Δ20.0s")
	checkClean(t, p)
}

// Labels, model names, target names, series names and config values that
// hold HTML and go-echarts' __f__ marker show as text and run nothing.
func testBrowserHostile(t *testing.T, b *browsertest.Browser) {
	p := loadAndDraw(t, b, writeReport(t, sampleReport(t, hostile, 20)))
	type dom struct {
		Imgs, Scripts int
		Text          string
		Title         string
		Pwned         bool
	}
	d, err := browsertest.Eval[dom](p, `({imgs: document.querySelectorAll('img').length, scripts: document.scripts.length,
		text: document.body.innerText, title: document.title, pwned: typeof window.__pwned !== 'undefined'})`)
	if err != nil {
		t.Fatal(err)
	}
	if d.Imgs != 0 || d.Pwned {
		t.Errorf("the hostile strings made elements or ran code: %+v", d)
	}
	if want := 2 + 9; d.Scripts != want {
		t.Errorf("%d script elements, want %d (ECharts, the page's, 9 chart specs)", d.Scripts, want)
	}
	contains(t, "page text", d.Text, evilHTML+evilFunc)
	contains(t, "title", d.Title, evilHTML)
	tip, err := p.HoverChart("t0-decode", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "tooltip", tip, evilHTML+evilFunc)
	prov, err := p.HoverProv("#t0-target td.num[data-prov]")
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "table provenance", prov, evilHTML+evilFunc)
	if n, err := browsertest.Eval[int](p, `document.querySelectorAll('img').length`); err != nil || n != 0 {
		t.Errorf("after hovering, %d img elements (%v)", n, err)
	}
	checkClean(t, p)
}

// BenchmarkBrowser24h8 loads the page of the 24-hour run of 8 engines in
// headless Chromium: ms to the first drawn chart and to the last, from the
// start of navigation (ECharts alone takes about half a second to load).
func BenchmarkBrowser24h8(b *testing.B) {
	path := filepath.Join(b.TempDir(), "report.html")
	var buf bytes.Buffer
	if err := render.HTML(&buf, longReport(b)); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	br := browsertest.Start(b)
	p := br.Open(b, path)
	var first, all float64
	n := 0
	for b.Loop() {
		if n > 0 {
			if err := p.Reload(); err != nil {
				b.Fatal(err)
			}
		}
		d, err := p.WaitCharts(60 * time.Second)
		if err != nil {
			b.Fatal(err)
		}
		done, err := browsertest.Eval[float64](p, `performance.now()`)
		if err != nil {
			b.Fatal(err)
		}
		first += d.First
		all += done
		n++
	}
	if problems := p.Problems(); len(problems) > 0 {
		b.Fatalf("the page misbehaved: %q", problems)
	}
	b.ReportMetric(first/float64(n), "ms-first-chart")
	b.ReportMetric(all/float64(n), "ms-all-charts")
	b.ReportMetric(float64(buf.Len()), "bytes/report")
}
