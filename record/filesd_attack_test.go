package record

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// fleetFile is a file_sd file of n targets on loopback ports.
func fleetFile(n int, labels map[string]string) string { return fleetFileAt(0, n, labels) }

// fleetFileAt is a file_sd file of n targets from the from-th address on.
func fleetFileAt(from, n int, labels map[string]string) string {
	g := targetGroup{Labels: labels}
	for i := from; i < from+n; i++ {
		g.Targets = append(g.Targets, fmt.Sprintf("127.0.0.%d:%d", 1+i/60000, 1024+i%60000))
	}
	b, _ := json.Marshal([]targetGroup{g})
	return string(b)
}

// within fails the test when f has not returned after d: a reading that
// hangs is a failure, not a test that never ends.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still running after %s", what, d)
	}
}

// Only regular files are read: a FIFO or /dev/zero the pattern matches is
// refused at once, named, at start and while following (where the other
// files' targets are taken); a file over the size cap is refused before it
// is read.
func TestFileSDOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), fleetFile(1, nil))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSDBytes+1); err != nil { // sparse: no bytes written
		t.Fatal(err)
	}
	for _, name := range []string{"fifo.json", "zero.json", "big.json"} {
		within(t, 5*time.Second, name, func() {
			_, err := fileSDTargets([]string{filepath.Join(dir, name)})
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: err %v, want a refusal naming it", name, err)
			}
		})
	}
	cfg := &Config{FileSD: []string{filepath.Join(dir, "a.json")}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.FileSD = []string{filepath.Join(dir, "*.json")}
	warn := &lockedBuffer{}
	d := newDiscovery(cfg, nil, warn)
	within(t, 5*time.Second, "discovery", func() {
		if ts := d.targets(context.Background()); len(ts) != 1 {
			t.Errorf("%d targets, want a.json's one", len(ts))
		}
	})
	for _, want := range []string{"fifo.json: not a regular file", "zero.json: not a regular file", "big.json: "} {
		if !strings.Contains(warn.String(), want) {
			t.Errorf("warnings lack %q:\n%s", want, warn)
		}
	}
}

// The recorder's capacity holds at start and at every reload: a file of
// more targets than one recorder takes is refused at start; a file growing
// mid-run past the target cap, or past the scrape-rate cap, keeps the last
// good set, warned of with the file's name, and the manifest says so.
func TestFileSDCapacityAtEveryReload(t *testing.T) {
	dir := t.TempDir()
	sd := filepath.Join(dir, "fleet.json")
	writeFile(t, sd, fleetFile(5000, nil))
	cfg := &Config{Interval: Duration(10 * time.Second), FileSD: []string{sd}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "fleet.json") || !strings.Contains(err.Error(), fmt.Sprint(MaxTargets)) {
		t.Errorf("5,000 targets at start: %v, want refused naming the file", err)
	}

	writeFile(t, sd, fleetFile(1, nil))
	cfg = &Config{Interval: Duration(100 * time.Millisecond), FileSD: []string{sd}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	warn := &lockedBuffer{}
	d := newDiscovery(cfg, nil, warn)
	if ts := d.targets(context.Background()); len(ts) != 1 {
		t.Fatalf("%d targets at start", len(ts))
	}
	// Past the target cap: the file is refused before its targets are made.
	writeAtomic(t, sd, fleetFile(MaxTargets+1, nil))
	if ts := d.targets(context.Background()); len(ts) != 1 {
		t.Errorf("%d targets after the file grew past the cap, want the last good 1", len(ts))
	}
	if w := warn.String(); !strings.Contains(w, "fleet.json") || !strings.Contains(w, fmt.Sprintf("more than the %d", MaxTargets)) {
		t.Errorf("warnings:\n%s", w)
	}
	// Past the rate cap (101 targets every 100 ms): the set is refused.
	writeAtomic(t, sd, fleetFile(101, nil))
	if ts := d.targets(context.Background()); len(ts) != 1 {
		t.Errorf("%d targets past the rate cap, want the last good 1", len(ts))
	}
	if !strings.Contains(d.refused, "fleet.json") || !strings.Contains(d.refused, "scrapes per second") {
		t.Errorf("refused %q", d.refused)
	}
	// Back under: taken.
	writeAtomic(t, sd, fleetFile(3, nil))
	if ts := d.targets(context.Background()); len(ts) != 3 || d.refused != "" {
		t.Errorf("%d targets back under the caps (refused %q)", len(ts), d.refused)
	}

	// While recording, the refusal reaches the manifest.
	a := newUpServer(t)
	writeFile(t, sd, `[{"targets": ["`+a.addr()+`"]}]`)
	cfg = &Config{Interval: Duration(20 * time.Millisecond), Timeout: Duration(time.Second), FileSD: []string{sd}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stop := recordAsync(t, cfg, Options{Dir: out, Warnings: &lockedBuffer{}})
	waitManifest(t, out, "a present", func(m capture.Manifest) bool { return len(m.Targets) == 1 })
	writeAtomic(t, sd, fleetFile(21, nil)) // 1,050 scrapes per second
	waitManifest(t, out, "the refusal", func(m capture.Manifest) bool {
		return len(m.Warnings) > 0 && strings.Contains(strings.Join(m.Warnings, " "), "fleet.json")
	})
	if s := stop(); len(s.Targets) != 1 {
		t.Errorf("%d targets recorded, want the last good 1", len(s.Targets))
	}
}

// __scheme__ is http or https only, and its refusal does not quote it; a
// YAML error names the file and line and quotes none of its bytes.
func TestFileSDSchemeAndYAMLError(t *testing.T) {
	for _, scheme := range []string{"http://reader:hunter2@evil.example", "ftp", "file"} {
		_, err := parseFileSD("fleet.json", []byte(`[{"targets": ["10.0.0.7:8000"], "labels": {"__scheme__": "`+scheme+`"}}]`))
		if err == nil || !strings.Contains(err.Error(), "__scheme__") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("__scheme__ %q: %v", scheme, err)
		}
	}
	for _, text := range []string{
		"- targets: hunter2-s3cret\n",
		"- targets: [a:1]\n  labels: {pool: hunter2-s3cret, x: [1]}\n",
		"hunter2-s3cret: [\n",
	} {
		_, err := parseFileSD("fleet.yml", []byte(text))
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "fleet.yml:") {
			t.Errorf("%q: %v, want the file and line without its bytes", text, err)
		}
	}
}

