package rate

import (
	"slices"
	"testing"
)

// Keys registered as new are found by Register with the ids they got,
// whichever came first, and every series lists its keys in order of
// registration, names interleaved or not.
func TestRegisterNewIsRegister(t *testing.T) {
	keys := []Key{
		{"a_bucket", `{le="1"}`}, {"a_bucket", `{le="+Inf"}`}, {"a_count", ""},
		{"b_total", ""}, {"a_bucket", `{le="2"}`}, {"b_total", `{x="1"}`}, {"c", ""},
	}
	plain, mixed := New(Config{}), New(Config{})
	for i, k := range keys {
		want := plain.Register(k)
		var got int32
		if i%3 == 2 {
			got = mixed.Register(k)
		} else {
			got = mixed.RegisterNew(k)
		}
		if got != want {
			t.Fatalf("key %v: id %d, want %d", k, got, want)
		}
	}
	for i, k := range keys {
		if got := mixed.Register(k); got != int32(i) {
			t.Errorf("Register(%v) after RegisterNew: %d, want %d", k, got, i)
		}
	}
	if n := mixed.Register(Key{"d", ""}); n != int32(len(keys)) {
		t.Errorf("a new key after them: %d", n)
	}
	for name, s := range plain.series {
		if m := mixed.series[name]; m == nil || !slices.Equal(m.keys, s.keys) {
			t.Errorf("series %s: keys %v, want %v", name, m, s.keys)
		}
	}
}
