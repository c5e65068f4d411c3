package rate

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// A cell's JSON always carries value, as null or a number; window, reason,
// severity and notes only when they say something.
func TestCellJSON(t *testing.T) {
	for _, tc := range []struct {
		c    Cell
		want string
	}{
		{Cell{Source: "x", Reason: ReasonAbsent}, `{"value":null,"source":"x","derived":false,"reason":"absent"}`},
		{Cell{Value: Some(0), Source: "x", Derived: true, Window: Some(2)}, `{"value":0,"source":"x","derived":true,"window":2}`},
		{Cell{Value: Some(0.95), Source: "vllm:kv_cache_usage_perc", Severity: KVSeverity(0.95)},
			`{"value":0.95,"source":"vllm:kv_cache_usage_perc","derived":false,"severity":"fail"}`},
		{Cell{Value: Some(math.NaN()), Window: Some(math.Inf(1))}, `{"value":null,"source":"","derived":false,"window":null}`},
	} {
		b, err := json.Marshal(tc.c)
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s, %v\nwant %s", b, err, tc.want)
		}
	}
}

// A Num survives a JSON round trip, null included; anything else is an error.
func TestNum(t *testing.T) {
	for _, n := range []Num{{}, Some(0), Some(-1.5), Some(1e21)} {
		b, _ := json.Marshal(n)
		var back Num
		if err := json.Unmarshal(b, &back); err != nil || back != n {
			t.Errorf("%v → %s → %v, %v", n, b, back, err)
		}
	}
	var n Num
	if err := json.Unmarshal([]byte(`"7"`), &n); err == nil {
		t.Error("a string decoded as a number")
	}
	if Some(2.5).String() != "2.5" || (Num{}).String() != "null" {
		t.Errorf("String: %s %s", Some(2.5), Num{})
	}
	if p := Some(3).Ptr(); p == nil || *p != 3 || (Num{}).Ptr() != nil {
		t.Error("Ptr")
	}
	if !(Num{}).IsZero() || Some(0).IsZero() {
		t.Error("IsZero")
	}
}

// Labels sorts by name and escapes values, so equal sets are equal strings
// and a quote in a value cannot splice two keys into one.
func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		pairs []string
		want  string
	}{
		{nil, ""},
		{[]string{"model_name", "m", "engine", "0"}, `{engine="0",model_name="m"}`},
		{[]string{"weird", "a\"b\\c\nd"}, `{weird="a\"b\\c\nd"}`},
	} {
		got := Labels(tc.pairs...)
		if got != tc.want {
			t.Errorf("Labels(%q) = %s, want %s", tc.pairs, got, tc.want)
		}
		var back []string
		if !eachLabel(got, func(n, v string) bool { back = append(back, n, v); return true }) {
			t.Errorf("%s does not parse back", got)
		}
		if want := Labels(back...); want != got {
			t.Errorf("round trip %s → %s", got, want)
		}
	}
	if v, ok := labelValue(`{a="1",le="0.5"}`, "le"); !ok || v != "0.5" {
		t.Errorf("labelValue = %q, %v", v, ok)
	}
	if _, ok := labelValue(`{a="1"}`, "le"); ok {
		t.Error("found a label that is not there")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "odd") {
			t.Errorf("odd pairs: %v", r)
		}
	}()
	odd := strings.Fields("a")
	Labels(odd...)
}

// A malformed label set is reported, not half-read.
func TestEachLabelMalformed(t *testing.T) {
	for _, s := range []string{`{`, `x`, `a="1"`, `{a}`, `{="1"}`, `{a="1}`, `{a="1"b="2"}`, `{a="1",}`} {
		if eachLabel(s, func(string, string) bool { return true }) {
			t.Errorf("%q read as well formed", s)
		}
	}
}

