package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/tlstest"
)

// A recording made with insecure_skip_verify says so in the report's run
// metadata (HTML), its Markdown summary and the analysis JSON, not only on
// stderr and in the manifest.
func TestInsecureSkipVerifyInReport(t *testing.T) {
	pki := tlstest.New(t)
	other := pki.Issue(t, tlstest.Options{Name: "other", DNSNames: []string{"engine.internal"}})
	url := pki.Serve(t, other, false, "# TYPE up gauge\nup 1\n").URL + "/metrics"
	work := t.TempDir()
	dir := filepath.Join(work, "run")
	if _, stderr, err := runCLI("record", "-o", dir, "--duration", "300ms", "--interval", "100ms",
		"--timeout", "2s", "--target", "eng="+url, "--tls-insecure-skip-verify"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	html, md, js := filepath.Join(work, "r.html"), filepath.Join(work, "r.md"), filepath.Join(work, "a.json")
	if _, stderr, err := runCLI("render", dir, "--quiet", "-o", html, "--md", md); err != nil {
		t.Fatalf("render: %v\n%s", err, stderr)
	}
	if _, stderr, err := runCLI("analyze", dir, "--quiet", "--json", js); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	const want = `insecure_skip_verify is on: its server's certificate is not checked`
	for _, p := range []string{html, md, js} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// As HTML and Markdown escape it.
		text := strings.NewReplacer("&#39;", "'", `\_`, "_").Replace(string(b))
		if !strings.Contains(text, want) {
			t.Errorf("%s does not say %q", filepath.Base(p), want)
		}
	}
	b, _ := os.ReadFile(md)
	if !strings.Contains(string(b), "**Recorder warnings**") {
		t.Errorf("the summary's run metadata lacks the warnings:\n%s", b)
	}
}
