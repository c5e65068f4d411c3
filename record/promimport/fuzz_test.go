package promimport

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// A store's answer is read without panicking whatever it holds, and a
// timestamp is taken only when it is decimal seconds: then it is the
// number a float reading gives, to the millisecond (truncated), and prints
// back as itself.
func FuzzPair(f *testing.F) {
	for _, s := range []string{`[1700000000.123, "12.5"]`, `[1700000000, "NaN"]`, `[-1.5, "+Inf"]`,
		`[1.-5, "1"]`, "1.-5", "1.+5", "--1", "9223372036854775.807", `[9223372036854775.807, "0"]`, `[99999999999999999, "1"]`, `[1e9, "1"]`, `[, ]`, `["1", 1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pair
		_ = json.Unmarshal(b, &p)
		var ps []pair
		_ = json.Unmarshal(b, &ps)
		ms, err := parseMs(b)
		if err != nil {
			return
		}
		x, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil {
			t.Fatalf("parseMs(%q) = %d, but it is no number (%v)", b, ms, ferr)
		}
		if math.Abs(x) < 1e12 && math.Abs(x*1000-float64(ms)) >= 1.001 {
			t.Fatalf("parseMs(%q) = %d, a float reads %v s", b, ms, x)
		}
		if back, err := parseMs([]byte(msText(ms))); err != nil || back != ms {
			t.Fatalf("msText(%d) = %s reads back as %d, %v", ms, msText(ms), back, err)
		}
	})
}
