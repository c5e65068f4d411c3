package templates_test

import (
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/templates"
)

// The vendored ECharts file is the one VERSIONS describes: same sha256,
// same version, its licences beside it.
func TestVendoredECharts(t *testing.T) {
	versions, err := templates.Read("vendor/echarts/VERSIONS")
	if err != nil {
		t.Fatal(err)
	}
	js, err := templates.Read(templates.ECharts)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(js))
	want := regexp.MustCompile(`sha256:\s+([0-9a-f]{64})`).FindStringSubmatch(versions)
	if want == nil || want[1] != hex.EncodeToString(sum[:]) {
		t.Errorf("echarts.min.js has sha256 %x; VERSIONS says %v", sum, want)
	}
	version := regexp.MustCompile(`version:\s+(\S+)`).FindStringSubmatch(versions)
	if version == nil || version[1] != templates.EChartsVersion {
		t.Errorf("VERSIONS names version %v, EChartsVersion is %s", version, templates.EChartsVersion)
	}
	if !strings.Contains(js, `version="`+templates.EChartsVersion+`"`) {
		t.Errorf("echarts.min.js does not declare version %s", templates.EChartsVersion)
	}
	for _, f := range []string{"LICENSE", "NOTICE", "LICENSE-d3", "LICENSE-zrender"} {
		if b, err := os.ReadFile("vendor/echarts/" + f); err != nil || len(b) < 100 {
			t.Errorf("licence file %s: %v", f, err)
		}
	}
}

// The scripts are inlined in <script> elements: none may hold what would
// end the element or open a comment in it.
func TestScriptsCanBeInlined(t *testing.T) {
	for _, name := range []string{templates.ECharts, templates.JS} {
		js, err := templates.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		low := strings.ToLower(js)
		for _, bad := range []string{"</script", "<!--", "<script"} {
			if strings.Contains(low, bad) {
				t.Errorf("%s holds %q", name, bad)
			}
		}
	}
}

// The page templates parse and define what package render executes.
func TestTemplatesParse(t *testing.T) {
	// Package render provides "words" (a cell's text, its words kept whole).
	funcs := template.FuncMap{"words": func(s string) string { return s }}
	tmpl, err := template.New("report").Funcs(funcs).ParseFS(templates.FS, templates.Pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"page", "css", "scripts", "toc", "header", "verdicts", "section", "table", "attrs", "chart"} {
		if tmpl.Lookup(name) == nil {
			t.Errorf("no template %q", name)
		}
	}
	if _, err := templates.Read("nothing.tmpl"); err == nil {
		t.Error("Read of a missing file did not fail")
	}
}
