package promimport

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
)

const realCaptures = "../../../shared/captures/real"

// Each real engine page, stored as Prometheus stores a scrape of it (its
// series with job and instance added, its TYPE and HELP lines as
// metadata), comes back from the import's page and parse with the very
// samples the page parses to: family, type, help, name, labels and value.
// Without metadata, histograms still come back as their families.
func TestImportedSamplesAreThePage(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realCaptures, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s (the project's shared folder): skipped", realCaptures)
	}
	pages := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := expo.Parse(body, "text/plain; version=0.0.4")
		if err != nil {
			continue // not a page (TensorRT-LLM's JSON): nothing a store would hold
		}
		pages++
		stored := storedAs(t, want)
		for _, meta := range []map[string]metadata{metadataOf(body), nil} {
			got := importPage(t, stored, meta)
			if len(got) != len(want) {
				t.Fatalf("%s (metadata %v): %d samples imported, %d on the page", filepath.Base(f), meta != nil, len(got), len(want))
			}
			byKey := map[string]expo.Sample{}
			for _, s := range got {
				byKey[s.Name+s.Labels] = s
			}
			for _, w := range want {
				g, ok := byKey[w.Name+w.Labels]
				if !ok {
					t.Fatalf("%s: %s%s not imported", filepath.Base(f), w.Name, w.Labels)
				}
				if g.Value != w.Value && !(g.Value != g.Value && w.Value != w.Value) {
					t.Fatalf("%s: %s%s = %v, page %v", filepath.Base(f), w.Name, w.Labels, g.Value, w.Value)
				}
				switch {
				case meta != nil && (g.Family != w.Family || g.Type != w.Type || g.Help != w.Help):
					t.Fatalf("%s: %s%s imported as %s %s %q, page %s %s %q", filepath.Base(f), w.Name, w.Labels,
						g.Family, g.Type, g.Help, w.Family, w.Type, w.Help)
				case meta == nil && w.Type == "histogram" && (g.Family != w.Family || g.Type != w.Type):
					t.Fatalf("%s without metadata: %s%s imported as %s %s, page %s %s", filepath.Base(f), w.Name, w.Labels,
						g.Family, g.Type, w.Family, w.Type)
				}
			}
		}
	}
	if pages < 5 {
		t.Fatalf("only %d real pages parsed", pages)
	}
}

// storedAs is a page's samples as a store's series: labels with the
// sample name as __name__ and the target's job and instance.
func storedAs(t *testing.T, ss []expo.Sample) []series {
	var out []series
	for _, s := range ss {
		m, err := expo.DecodeLabels(s.Labels)
		if err != nil {
			t.Fatal(err)
		}
		m["__name__"], m["job"], m["instance"] = s.Name, "engine", "10.0.0.7:8000"
		out = append(out, series{Metric: m, Values: []pair{{ms: 1000, v: s.Value}}})
	}
	return out
}

// metadataOf is what Prometheus keeps of a page's TYPE and HELP lines:
// per name as the line gives it, help unescaped.
func metadataOf(body []byte) map[string]metadata {
	out := map[string]metadata{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 3 || f[0] != "#" {
			continue
		}
		m := out[f[2]]
		switch f[1] {
		case "TYPE":
			if len(f) == 4 {
				m.Type = f[3]
			}
		case "HELP":
			if len(f) == 4 {
				m.Help = strings.NewReplacer(`\\`, `\`, `\n`, "\n").Replace(f[3])
			}
		}
		out[f[2]] = m
	}
	return out
}

// importPage runs one scrape's stored series through the import's page
// and the recorder's parse.
func importPage(t *testing.T, ss []series, meta map[string]metadata) []expo.Sample {
	im := &importer{meta: meta, labels: targetLabels("")}
	names := bucketNames(ss)
	var lines []line
	var pts []point
	for i, s := range ss {
		lines = append(lines, im.line(s.Metric, names))
		pts = append(pts, point{s: int32(i), v: s.Values[0].v})
	}
	row := capture.Scrape{Endpoint: capture.EndpointMetrics, Outcome: capture.OutcomeOK, Body: page(pts, lines)}
	capture.Parse(&row)
	if row.ParseError != nil {
		t.Fatalf("the imported page does not parse: %s\n%s", *row.ParseError, row.Body)
	}
	return row.Samples
}

// The API's decimal seconds read back to the exact millisecond, and a
// millisecond prints as the API reads it.
func TestMilliseconds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"1700000000.123", 1700000000123}, {"1700000000.1", 1700000000100}, {"1700000000", 1700000000000},
		{"1767225600.004", 1767225600004}, {"0.999", 999}, {"-1.5", -1500}} {
		got, err := parseMs([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("parseMs(%s) = %d, %v; want %d", c.in, got, err, c.want)
		}
		if back, _ := parseMs([]byte(msText(c.want))); back != c.want {
			t.Errorf("msText(%d) = %s reads back as %d", c.want, msText(c.want), back)
		}
	}
	for _, bad := range []string{"", "x", "1e9", `"1"`} {
		if _, err := parseMs([]byte(bad)); err == nil {
			t.Errorf("parseMs(%q) took it", bad)
		}
	}
}
