// Package browsertest loads a report in headless Chromium, driven through
// the DevTools protocol with chromedp, and tells what the page did: what it
// wrote to the console, every request it made, every dialog it opened,
// which charts it drew, and what its tooltips say.
//
// It uses Debian's Chromium (/usr/bin/chromium, apt-get install chromium),
// started with Flags and a fresh user data folder per browser. Start skips
// the test when Chromium is not installed, except when the environment has
// CI=true: then it fails, so CI cannot pass without the browser test.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path is where Debian installs Chromium.
const Path = "/usr/bin/chromium"

// Flags are the flags Chromium is started with, besides --user-data-dir
// (a fresh folder) and the DevTools pipe that chromedp adds.
var Flags = []string{
	"headless", "no-sandbox", "disable-gpu", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync",
}

// Timeout bounds the start of the browser and each step of a test.
const Timeout = 30 * time.Second

// Browser is a running Chromium. It is killed when the test ends.
type Browser struct {
	ctx context.Context // the browser's first tab
}

// Start starts Chromium for tb and kills it in tb's cleanup. It skips tb
// when Chromium is absent, unless CI=true.
func Start(tb testing.TB) *Browser {
	tb.Helper()
	if _, err := os.Stat(Path); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("browser test: %s is missing (apt-get install -y chromium); CI must run it", Path)
		}
		tb.Skipf("browser test skipped: %s is missing (apt-get install -y chromium)", Path)
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(Path), chromedp.UserDataDir(tb.TempDir())}
	for _, f := range Flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancel()      // closes the tab and the browser
		cancelAlloc() // kills the process if it is still there, and waits for it
	})
	// The first Do starts the browser, which lives as long as the context
	// Do is given: so give it ctx itself, and bound the wait with a timer.
	slow := time.AfterFunc(Timeout, cancel)
	err := chromedp.Do(ctx)
	if !slow.Stop() {
		err = fmt.Errorf("no answer in %v: %w", Timeout, err)
	}
	if err != nil {
		tb.Fatalf("browser test: start %s: %v", Path, err)
	}
	return &Browser{ctx: ctx}
}

// Page is a page loaded in a tab of the browser, with a record of what it
// did since before it started to load.
type Page struct {
	ctx  context.Context
	url  string
	mu   sync.Mutex
	logs []string // console messages, exceptions, browser log entries: "level: text"
	reqs []string // URLs of every request
	dlgs []string // dialogs opened
}

// Open loads the file at path in a new tab and waits for its load event.
// The tab closes when the test ends.
func (b *Browser) Open(tb testing.TB, path string) *Page {
	tb.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b.OpenURL(tb, (&url.URL{Scheme: "file", Path: abs}).String())
}

// OpenURL loads u (a page served on loopback, say) in a new tab and waits
// for its load event. The tab closes when the test ends.
func (b *Browser) OpenURL(tb testing.TB, u string) *Page {
	tb.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	tb.Cleanup(cancel)
	p := &Page{ctx: ctx, url: u}
	// Listen calls fn in the order of the browser's messages, before the
	// reply to any later command: once a later command returns, every
	// event before it is recorded.
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			p.log(string(ev.Type), argsText(ev.Args))
		case *runtime.EventExceptionThrown:
			p.log("exception", exceptionText(ev.ExceptionDetails))
		case *log.EventEntryAdded:
			if ev.Entry != nil {
				p.log(string(ev.Entry.Level), string(ev.Entry.Source)+": "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if ev.Request != nil {
				p.mu.Lock()
				p.reqs = append(p.reqs, ev.Request.URL+ev.Request.URLFragment)
				p.mu.Unlock()
			}
		case *page.EventJavascriptDialogOpening:
			p.mu.Lock()
			p.dlgs = append(p.dlgs, string(ev.Type)+": "+ev.Message)
			p.mu.Unlock()
			// A dialog blocks the page: dismiss it from another goroutine.
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	})
	if err != nil {
		tb.Fatalf("browser test: listen: %v", err)
	}
	step, stop := context.WithTimeout(ctx, Timeout)
	defer stop()
	if err := chromedp.Do(step, chromedp.Navigate(u)); err != nil {
		tb.Fatalf("browser test: load %s: %v", u, err)
	}
	return p
}

