package rate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestBucketQuantileFlags checks each flag of a bucket quantile on vLLM's
// e2e bounds cut short: the overflow past the top bound (vLLM #15167's p99
// stuck at 60 s), the first bucket (vLLM PR #48175's p99 never below
// 297 ms), a bucket spanning a factor of 2, and few observations above.
func TestBucketQuantileFlags(t *testing.T) {
	les := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 60, math.Inf(1)}
	cum := func(per ...float64) []float64 {
		out := make([]float64, len(per))
		s := 0.0
		for i, x := range per {
			s += x
			out[i] = s
		}
		return out
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	for _, tc := range []struct {
		name  string
		q     float64
		n     []float64
		lo    Num
		hi    Num
		flags []string
		text  string
	}{
		{"past the top bound", 0.99, cum(0, 0, 0, 0, 0, 0, 0, 0, 0, 500, 500), Some(60), Num{}, []string{">edge"}, ">60"},
		{"first bucket", 0.99, cum(1000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), Some(0), Some(0.3), []string{"≤edge"}, "≤0.3"},
		{"coarse", 0.5, cum(0, 0, 0, 0, 0, 0, 0, 1000, 0, 0, 0), Some(2.5), Some(5), []string{"coarse"}, "3.75 [coarse]"},
		{"fine", 0.5, cum(0, 0, 0, 0, 1000, 0, 0, 0, 0, 0, 0), Some(1), Some(1.5), []string{}, "1.25"},
		{"few", 0.99, cum(0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0), Some(1), Some(1.5), []string{"few"}, "1.495 [few]"},
		{"enough", 0.99, cum(0, 0, 0, 0, 500, 0, 0, 0, 0, 0, 0), Some(1), Some(1.5), []string{}, "1.495"},
		{"few p50", 0.5, cum(0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0), Some(1), Some(1.5), []string{"few"}, "1.25 [few]"},
	} {
		v, b := BucketQuantile(tc.q, les, tc.n)
		if b.Lo != tc.lo || b.Hi != tc.hi {
			t.Errorf("%s: bucket (%v, %v], want (%v, %v]", tc.name, b.Lo, b.Hi, tc.lo, tc.hi)
		}
		if got := b.Flags.Words(); !slices.Equal(got, tc.flags) {
			t.Errorf("%s: flags %q, want %q", tc.name, got, tc.flags)
		}
		if got := b.Text(v, f); got != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, got, tc.text)
		}
		// The flags survive JSON both ways.
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var back Bucket
		if err := json.Unmarshal(j, &back); err != nil || back != b {
			t.Errorf("%s: %s read back as %+v (%v)", tc.name, j, back, err)
		}
	}
}

// Bounds gathered from label sets with the same bounds are not mixed;
// from sets with different ones, or a set lacking one bound, they are.
func TestMixedEdges(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		les  []float64
		want bool
	}{
		{[]float64{0.1, 0.5, inf}, false},
		{[]float64{0.1, 0.5, inf, 0.1, 0.5, inf}, false},
		{[]float64{0.1, 0.5, inf, 0.25, inf}, true},
		{[]float64{0.1, 0.5, inf, 0.1, inf}, true},
	} {
		if got := MixedEdges(c.les); got != c.want {
			t.Errorf("%v: %v, want %v", c.les, got, c.want)
		}
	}
}

// TestRisingQuantileIsBucketQuantile checks that the three quantiles of a
// histogram, each searched from where the last one's search ended, are
// BucketQuantile's bit for bit, on random cumulative counts: rising,
// flat, all zero, negative (float noise: the ranks then fall), NaN.
func TestRisingQuantileIsBucketQuantile(t *testing.T) {
	les := []float64{0.01, 0.05, 0.1, 0.5, 1, 5, math.Inf(1)}
	rng := rand.New(rand.NewPCG(7, 24))
	for i := range 5000 {
		n := make([]float64, len(les))
		var c float64
		for j := range n {
			switch rng.IntN(8) {
			case 0: // flat
			case 1:
				c -= rng.Float64() * 3
			default:
				c += math.Floor(rng.Float64() * 20)
			}
			n[j] = c
		}
		if i%97 == 0 {
			n[rng.IntN(len(n))] = math.NaN()
		}
		if i%5 == 0 {
			les[0] = -0.5 // a first bound ≤ 0
		} else {
			les[0] = 0.01
		}
		k, last := 0, math.Inf(-1)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			var b Bucket
			v := risingQuantile(q, les, n, &k, &last, &b)
			wv, wb := BucketQuantile(q, les, n)
			if math.Float64bits(v) != math.Float64bits(wv) && !(math.IsNaN(v) && math.IsNaN(wv)) || b != wb {
				t.Fatalf("counts %v, q%g: %g %+v, BucketQuantile %g %+v", n, q, v, b, wv, wb)
			}
		}
	}
}
