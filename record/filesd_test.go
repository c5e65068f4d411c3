package record

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each address of a file_sd group is a target: scheme and path from the
// group's __scheme__ and __metrics_path__, the name from llmrec_name or
// the address, the engine hint from llmrec_engine, the other labels kept;
// the config's own targets come first, and validating again (after the
// flags) reads the files again without doubling them.
func TestFileSDTargets(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.json"), `[
 {"targets": ["10.0.0.7:8000", "10.0.0.8:8000"], "labels": {"llmrec_engine": "vllm", "pool": "a", "__meta_x": "y"}},
 {"targets": ["[::1]:8080"], "labels": {"llmrec_name": "llama", "__scheme__": "https", "__metrics_path__": "/m"}}
]`)
	writeFile(t, filepath.Join(dir, "b.json"), `[{"targets": ["10.0.0.9:9000"]}]`)
	writeFile(t, filepath.Join(dir, "c.yaml"), "- targets: ['10.0.0.10:8000']\n  labels:\n    llmrec_engine: sglang\n    zone: b\n")
	cfg, err := ParseConfig([]byte(fmt.Sprintf(`file_sd = [%q, %q]
[[target]]
name = "own"
url = "http://127.0.0.1:1/metrics"
`, filepath.Join(dir, "*.json"), filepath.Join(dir, "*.yaml"))), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, t := range cfg.Targets {
		got = append(got, fmt.Sprintf("%s %s %s %s %v", t.Name, t.URL, t.Engine, t.FileSD, t.Labels))
	}
	want := []string{
		"own http://127.0.0.1:1/metrics   map[]",
		"10.0.0.7:8000 http://10.0.0.7:8000/metrics vllm a.json map[pool:a]",
		"10.0.0.8:8000 http://10.0.0.8:8000/metrics vllm a.json map[pool:a]",
		"llama https://[::1]:8080/m  a.json map[]",
		"10.0.0.9:9000 http://10.0.0.9:9000/metrics  b.json map[]",
		"10.0.0.10:8000 http://10.0.0.10:8000/metrics sglang c.yaml map[zone:b]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("targets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A file_sd mistake is refused at validation, naming the file by its base
// name only.
func TestFileSDErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ file, text, want string }{
		{"none-*.json", "", `file_sd "` + filepath.Join(dir, "none-*.json") + `": no file matches`},
		{"t.yml", "- targets: [a:1\n- labels: {}\n", "file_sd t.yml:1: not a YAML list of target groups"},
		{"bad.json", `{"targets": []}`, "file_sd bad.json:1: not a JSON list of target groups"},
		{"line.json", "[\n {\"targets\": [\"a:1\"]},\n {\"targets\": [\"b:2\"],}\n]", "file_sd line.json:3: not a JSON list of target groups"},
		{"named.json", `[{"targets": ["a:1", "b:2"], "labels": {"llmrec_name": "x"}}]`, "file_sd named.json: group 1: llmrec_name names one target, the group has 2"},
		{"url.json", `[{"targets": ["http://a:1/metrics"]}]`, `file_sd url.json: group 1: target "http://a:1/metrics" is not host:port`},
		{"twice.json", `[{"targets": ["a:1"], "labels": {"llmrec_name": "own"}}]`, `target "own" (from file_sd twice.json): the name is used twice`},
		{"empty.json", `[]`, "file_sd: the files name no target"},
	}
	for _, c := range cases {
		if c.text != "" {
			writeFile(t, filepath.Join(dir, c.file), c.text)
		}
		cfg := &Config{FileSD: []string{filepath.Join(dir, c.file)}, Targets: []Target{{Name: "own", URL: "http://127.0.0.1:1/metrics"}}}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.file, err, c.want)
		}
	}
}

// Targets named by a file_sd file are recorded, and the manifest says
// which file named each and keeps its labels.
func TestFileSDRecords(t *testing.T) {
	var addrs []string
	for range 2 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "# TYPE up gauge\nup 1\n") }))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	sd := filepath.Join(t.TempDir(), "fleet.json")
	b, _ := json.Marshal([]targetGroup{{Targets: addrs, Labels: map[string]string{"llmrec_engine": "vllm", "pool": "a"}}})
	writeFile(t, sd, string(b))
	cfg := &Config{Interval: Duration(100 * time.Millisecond), Timeout: Duration(2 * time.Second), FileSD: []string{sd}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Run(context.Background(), cfg, Options{Dir: dir, Duration: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range s.Targets {
		if !ts.Answered {
			t.Errorf("%s never answered", ts.Name)
		}
	}
	ok := map[string]int{}
	for _, r := range readRows(t, dir) {
		if r.Outcome == capture.OutcomeOK {
			ok[r.Target]++
		}
	}
	if len(ok) != 2 || ok[addrs[0]] == 0 || ok[addrs[1]] == 0 {
		t.Errorf("ok rows by target %v", ok)
	}
	run, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(run.Manifests[0].Config)
	if !strings.Contains(string(m), `"file_sd":["fleet.json"]`) || !strings.Contains(string(m), `"file_sd":"fleet.json"`) ||
		!strings.Contains(string(m), `"labels":{"pool":"a"}`) || strings.Contains(string(m), filepath.Dir(sd)) {
		t.Errorf("manifest config %s", m)
	}
}
