// Package templates holds what the HTML report is made of, embedded in the
// binary: the page's html/template files, its stylesheet and script, and the
// vendored ECharts library (vendor/echarts, with its licences and a VERSIONS
// file that says where it came from and how to update it).
//
// The package only holds files; package render parses the templates once and
// owns how they are executed. The page's script and ECharts go into the page
// as trusted template.JS: they are ours or vendored, never data.
package templates

import (
	"embed"
	"fmt"
)

// FS holds the page templates (*.tmpl), the stylesheet, the page script and
// the vendored ECharts file.
//
//go:embed *.tmpl report.css report.js vendor/echarts/echarts.min.js vendor/echarts/VERSIONS
var FS embed.FS

// Names of the files in FS.
const (
	Pages   = "*.tmpl"                        // the page's html/template files
	CSS     = "report.css"                    // the page's stylesheet
	JS      = "report.js"                     // the page's own script: draws charts, shows provenance
	ECharts = "vendor/echarts/echarts.min.js" // Apache ECharts, as published on the npm registry
)

// EChartsVersion is the version of the vendored ECharts file; VERSIONS
// beside the file says the same, and a test checks that they agree.
const EChartsVersion = "6.1.0"

// Read returns the contents of one of the files of FS.
func Read(name string) (string, error) {
	b, err := FS.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("templates: %w", err)
	}
	return string(b), nil
}
