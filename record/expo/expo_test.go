package expo

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/llmrec/llmrec/record/goldentest"
)

// realDir holds the real captures shared beside the repository.
const realDir = "../../../shared/captures/real"

func realCaptures(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(realDir, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures: %s is absent (it sits beside the repository as ../shared)", realDir)
	}
	return files
}

// eachParsingCapture runs fn as a subtest on each real capture expfmt
// parses (the others are skipped, saying why).
func eachParsingCapture(t *testing.T, fn func(t *testing.T, page []byte)) {
	for _, f := range realCaptures(t) {
		page, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := Parse(page, "text/plain"); err != nil {
				t.Skipf("does not parse: %v", err)
			}
			fn(t, page)
		})
	}
}

// Every real capture goes through the parsing path; the conformance golden
// pins, per file, its sample and family counts and the type of every
// family, so an engine upgrade or a parser change that drops or retypes a
// series fails here.
func TestRealCapturesConform(t *testing.T) {
	var b strings.Builder
	for _, f := range realCaptures(t) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := Parse(body, "text/plain; version=0.0.4")
		if err != nil {
			t.Errorf("%s: complete scrape does not parse: %v", filepath.Base(f), err)
			continue
		}
		fams := map[string]string{}
		for _, s := range ss {
			fams[s.Family] = s.Type
		}
		names := make([]string, 0, len(fams))
		for n := range fams {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "%s: %d samples, %d families\n", filepath.Base(f), len(ss), len(fams))
		for _, n := range names {
			fmt.Fprintf(&b, "  %s %s\n", fams[n], n)
		}
	}
	goldentest.Check(t, "testdata/real-captures.golden", []byte(b.String()))
}

// A scrape cut anywhere (a fragment, a torn read) never panics: it parses
// or reports its error, and an error always comes with no samples.
func TestFragmentsReportTheirError(t *testing.T) {
	for _, f := range realCaptures(t) {
		body, _ := os.ReadFile(f)
		step := max(1, len(body)/97)
		errs := 0
		for cut := 1; cut < len(body); cut += step {
			ss, err := Parse(body[:cut], "text/plain")
			if err != nil {
				errs++
				if ss != nil {
					t.Fatalf("%s cut at %d: error %v with %d samples", filepath.Base(f), cut, err, len(ss))
				}
			}
		}
		if errs == 0 {
			t.Errorf("%s: no cut produced an error; the parser accepts torn lines", filepath.Base(f))
		}
	}
}

func TestParseShapes(t *testing.T) {
	body := []byte(`# HELP req Requests.
# TYPE req counter
req_total{code="200"} 3
req_created{code="200"} 1.7e9
# TYPE lat histogram
lat_bucket{le="0.1"} 1
lat_bucket{le="+Inf"} 2
lat_sum 0.3
lat_count 2
# TYPE q summary
q{quantile="0.5"} 7
q_sum 10
q_count 2
g NaN
h +Inf
ts 1 1700000000000
`)
	ss, err := Parse(body, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Sample{}
	for _, s := range ss {
		got[s.Name+s.Labels] = s
	}
	want := []struct {
		key, typ, fam string
		v             float64
	}{
		// A TYPE foo counter followed by foo_total is, to expfmt, untyped foo_total.
		{`req_total{"code":"200"}`, "untyped", "req_total", 3},
		{`req_created{"code":"200"}`, "untyped", "req_created", 1.7e9},
		{`lat_bucket{"le":"0.1"}`, "histogram", "lat", 1},
		{`lat_bucket{"le":"+Inf"}`, "histogram", "lat", 2},
		{`lat_sum{}`, "histogram", "lat", 0.3},
		{`lat_count{}`, "histogram", "lat", 2},
		{`q{"quantile":"0.5"}`, "summary", "q", 7},
		{`q_count{}`, "summary", "q", 2},
		{`h{}`, "untyped", "h", math.Inf(1)},
	}
	for _, w := range want {
		s, ok := got[w.key]
		if !ok {
			t.Errorf("missing %s", w.key)
			continue
		}
		if s.Type != w.typ || s.Family != w.fam || s.Value != w.v {
			t.Errorf("%s = %+v, want type %s family %s value %v", w.key, s, w.typ, w.fam, w.v)
		}
	}
	if s := got["g{}"]; !math.IsNaN(s.Value) {
		t.Errorf("NaN gauge read as %v", s.Value)
	}
	if s := got["ts{}"]; s.TimestampMs == nil || *s.TimestampMs != 1700000000000 {
		t.Errorf("explicit timestamp lost: %+v", s)
	}
}

// A body that is another format is named as such, not as a line-1 syntax error.
func TestParseNamesOtherFormats(t *testing.T) {
	cases := []struct{ body, ct, want string }{
		{`{"nv_trt_llm_request_metrics": 3}`, "application/json", "body is JSON"},
		{`[1,2]`, "text/plain", "body is JSON"},
		{"<!DOCTYPE html><html><body>login</body></html>", "text/html; charset=utf-8", "body is HTML"},
		{"<html>", "", "body is HTML"},
		{"x 1\n\xff\xfe\n", "", "not valid UTF-8"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body), c.ct)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error %v, want %q", c.body, err, c.want)
		}
	}
}

