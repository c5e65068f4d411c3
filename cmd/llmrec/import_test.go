package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/promtest"
	"github.com/llmrec/llmrec/record/sim"
)

// A recording exported to OpenMetrics, loaded by a real promtool into a
// real prometheus and imported back holds every sample of every ok scrape
// at its millisecond with its value, and analyses to the same phases and
// phase figures: counts and quantiles equal, rates within what a
// millisecond at each end of a phase moves them.
func TestImportPrometheusRoundTrip(t *testing.T) {
	promtool := promtest.Tool(t, "promtool")
	promtest.Tool(t, "prometheus")
	dir := filepath.Join(t.TempDir(), "run")
	sc := sim.LongScenario(4, 4*time.Minute, 3)
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second, Seed: 3}, 0, nil); err != nil {
		t.Fatal(err)
	}
	om := filepath.Join(t.TempDir(), "run.om")
	if _, _, err := runCLI("export", dir, "--openmetrics", "-o", om); err != nil {
		t.Fatal(err)
	}
	blocks := t.TempDir()
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, blocks).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	srv := promtest.Start(t, blocks)

	back := filepath.Join(t.TempDir(), "back")
	start, end := sc.Start.UTC(), sc.Start.Add(sc.Duration+time.Second).UTC()
	// Credentials in the URL: sent, never printed or written.
	withCreds := strings.Replace(srv.URL, "http://", "http://reader:hunter2@", 1)
	stdout, stderr, err := runCLI("import", "prometheus", "--url", withCreds, "--match", `{llmrec_run=~".+"}`,
		"--target-label", "llmrec_target", "--start", start.Format(time.RFC3339), "--end", end.Format(time.RFC3339),
		"--chunk", "90s", "-o", back)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	noSecret(t, "hunter2", stdout+stderr, back)

	want, wantRows := okSamples(t, dir)
	got, gotRows := okSamples(t, back)
	if gotRows != wantRows || len(got) != len(want) {
		t.Errorf("imported %d rows, %d samples; recorded %d ok rows, %d samples", gotRows, len(got), wantRows, len(want))
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("recorded %s, not imported", k)
		}
		if g != v && !(math.IsNaN(g) && math.IsNaN(v)) {
			t.Fatalf("%s: imported %v, recorded %v", k, g, v)
		}
	}
	t.Logf("%d rows, %d samples compared", gotRows, len(want))

	a := analyzeDir(t, dir)
	b := analyzeDir(t, back)
	samePhases(t, a, b)
	// The import says what it is, in the analysis and in the report.
	for _, tg := range b.Targets {
		if tg.Imported == nil || tg.Imported.Bodies != "absent" || len(tg.Imported.NotApplicable) == 0 {
			t.Fatalf("target %s: imported %+v", tg.Name, tg.Imported)
		}
		if tg.Imported.NotApplicable[0].Check != "stale" || tg.Imported.NotApplicable[0].Status != analyze.StatusImported {
			t.Errorf("target %s: %+v", tg.Name, tg.Imported.NotApplicable[0])
		}
		if tg.Imported.Types != "names" {
			t.Errorf("target %s: types from %q; promtool's blocks carry no metadata", tg.Name, tg.Imported.Types)
		}
	}
	for _, tg := range a.Targets {
		if tg.Imported != nil {
			t.Errorf("recorded target %s says imported", tg.Name)
		}
	}
	// The recording against its own import: the source is a seam, and
	// the same counters give no verdict.
	js := filepath.Join(t.TempDir(), "diff.json")
	if _, _, err := runCLI("diff", dir, "--", back, "--json", js); err != nil {
		t.Fatalf("diff: %v", err)
	}
	var rep diff.Report
	if b, err := os.ReadFile(js); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rep.Seams, func(s diff.Seam) bool { return s.Kind == diff.SeamSource }); i < 0 ||
		rep.Seams[i].Baseline != "recorded" || rep.Seams[i].Candidate != "imported from prometheus" {
		t.Errorf("seams %+v: want recorded ↔ imported from prometheus", rep.Seams)
	}
	for _, r := range rep.Rows {
		if r.Verdict == diff.Better || r.Verdict == diff.Worse {
			t.Errorf("%s %s %s: %s between a recording and its import", r.Phase, r.Target, r.Quantity, r.Verdict)
		}
	}
	html, md := filepath.Join(t.TempDir(), "r.html"), filepath.Join(t.TempDir(), "r.md")
	if _, _, err := runCLI("render", back, "-o", html, "--md", md); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{html, md} {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), "bodies absent") || !strings.Contains(string(b), "not applicable: imported") {
			t.Errorf("%s does not say the bodies are absent and which checks do not apply", filepath.Base(f))
		}
		noSecret(t, "hunter2", string(b))
	}

	t.Run("bad selector", func(t *testing.T) {
		_, _, err := runCLI("import", "prometheus", "--url", withCreds, "--match", `{job=~"(}`, "--start", start.Format(time.RFC3339),
			"--end", end.Format(time.RFC3339), "-o", filepath.Join(t.TempDir(), "x"))
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "bad_data") || !strings.Contains(err.Error(), "parse error") {
			t.Fatalf("err %v (exit %d): want prometheus' bad_data and its parse error", err, exitCode(err))
		}
		noSecret(t, "hunter2", err.Error())
	})
	t.Run("empty", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "x")
		_, _, err := runCLI("import", "prometheus", "--url", withCreds, "--match", `{__name__="no_such_series"}`,
			"--start", start.Format(time.RFC3339), "--end", end.Format(time.RFC3339), "-o", out)
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "holds nothing") {
			t.Fatalf("err %v: want nothing matched", err)
		}
		noSecret(t, "hunter2", err.Error())
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an empty import left %s: %v", out, err)
		}
	})
	t.Run("into a recording", func(t *testing.T) {
		_, _, err := runCLI("import", "prometheus", "--url", srv.URL, "--match", `{llmrec_run=~".+"}`,
			"--start", start.Format(time.RFC3339), "--end", end.Format(time.RFC3339), "-o", dir)
		if err == nil || !strings.Contains(err.Error(), "holds a recording already") {
			t.Fatalf("err %v", err)
		}
	})
}

