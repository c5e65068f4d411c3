package expo

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// seriesPage is a page of n gauge series, each with a label set like a
// serving engine's.
func seriesPage(n int) []byte {
	b := make([]byte, 0, n*60)
	b = append(b, "# HELP big_gauge A gauge with many series.\n# TYPE big_gauge gauge\n"...)
	for i := range n {
		b = append(b, `big_gauge{model_name="org/model",request="`...)
		b = append(b, fmt.Sprintf("%08d", i%100_000_000)...)
		b = append(b, `"} `...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b
}

var defaults = Limits{MaxSeries: 200_000, MaxLabelValueBytes: 16 << 10, MaxLabelBytes: 32 << 20}

// A page over a limit is refused before parsing, with an error that names
// the limit, its key and both numbers; a page within them is not.
func TestLimitsCheck(t *testing.T) {
	long := strings.Repeat("x", 20_000)
	for _, c := range []struct {
		name string
		page []byte
		lim  Limits
		want string // "" within the limits
	}{
		{"a million series", seriesPage(1_000_000), defaults,
			"too many series: 1000000 > 200000 (max_series); body stored unparsed"},
		{"at the limit", seriesPage(200), Limits{MaxSeries: 200}, ""},
		{"one over", seriesPage(201), Limits{MaxSeries: 200}, "too many series: 201 > 200 (max_series)"},
		{"comments and blank lines are no series", []byte("# HELP a x\n\n  # TYPE a gauge\na 1\n"), Limits{MaxSeries: 1}, ""},
		{"a long label value", fmt.Appendf(nil, "up{model_name=%q} 1\n", long), defaults,
			"label value too long: 20000 bytes > 16384 (max_label_value_bytes)"},
		{"a long label set of short values", fmt.Appendf(nil, "up{a=%q,b=%q} 1\n", long[:10_000], long[:10_000]), defaults, ""},
		{"an escaped quote does not end a value", []byte(`up{a="` + strings.Repeat(`\"`, 600) + `",b="x"} 1` + "\n"), Limits{MaxLabelValueBytes: 1000},
			"label value too long: 1200 bytes > 1000 (max_label_value_bytes)"},
		{"a brace inside a value", []byte(`up{a="}}}",b="` + long[:50] + `"} 1` + "\n"), Limits{MaxLabelValueBytes: 40},
			"label value too long: 50 bytes > 40 (max_label_value_bytes)"},
		{"label bytes of the page", seriesPage(1000), Limits{MaxLabelBytes: 40_000},
			"too many label bytes: 43000 > 40000 (max_label_bytes)"},
		{"no limits", seriesPage(1000), Limits{}, ""},
	} {
		err := c.lim.Check(c.page)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		case c.want != "" && !errors.Is(err, ErrOverLimit):
			t.Errorf("%s: %v is not ErrOverLimit", c.name, err)
		}
	}
}

// Real engine pages are far within the default limits.
func TestRealCapturesWithinDefaultLimits(t *testing.T) {
	for _, f := range realCaptures(t) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := defaults.Check(body); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The pre-scan of a 40 MB page of a million series: it decides before
// expfmt would spend about a gigabyte on it.
func BenchmarkLimitsCheckMillionSeries(b *testing.B) {
	page := seriesPage(1_000_000)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if err := defaults.Check(page); err == nil {
			b.Fatal("a million series passed")
		}
	}
}
