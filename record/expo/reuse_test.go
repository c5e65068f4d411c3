package expo

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// valueSpans are where each sample line's last field (its value, or its
// timestamp) is: what a target's next page changes.
func valueSpans(page []byte) [][2]int {
	var out [][2]int
	for pos := 0; pos < len(page); {
		end := len(page)
		if i := bytes.IndexByte(page[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		line := bytes.TrimLeft(page[pos:end], " \t")
		if len(line) > 0 && line[0] != '#' {
			if sp := bytes.LastIndexAny(page[pos:end], " \t"); sp >= 0 {
				out = append(out, [2]int{pos + sp + 1, end})
			}
		}
		pos = end + 1
	}
	return out
}

// withValues is page with its i-th value replaced by pick(i, old).
func withValues(page []byte, pick func(i int, old []byte) []byte) []byte {
	var b []byte
	last := 0
	for i, sp := range valueSpans(page) {
		b = append(b, page[last:sp[0]]...)
		b = append(b, pick(i, page[sp[0]:sp[1]])...)
		last = sp[1]
	}
	return append(b, page[last:]...)
}

// bump is a value plus one, as a counter's next page has it ("3.0" → "4").
func bump(_ int, old []byte) []byte {
	v, err := strconv.ParseFloat(string(old), 64)
	if err != nil {
		return old
	}
	return strconv.AppendFloat(nil, v+1, 'g', -1, 64)
}

// oddValues are values whose reading differs by the sample's kind, or
// that expfmt refuses, or that are not a value alone.
var oddValues = []string{"7", "1.5", "-1", "-0", "0", "NaN", "+Inf", "-Inf", "1e400", "1e-400",
	"18446744073709551615", "1.8446744073709552e19", "9.3e18", "0x1p3", "0x10", "1_000", "", "1 1712345678000",
	"1\t2", "inf", "nan", "+1", ".5", "5.", "1e", "abc", "1\r", "Infinity", "-1.5"}

// checkSequence parses pages in turn through one new Interner and each
// alone with Parse, and fails on any difference (samples or error).
func checkSequence(t *testing.T, pages ...[]byte) *Interner {
	t.Helper()
	var in Interner
	checkWith(t, &in, pages...)
	return &in
}

// Every real capture, its values changed line by line (each line a value
// of oddValues in turn, or its own value plus one), parses through the
// Interner as Parse parses it; the pages whose values all parse are read
// by their values alone.
func TestReuseRealCaptures(t *testing.T) {
	eachParsingCapture(t, func(t *testing.T, page []byte) {
		bumped := withValues(page, bump)
		in := checkSequence(t, page, page, bumped, page)
		if in.reused != 3 {
			t.Errorf("%d of the pages after the first read by their values alone, want 3", in.reused)
		}
		for k, odd := range oddValues {
			changed := withValues(page, func(i int, old []byte) []byte {
				if (i+k)%3 != 0 {
					return old
				}
				return []byte(odd)
			})
			checkSequence(t, page, page, changed, bumped, changed, page)
		}
	})
}

// A page whose shape changed (a line more, a label changed, a comment
// changed) is parsed in full, and the map follows the new shape.
func TestReuseShapeChanges(t *testing.T) {
	a := []byte("# HELP c a counter\n# TYPE c counter\nc{x=\"1\"} 1\nc{x=\"2\"} 2\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.3\nh_count 2\n# TYPE s summary\ns{quantile=\"0.5\"} 4\ns_sum 5\ns_count 6\n")
	pages := [][]byte{a, a,
		bytes.Replace(a, []byte("c{x=\"2\"} 2\n"), []byte("c{x=\"2\"} 2\nc{x=\"3\"} 3\n"), 1),
		bytes.Replace(a, []byte("x=\"1\""), []byte("x=\"9\""), 1),
		bytes.Replace(a, []byte("a counter"), []byte("the counter"), 1),
		bytes.Replace(a, []byte("h_count 2"), []byte("h_count 2.5"), 1),
		bytes.Replace(a, []byte("s_count 6"), []byte("s_count 6.7"), 1),
		bytes.Replace(a, []byte("h_count 2"), []byte("h_count -2"), 1),
		bytes.Replace(a, []byte("c{x=\"1\"} 1"), []byte("c{x=\"1\"} 1 1000"), 1),
		bytes.TrimSuffix(a, []byte("\n")),
		a, a,
	}
	in := checkSequence(t, pages...)
	if in.reused == 0 {
		t.Error("no page was read by its values alone")
	}
}

// FuzzReuse: a page, then the same page with some values replaced, parse
// through one Interner as Parse parses each.
func FuzzReuse(f *testing.F) {
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n"), []byte{1, 2, 3})
	f.Add([]byte("# TYPE s summary\ns{quantile=\"0.9\",a=\"b\"} 1\ns_sum 2\ns_count 1\nu 3\n"), []byte{5, 0, 9})
	f.Add([]byte("a{x=\"1\"} 1\na{x=\"2\"} 2\n"), []byte{4})
	f.Add([]byte("# TYPE g gauge\ng{a=\"\\\\\\n\\\"\"} -1.5\ng 2\n"), []byte{7, 8})
	f.Fuzz(func(t *testing.T, page, picks []byte) {
		if len(picks) == 0 {
			return
		}
		changed := pickValues(page, picks)
		checkSequence(t, page, page, changed, page, changed)
	})
}

// BenchmarkParseVLLMV1Reused parses the page as the recorder does at every
// scrape after the second: through the target's Interner, its values
// changed (each page's differ from the page before's).
func BenchmarkParseVLLMV1Reused(b *testing.B) {
	benchAlternating(b, func(body []byte) []byte { return withValues(body, bump) })
}

// benchAlternating parses the real vLLM V1 page and next(page) in turn
// through one Interner, as the recorder parses a target's successive
// pages, and fails unless every page after the first two was read by its
// values alone.
func benchAlternating(b *testing.B, next func(body []byte) []byte) {
	body, err := os.ReadFile(filepath.Join(realDir, "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		b.Skipf("real capture absent: %v", err)
	}
	pages := [2][]byte{body, next(body)}
	var in Interner
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if _, err := in.Parse(pages[k%2], "text/plain"); err != nil {
			b.Fatal(err)
		}
		k++
	}
	if in.reused < k-2 {
		b.Fatalf("%d of %d pages read by their values alone", in.reused, k)
	}
}

// pickValues is page with its i-th value replaced by
// oddValues[picks[i%len(picks)]] where that names one (picks not empty).
func pickValues(page, picks []byte) []byte {
	return withValues(page, func(i int, old []byte) []byte {
		p := int(picks[i%len(picks)])
		if p >= len(oddValues) {
			return old
		}
		return []byte(oddValues[p])
	})
}