// Duplicate series make a value ambiguous: the parse fails and names the series.
func TestParseRejectsDuplicateSeries(t *testing.T) {
	_, err := Parse([]byte("a{x=\"1\"} 1\na{x=\"1\"} 2\n"), "")
	if err == nil || !strings.Contains(err.Error(), `duplicate series a{"x":"1"}`) {
		t.Fatalf("error %v, want duplicate series", err)
	}
}

// An Interner changes no sample: a target's pages parsed through one equal
// the same pages parsed alone, their strings are shared from one page to
// the next, and a page that repeats the last one's series but for one now
// duplicated is still refused.
func TestInternerParsesAsParse(t *testing.T) {
	pages := []string{
		"# HELP a A.\n# TYPE a counter\na{x=\"1\"} 1\na{x=\"2\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n",
		"# HELP a A.\n# TYPE a counter\na{x=\"1\"} 5\na{x=\"2\"} 6\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n",
		// A label set joins.
		"# HELP a A.\n# TYPE a counter\na{x=\"1\"} 6\na{x=\"2\"} 7\na{x=\"3\"} 1\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n",
		"# HELP a A.\n# TYPE a counter\na{x=\"1\"} 7\na{x=\"2\"} 8\na{x=\"3\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n",
	}
	var in Interner
	var last []Sample
	for i, p := range pages {
		got, err := in.Parse([]byte(p), "")
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		want, _ := Parse([]byte(p), "")
		if !slices.EqualFunc(got, want, sameSample) {
			t.Fatalf("page %d: %v, want %v", i, got, want)
		}
		if i == 1 && (unsafe.StringData(got[0].Labels) != unsafe.StringData(last[0].Labels) ||
			unsafe.StringData(got[2].Name) != unsafe.StringData(last[2].Name)) {
			t.Error("page 1 does not share page 0's strings")
		}
		last = got
	}
	// The last page's series, but its third series a copy of the first.
	dup := strings.Replace(pages[3], `a{x="3"} 2`, `a{x="1"} 2`, 1)
	if _, err := in.Parse([]byte(dup), ""); err == nil || !strings.Contains(err.Error(), "duplicate series") {
		t.Fatalf("duplicate after a clean page: %v", err)
	}
}

// An Interner starts again empty past its bound.
func TestInternerBound(t *testing.T) {
	defer func(n int) { maxInterned = n }(maxInterned)
	maxInterned = 4
	var in Interner
	for i := range 3 {
		if _, err := in.Parse(fmt.Appendf(nil, "a{x=\"%d\"} 1\nb 1\nc 1\n", i), ""); err != nil {
			t.Fatal(err)
		}
		if len(in.m) > maxInterned {
			t.Fatalf("page %d: %d strings held, bound %d", i, len(in.m), maxInterned)
		}
	}
}