// Config fills defaults and reads negative values as a gate turned off.
func TestConfig(t *testing.T) {
	c := New(Config{}).Config()
	want := Config{Span: 10, MinWindow: 0.5, CeilingFactor: 2, JumpFactor: 8, JumpFloor: 10, StaleFraction: 0.25}
	if c != want {
		t.Errorf("defaults %+v, want %+v", c, want)
	}
	off := Config{Span: -1, MinWindow: -1, CeilingFactor: -1, JumpFactor: -1, JumpFloor: -1, StaleFraction: -1}.WithDefaults()
	if off.Span != 10 || off.MinWindow != 0 || off.JumpFloor != 0 ||
		!math.IsInf(off.CeilingFactor, 1) || !math.IsInf(off.JumpFactor, 1) || !math.IsInf(off.StaleFraction, 1) {
		t.Errorf("off %+v", off)
	}
	if c := (Config{Span: math.NaN()}).WithDefaults(); c.Span != 10 {
		t.Errorf("NaN span %v", c.Span)
	}
}

// A KV cell keeps the ratio as read and gains a verdict; a missing or
// non-finite ratio gets none.
func TestKVCell(t *testing.T) {
	for _, tc := range []struct {
		ratio Num
		want  string
	}{
		{Some(0), `{"value":0,"source":"llamacpp:kv_cache_usage_ratio","derived":false,"severity":"ok"}`},
		{Some(0.9), `{"value":0.9,"source":"llamacpp:kv_cache_usage_ratio","derived":false,"severity":"fail"}`},
		{Num{}, `{"value":null,"source":"llamacpp:kv_cache_usage_ratio","derived":false,"reason":"absent"}`},
		{Some(math.NaN()), `{"value":null,"source":"llamacpp:kv_cache_usage_ratio","derived":false,"reason":"absent"}`},
	} {
		if got := show(KVCell("llamacpp:kv_cache_usage_ratio", tc.ratio)); got != tc.want {
			t.Errorf("KVCell(%v) = %s, want %s", tc.ratio, got, tc.want)
		}
	}
}

// ClipLabels leaves short sets alone and cuts long values to a prefix, the
// length and a digest: two long values that share the prefix stay apart,
// and a multi-byte rune is never split.
func TestClipLabels(t *testing.T) {
	short := Labels("model_name", "m", "engine", "0")
	if got := ClipLabels(short); got != short {
		t.Errorf("short set changed: %s", got)
	}
	a := Labels("model_name", strings.Repeat("é", 300)+"a", "engine", "0")
	b := Labels("model_name", strings.Repeat("é", 300)+"b", "engine", "0")
	ca, cb := ClipLabels(a), ClipLabels(b)
	if ca == cb {
		t.Errorf("two long values clip alike: %s", ca)
	}
	if len(ca) > 160 || !strings.Contains(ca, `engine="0"`) || !strings.Contains(ca, "(601 bytes, fnv ") || !utf8.ValidString(ca) {
		t.Errorf("clipped %s", ca)
	}
	if v, ok := labelValue(ca, "model_name"); !ok || !strings.HasPrefix(v, strings.Repeat("é", 20)+"…") {
		t.Errorf("clipped value %q %v", v, ok)
	}
	bad := "{" + strings.Repeat("x", 300)
	if ClipLabels(bad) != bad {
		t.Error("a malformed set was changed")
	}
}

// A value with nothing escaped is handed over as the set's own bytes, a
// value with escapes unescaped (a quote past a backslash is not its end).
func TestEachLabelValues(t *testing.T) {
	for _, tc := range []struct {
		labels string
		want   []string
	}{
		{`{a="1",b=""}`, []string{"a", "1", "b", ""}},
		{`{a="x\"y",b="2"}`, []string{"a", `x"y`, "b", "2"}},
		{`{a="\\",b="\n\q"}`, []string{"a", `\`, "b", "\nq"}},
		{`{a="1\\",b="2"}`, []string{"a", `1\`, "b", "2"}},
	} {
		var got []string
		if !eachLabel(tc.labels, func(n, v string) bool { got = append(got, n, v); return true }) {
			t.Errorf("%s: not well formed", tc.labels)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.labels, got, tc.want)
		}
	}
	plain := `{engine="0",le="0.5",model_name="m"}`
	if n := testing.AllocsPerRun(100, func() {
		eachLabel(plain, func(string, string) bool { return true })
	}); n != 0 {
		t.Errorf("a set with nothing escaped: %v allocations a read, want 0", n)
	}
}