func (p *Page) log(level, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logs = append(p.logs, level+": "+text)
}

func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == nil:
		case len(a.Value) > 0:
			parts = append(parts, strings.Trim(string(a.Value), `"`))
		default:
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "exception"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", s, d.URL, d.LineNumber, d.ColumnNumber)
}

// Problems returns what a report must never do: console errors and
// uncaught exceptions, error entries of the browser log (such as a
// Content-Security-Policy violation), dialogs, and requests for anything
// but the page itself and data: URLs.
func (p *Page) Problems() []string {
	// A round trip makes sure that every earlier event was recorded.
	_, _ = Eval[int](p, "0")
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.logs {
		if strings.HasPrefix(l, "error: ") || strings.HasPrefix(l, "assert: ") || strings.HasPrefix(l, "exception: ") {
			out = append(out, "console "+l)
		}
	}
	for _, d := range p.dlgs {
		out = append(out, "dialog "+d)
	}
	for _, r := range p.reqs {
		if r != p.url && !strings.HasPrefix(r, "data:") {
			out = append(out, "request "+r)
		}
	}
	return out
}

// Logs returns every console message and browser log entry so far.
func (p *Page) Logs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.logs...)
}

// Requests returns the URL of every request the page made, the page's own
// first.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reqs...)
}