// A missing final newline is a complete last line, not a torn one.
func TestParseAcceptsMissingFinalNewline(t *testing.T) {
	ss, err := Parse([]byte("a 1\nb 2"), "")
	if err != nil || len(ss) != 2 || ss[1].Value != 2 {
		t.Fatalf("got %v, %v", ss, err)
	}
}

// Labels are canonical JSON with sorted keys, and inert inside HTML.
func TestLabelsEncoding(t *testing.T) {
	m := map[string]string{"z": "1", "a": "</script><img src=x onerror=alert(1)>", "q": "\"\\\n\t\x01&"}
	s := EncodeLabels(m)
	if strings.ContainsAny(s, "<>&") {
		t.Fatalf("labels %s hold raw HTML characters", s)
	}
	if !strings.HasPrefix(s, `{"a":`) {
		t.Fatalf("keys not sorted: %s", s)
	}
	back, err := DecodeLabels(s)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		if back[k] != v {
			t.Errorf("label %s: %q round-tripped to %q", k, v, back[k])
		}
	}
	if EncodeLabels(nil) != "{}" {
		t.Errorf("empty set = %s", EncodeLabels(nil))
	}
	if _, err := DecodeLabels("{bad"); err == nil {
		t.Error("DecodeLabels accepted bad JSON")
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(realDir, "*.txt"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a{b=\"c\"} 1\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		ss, err := Parse(body, "text/plain")
		if err != nil && ss != nil {
			t.Fatalf("error %v with samples", err)
		}
		seen := map[string]bool{}
		for _, s := range ss {
			k := s.Name + s.Labels
			if seen[k] {
				t.Fatalf("duplicate %s passed", k)
			}
			seen[k] = true
			if _, err := DecodeLabels(s.Labels); err != nil {
				t.Fatalf("labels %s: %v", s.Labels, err)
			}
		}
	})
}

// Two pages parsed in turn through an Interner give what Parse gives each:
// the same samples, the same refusal (a duplicate after a clean page with
// the same series but one included).
func FuzzInterner(f *testing.F) {
	f.Add([]byte("a{x=\"1\"} 1\na{x=\"2\"} 2\n"), []byte("a{x=\"1\"} 1\na{x=\"1\"} 2\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n"), []byte("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 2\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var in Interner
		for _, page := range [][]byte{a, b, a} {
			got, gerr := in.Parse(page, "text/plain")
			want, werr := Parse(page, "text/plain")
			if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Fatalf("interned error %v, Parse's %v", gerr, werr)
			}
			if !slices.EqualFunc(got, want, sameSample) {
				t.Fatalf("interned %v, Parse's %v", got, want)
			}
		}
	})
}

// sameSample compares samples, their timestamps by value.
func sameSample(a, b Sample) bool {
	ta, tb := a.TimestampMs, b.TimestampMs
	a.TimestampMs, b.TimestampMs = nil, nil
	va, vb := a.Value, b.Value
	a.Value, b.Value = 0, 0
	return a == b && math.Float64bits(va) == math.Float64bits(vb) && (ta == nil) == (tb == nil) && (ta == nil || *ta == *tb)
}

func BenchmarkParseVLLMV1(b *testing.B) { benchParse(b, nil) }

// BenchmarkParseVLLMV1Interned parses the page as the recorder does, through
// the target's Interner: every page after the first repeats its strings.
func BenchmarkParseVLLMV1Interned(b *testing.B) { benchParse(b, &Interner{}) }

func benchParse(b *testing.B, in *Interner) {
	body, err := os.ReadFile(filepath.Join(realDir, "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		b.Skipf("real capture absent: %v", err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := in.Parse(body, "text/plain"); err != nil {
			b.Fatal(err)
		}
	}
}