// okSamples are the samples of a folder's ok /metrics rows, keyed by
// target, millisecond, name and labels, and the number of those rows.
func okSamples(t *testing.T, dir string) (map[string]float64, int) {
	t.Helper()
	out := map[string]float64{}
	rows := 0
	for _, seg := range mustOpen(t, dir).Segments {
		err := capture.ReadSegment(seg, func(s *capture.Scrape) error {
			if s.Outcome != capture.OutcomeOK || s.Endpoint != capture.EndpointMetrics {
				return nil
			}
			rows++
			for _, x := range s.Samples {
				k := fmt.Sprintf("%s %d %s%s", s.Target, s.FirstByteNs/1e6, x.Name, x.Labels)
				// A histogram is one without metadata too (told by its
				// _bucket series): its family and type are in the key.
				if x.Type == "histogram" {
					k += " histogram " + x.Family
				}
				out[k] = x.Value
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out, rows
}

func analyzeDir(t *testing.T, dir string) *analyze.Result {
	t.Helper()
	res, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return res
}

// samePhases compares the phases and their figures of a recording (a)
// and its import (b). A poll's time is its first byte to the nanosecond in
// a, to the millisecond in b: bounds agree within a millisecond, a rate
// within 2 ms of its phase's seconds, counts and quantiles exactly.
func samePhases(t *testing.T, a, b *analyze.Result) {
	t.Helper()
	if len(a.Phases) != len(b.Phases) {
		t.Fatalf("recording: %d phases, import: %d", len(a.Phases), len(b.Phases))
	}
	figures := 0
	steady := 0
	for i := range a.Phases {
		pa, pb := &a.Phases[i], &b.Phases[i]
		if pa.Name != pb.Name || pa.Kind != pb.Kind || pa.Target != pb.Target ||
			math.Abs(pa.Start-pb.Start) > 1e-3 || math.Abs(pa.End-pb.End) > 1e-3 {
			t.Fatalf("phase %d: recording %+v, import %+v", i, pa.Phase, pb.Phase)
		}
		if len(pa.Targets) != len(pb.Targets) {
			t.Fatalf("phase %s: %d and %d targets", pa.Name, len(pa.Targets), len(pb.Targets))
		}
		for j := range pa.Targets {
			n := sameFigures(t, pa.Name, &pa.Targets[j], &pb.Targets[j])
			figures += n
			if pa.Kind == "steady" && n > 0 {
				steady++
			}
		}
	}
	if steady == 0 {
		t.Fatal("no steady phase with figures: the comparison compared nothing that matters")
	}
	t.Logf("%d phases, %d figures compared (%d steady phases)", len(a.Phases), figures, steady)
}

func sameFigures(t *testing.T, phase string, fa, fb *phases.Figures) int {
	t.Helper()
	if fa.Target != fb.Target || fa.Bounds.Polls != fb.Bounds.Polls || fa.Bounds.Processes != fb.Bounds.Processes || fa.Bounds.Reason != fb.Bounds.Reason {
		t.Fatalf("phase %s target %s: bounds %+v vs %+v", phase, fa.Target, fa.Bounds, fb.Bounds)
	}
	tol := 2.1e-3 / max(fa.Bounds.Seconds, 1e-3)
	byName := map[string]phases.Figure{}
	for _, f := range fb.Figures {
		byName[f.Name] = f
	}
	n := 0
	for _, x := range fa.Figures {
		y, ok := byName[x.Name]
		if !ok {
			t.Fatalf("phase %s target %s: figure %s not in the import's", phase, fa.Target, x.Name)
		}
		if x.Value.Valid != y.Value.Valid || x.Reason != y.Reason || x.Source != y.Source {
			t.Fatalf("phase %s target %s %s: recording %+v, import %+v", phase, fa.Target, x.Name, x, y)
		}
		if !x.Value.Valid {
			continue
		}
		exact := !x.Bucket.IsZero() || strings.HasSuffix(x.Name, "__max")
		d := math.Abs(x.Value.V - y.Value.V)
		if exact && d != 0 || !exact && d > tol*math.Abs(x.Value.V)+1e-12 {
			t.Fatalf("phase %s target %s %s: recording %v, import %v (tolerance %.2g)", phase, fa.Target, x.Name, x.Value.V, y.Value.V, tol)
		}
		n++
	}
	return n
}

// noSecret fails when secret is in any of texts or in any file under the
// folders among them (a text that names an existing folder is read).
func noSecret(t *testing.T, secret string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if st, err := os.Stat(s); err == nil && st.IsDir() {
			filepath.WalkDir(s, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					if strings.Contains(string(b), secret) {
						t.Errorf("%s holds the secret", p)
					}
				}
				return nil
			})
			continue
		}
		if strings.Contains(s, secret) {
			t.Errorf("the secret is printed: %q", s)
		}
	}
}

// A store that cannot be reached is an error naming it without its
// credentials, and leaves no folder.
func TestImportUnreachable(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x")
	_, stderr, err := runCLI("import", "prometheus", "--url", "http://reader:hunter2@127.0.0.1:1/?token=tok3n", "--match", "up",
		"--start", "1796216000", "--end", "1796216060", "-o", out)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err %v", err)
	}
	msg := redactedError{err}.Error()
	noSecret(t, "hunter2", msg, stderr)
	noSecret(t, "tok3n", msg, stderr)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed import left %s", out)
	}
}