// A label that looks like a credential is written as a digest, a URL in a
// label is redacted; other labels stay as they are (the manifest's
// config, and so analyze's JSON and the report).
func TestFileSDLabelsRedacted(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "fleet.json")
	writeFile(t, sd, fleetFile(1, map[string]string{"api_key": "hunter2-key", "AuthToken": "hunter2-tok",
		"dashboard": "https://reader:hunter2-pw@grafana.example/d?token=hunter2-q", "pool": "a"}))
	cfg := &Config{FileSD: []string{sd}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), `"pool":"a"`) || !strings.Contains(string(b), "grafana.example/d") {
		t.Errorf("redacted config: %s", b)
	}
}

// --duration holds while the start resolves names: a resolver that never
// answers does not hold the run past it (each lookup's own bound is 5 s).
func TestStartHonoursDuration(t *testing.T) {
	a := newUpServer(t)
	resolve := true
	cfg := &Config{Interval: Duration(50 * time.Millisecond), Targets: []Target{{Name: "a", URL: "http://engine.invalid:" + a.URL[strings.LastIndexByte(a.URL, ':')+1:] + "/metrics", ResolveDNS: &resolve}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	within(t, 4*time.Second, "Run", func() {
		_, _ = Run(context.Background(), cfg, Options{Dir: t.TempDir(), Duration: 300 * time.Millisecond, Resolver: hangingResolver{}})
	})
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("Run took %s with --duration 300ms", d)
	}
}

// hangingResolver answers only when its context ends.
type hangingResolver struct{}

func (hangingResolver) LookupHost(ctx context.Context, _ string) ([]string, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A file_sd file, JSON or YAML, whatever it holds, is read without
// panicking and within the caps: never more than MaxTargets targets, each
// an http or https URL; a YAML error is the file and line alone.
func FuzzFileSD(f *testing.F) {
	for _, s := range []string{
		`[{"targets": ["10.0.0.7:8000", "[::1]:8080"], "labels": {"llmrec_engine": "vllm", "__scheme__": "https", "__metrics_path__": "/m", "pool": "a"}}]`,
		`[{"targets": ["a:1"], "labels": {"llmrec_name": "x", "api_key": "k"}}]`,
		"- targets: [a:1, b:2]\n  labels: {pool: a, __scheme__: http}\n",
		"- targets: hunter2\n", "a: &a [*a, *a]\n", "[", "null", `[{"targets": null}]`,
		"- &x {targets: [a:1]}\n- *x\n",
	} {
		f.Add([]byte(s))
	}
	yamlErr := regexp.MustCompile(`^file_sd f\.yaml(:[0-9]+)?: not a YAML list of target groups$`)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, name := range []string{"f.json", "f.yaml"} {
			ts, err := parseFileSD(name, b)
			if err != nil {
				if name == "f.yaml" && strings.Contains(err.Error(), "YAML") && !yamlErr.MatchString(err.Error()) {
					t.Fatalf("YAML error %q says more than the file and line", err)
				}
				continue
			}
			if len(ts) > MaxTargets {
				t.Fatalf("%s: %d targets, over the cap", name, len(ts))
			}
			for _, tg := range ts {
				if !strings.HasPrefix(tg.URL, "http://") && !strings.HasPrefix(tg.URL, "https://") {
					t.Fatalf("%s: target URL %q", name, tg.URL)
				}
			}
		}
	})
}

// Many files, each under the cap, together past it: the set is refused
// and the files past the cap are not read at all.
func TestFileSDManyFilesStopAtTheCap(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), fleetFile(1, nil))
	cfg := &Config{Interval: Duration(10 * time.Second), FileSD: []string{filepath.Join(dir, "*.json")}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := newDiscovery(cfg, nil, &lockedBuffer{})
	if ts := d.targets(context.Background()); len(ts) != 1 {
		t.Fatalf("%d targets", len(ts))
	}
	for i := range 4 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("b%d.json", i)), fleetFileAt(1+i*MaxTargets, MaxTargets/2+1, nil))
	}
	if ts := d.targets(context.Background()); len(ts) != 1 || !strings.Contains(d.refused, "more than") && !strings.Contains(d.refused, "at most") {
		t.Errorf("%d targets (refused %q), want the last good 1", len(ts), d.refused)
	}
	if _, read := d.files[filepath.Join(dir, "b3.json")]; read {
		t.Errorf("a file past the cap was read")
	}
}