// Eval evaluates a JavaScript expression in the page and decodes its value.
func Eval[T any](p *Page, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// Drawn is the state the page's script keeps in window.llmrecReport.
type Drawn struct {
	Total  int      `json:"total"`  // charts on the page
	Drawn  int      `json:"drawn"`  // charts ECharts finished drawing
	Script float64  `json:"script"` // ms from navigation start to the start of the page's script (ECharts loaded)
	First  float64  `json:"first"`  // ms from navigation start to the first drawn chart; -1 before
	Errors []string `json:"errors"` // charts that failed
}

// WaitCharts waits until every chart of the page is drawn, or one failed,
// or timeout passes.
func (p *Page) WaitCharts(timeout time.Duration) (Drawn, error) {
	deadline := time.Now().Add(timeout)
	for {
		d, err := Eval[Drawn](p, `window.llmrecReport || {total: -1, drawn: 0, first: -1, errors: []}`)
		if err != nil {
			return d, fmt.Errorf("read chart state: %w", err)
		}
		switch {
		case len(d.Errors) > 0:
			return d, fmt.Errorf("charts failed: %s", strings.Join(d.Errors, "; "))
		case d.Total >= 0 && d.Drawn >= d.Total:
			return d, nil
		case time.Now().After(deadline):
			return d, fmt.Errorf("%d of %d charts drawn after %v", d.Drawn, d.Total, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Canvas is what a chart's container holds.
type Canvas struct {
	ID       string  `json:"id"`
	Instance bool    `json:"instance"` // echarts.getInstanceByDom found the chart
	Canvases int     `json:"canvases"`
	Width    float64 `json:"width"` // of the first canvas, CSS pixels
	Height   float64 `json:"height"`
}

// Canvases returns, for every chart container of the page, whether
// ECharts holds it and the size of what it drew.
func (p *Page) Canvases() ([]Canvas, error) {
	return Eval[[]Canvas](p, `Array.from(document.querySelectorAll('div.chart[data-spec]')).map(function (div) {
		var c = div.querySelector('canvas'), r = c ? c.getBoundingClientRect() : {width: 0, height: 0};
		return {id: div.id, instance: !!echarts.getInstanceByDom(div), canvases: div.querySelectorAll('canvas').length, width: r.width, height: r.height};
	})`)
}

// point is a place in the viewport, in CSS pixels.
type point struct {
	X, Y float64
	OK   bool
	Err  string
}

// hover moves the mouse to the place where (which scrolls it into view).
func (p *Page) hover(where string) error {
	at, err := Eval[point](p, where)
	if err != nil {
		return err
	}
	if !at.OK {
		return errors.New(at.Err)
	}
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	// Move away first, so that the move below is a change ECharts sees.
	return chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 0, 0),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X, at.Y),
	)
}

// waitText polls a JavaScript expression until it gives a non-empty string.
func (p *Page) waitText(expr string) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := Eval[string](p, expr)
		if err != nil {
			return "", err
		}
		if s != "" {
			return s, nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("nothing shown after 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HoverChart moves the mouse over data item index of series series of the
// chart with DOM id id, and returns the text of the tooltip that shows. A
// null item is hovered at its x, halfway up the chart.
func (p *Page) HoverChart(id string, series, index int) (string, error) {
	where := fmt.Sprintf(`(function (id, s, i) {
		var div = document.getElementById(id);
		if (!div) return {ok: false, err: 'no chart ' + id};
		div.scrollIntoView({block: 'center'});
		var chart = echarts.getInstanceByDom(div);
		if (!chart) return {ok: false, err: 'chart ' + id + ' is not drawn'};
		var series = chart.getOption().series[s];
		if (!series || !series.data || i >= series.data.length) return {ok: false, err: 'no item ' + i + ' in series ' + s};
		var item = series.data[i], v = Array.isArray(item) ? item : item.value;
		var r = div.getBoundingClientRect();
		var px = chart.convertToPixel({seriesIndex: s}, [v[0], v[1] === null ? 0 : v[1]]);
		var y = v[1] === null ? r.height / 2 : px[1];
		return {ok: isFinite(px[0]) && isFinite(y), x: r.left + px[0], y: r.top + y, err: 'item ' + i + ' has no place'};
	})(%q, %d, %d)`, id, series, index)
	if err := p.hover(where); err != nil {
		return "", fmt.Errorf("hover chart %s: %w", id, err)
	}
	text, err := p.waitText(fmt.Sprintf(`(function () {
		var t = document.querySelector('#%s .llmrec-tip');
		if (!t || getComputedStyle(t).display === 'none' || getComputedStyle(t).visibility === 'hidden' || getComputedStyle(t).opacity === '0') return '';
		return t.textContent;
	})()`, id))
	if err != nil {
		return "", fmt.Errorf("tooltip of chart %s: %w", id, err)
	}
	return text, nil
}

// HoverProv moves the mouse over the first element matching the CSS
// selector and returns the provenance tooltip the page shows for it.
func (p *Page) HoverProv(selector string) (string, error) {
	where := fmt.Sprintf(`(function (sel) {
		var el = document.querySelector(sel);
		if (!el) return {ok: false, err: 'nothing matches ' + sel};
		el.scrollIntoView({block: 'center'});
		// The first box of an inline element that wraps: the middle of its
		// bounding box can lie between its lines.
		var r = el.getClientRects()[0] || el.getBoundingClientRect();
		return {ok: true, x: r.left + Math.min(r.width / 2, 20), y: r.top + r.height / 2};
	})(%q)`, selector)
	if err := p.hover(where); err != nil {
		return "", fmt.Errorf("hover %s: %w", selector, err)
	}
	text, err := p.waitText(`(function () { var t = document.getElementById('prov-tip'); return t && !t.hidden ? t.textContent : ''; })()`)
	if err != nil {
		return "", fmt.Errorf("provenance of %s: %w", selector, err)
	}
	return text, nil
}

// Screenshot returns a PNG of the whole page.
func (p *Page) Screenshot() ([]byte, error) {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.FullScreenshot(100))
}

// ScreenshotOf returns a PNG of the first element matching the CSS
// selector.
func (p *Page) ScreenshotOf(selector string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(selector)))
}

// Reload loads the page again, and returns when its load event fired.
func (p *Page) Reload() error {
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	return chromedp.Do(ctx, chromedp.Navigate(p.url))
}
