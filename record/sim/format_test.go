package sim

import (
	"math"
	"testing"
)

// Values print the way prometheus_client prints them, so that bodies look
// like the real captures ("246.0", "1.7710424574207425e+09").
func TestAppendPy(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0.0"},
		{246, "246.0"},
		{-3, "-3.0"},
		{999999, "999999.0"},
		{1e6, "1e+06"},
		{1234567, "1.234567e+06"},
		{1.372014592e10, "1.372014592e+010"},
		{1.109622784e9, "1.109622784e+09"},
		{1.7710424574207425e9, "1.7710424574207425e+09"},
		{1234567890123456, "1.234567890123456e+015"},
		{1e16, "1e+16"},
		{0.0011764705882353343, "0.0011764705882353343"},
		{41.34994294199987, "41.34994294199987"},
		{14.040000000000001, "14.040000000000001"},
		{0.3, "0.3"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1.5e-7, "1.5e-07"},
		{-1234567, "-1234567.0"},
		{-0.5, "-0.5"},
		{math.Inf(1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"},
	} {
		if got := string(appendPy(nil, c.v)); got != c.want {
			t.Errorf("appendPy(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// llama.cpp prints floats with six significant digits, like a C++ ostream.
func TestAppendG6(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{3.037, "3.037"},
		{2903.634, "2903.63"},
		{0.9787641, "0.978764"},
		{806.99891, "806.999"},
		{10098.52, "10098.5"},
		{3.96680, "3.9668"},
		{2, "2"},
		{0, "0"},
		{1234567, "1.23457e+06"},
		{0.00001, "1e-05"},
	} {
		if got := string(appendG6(nil, c.v)); got != c.want {
			t.Errorf("appendG6(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestLabelStr(t *testing.T) {
	got := labelStr("model_name", `a"b\c`, "engine", "0", "le", "0.5")
	want := `engine="0",le="0.5",model_name="a\"b\\c"`
	if got != want {
		t.Errorf("labelStr = %s, want %s", got, want)
	}
}