func TestImportUsage(t *testing.T) {
	for _, args := range [][]string{
		{"import"},
		{"import", "influx"},
		{"import", "prometheus", "--url", "http://x", "--start", "1", "--end", "2", "-o", "d"},
		{"import", "prometheus", "--url", "http://x", "--match", "up", "--start", "yesterday", "--end", "2", "-o", "d"},
		{"import", "prometheus", "--url", "http://x", "--match", "up", "--start", "2", "--end", "1", "-o", "d"},
	} {
		if _, _, err := runCLI(args...); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// A prometheus scraping `llmrec sim` on loopback for a few seconds is
// imported with the types its metadata serves, and analyze names each
// engine from its series.
func TestImportPrometheusLive(t *testing.T) {
	promtest.Tool(t, "prometheus")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim, err := sim.Serve(ctx, sim.DefaultScenario(), sim.Options{NoMemoryLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	var cfg strings.Builder
	cfg.WriteString("global: {scrape_interval: 1s, scrape_timeout: 900ms}\nscrape_configs:\n")
	for _, tg := range sim.Targets() {
		host := strings.TrimSuffix(strings.TrimPrefix(tg.MetricsURL, "http://"), "/metrics")
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs: [{targets: ['%s']}]\n", tg.Name, host)
	}
	began := time.Now()
	srv := promtest.StartWith(t, t.TempDir(), cfg.String())
	// Prometheus hands discovered targets to its scrapers after about
	// 5 s; then a few scrapes of each.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ups := srv.Raw(t, "up[1m]", time.Now())
		enough := len(ups) == len(sim.Targets())
		for _, u := range ups {
			enough = enough && len(u.Samples) >= 4
		}
		if enough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus did not scrape the sim 4 times in 30 s: %v", ups)
		}
	}
	out := filepath.Join(t.TempDir(), "live")
	stdout, stderr, err := runCLI("import", "prometheus", "--url", srv.URL, "--match", `{job=~".+"}`,
		"--start", began.Add(-time.Second).UTC().Format(time.RFC3339Nano), "--end", time.Now().UTC().Format(time.RFC3339Nano), "-o", out)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "types from metadata") {
		t.Errorf("stdout %q: want types from the store's metadata", stdout)
	}
	res := analyzeDir(t, out)
	engines := map[string]string{}
	for _, tg := range res.Targets {
		engines[tg.Name] = tg.Engine
		if tg.Summary.Polls < 2 {
			t.Errorf("target %s: %d polls", tg.Name, tg.Summary.Polls)
		}
		if tg.Imported == nil || tg.Imported.Types != "metadata" {
			t.Errorf("target %s: imported %+v", tg.Name, tg.Imported)
		}
	}
	for _, tg := range sim.Targets() {
		name := tg.Name + "/" + strings.TrimSuffix(strings.TrimPrefix(tg.MetricsURL, "http://"), "/metrics")
		if engines[name] != string(tg.Format) {
			t.Errorf("target %s: engine %q, want %q (all: %v)", name, engines[name], tg.Format, engines)
		}
	}
	// The page's types come back from the metadata: a gauge is a gauge.
	gauges := 0
	for _, seg := range mustOpen(t, out).Segments {
		capture.ReadSegment(seg, func(s *capture.Scrape) error {
			for _, x := range s.Samples {
				if x.Type == "gauge" {
					gauges++
				}
				if x.Name == "up" || strings.HasPrefix(x.Name, "scrape_") {
					t.Errorf("the store's own series %s imported as a sample", x.Name)
				}
			}
			return nil
		})
	}
	if gauges == 0 {
		t.Error("no gauge imported: types did not come from the metadata")
	}
}

// An import whose second chunk fails exits non-zero, and the folder it
// leaves reads as partial in inspect, analyze (never "ok") and render,
// with the store's reason, never as "nothing went wrong".
func TestImportPartialReadsPartial(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/metadata") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		calls++
		k := calls
		mu.Unlock()
		if k >= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"error","errorType":"unavailable","error":"the store is restarting"}`)
			return
		}
		q := r.URL.Query()
		var at, ms int64
		fmt.Sscanf(q.Get("time"), "%d", &at)
		fmt.Sscanf(q.Get("query")[strings.IndexByte(q.Get("query"), '[')+1:], "%dms", &ms)
		var b strings.Builder
		b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"requests_total","job":"a","instance":"i"},"values":[`)
		for s := at - ms/1000 + 1; s <= at; s++ {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "[") {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d,"%d"]`, s, s)
		}
		b.WriteString("]}]}}")
		io.WriteString(w, b.String())
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "x")
	_, _, err := runCLI("import", "prometheus", "--url", srv.URL, "--match", "requests_total",
		"--start", "1796216000", "--end", "1796216180", "--chunk", "1m", "-o", out)
	if err == nil || !strings.Contains(err.Error(), "partial") {
		t.Fatalf("import: %v, want an error saying partial", err)
	}
	insp, _, _ := runCLI("inspect", out)
	if !strings.Contains(insp, "PARTIAL") || !strings.Contains(insp, "restarting") {
		t.Errorf("inspect does not say partial:\n%s", insp)
	}
	an, _, _ := runCLI("analyze", out, "--quiet")
	if !strings.Contains(an, "PARTIAL") || !strings.Contains(an, "the import is partial") || strings.Contains(an, "nothing went wrong") {
		t.Errorf("analyze does not say partial:\n%s", an)
	}
	html, md := filepath.Join(t.TempDir(), "r.html"), filepath.Join(t.TempDir(), "r.md")
	if _, _, err := runCLI("render", out, "--quiet", "-o", html, "--md", md); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{html, md} {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), "partial") || strings.Contains(string(b), "nothing went wrong") {
			t.Errorf("%s does not say partial", filepath.Base(f))
		}
	}
}
