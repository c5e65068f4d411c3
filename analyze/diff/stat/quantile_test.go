package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The selected order statistics of the differences are those of the
// listed differences, ties included.
func TestKthDiffMatchesListing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		m, n := 1+rng.IntN(40), 1+rng.IntN(40)
		b, c := make([]float64, m), make([]float64, n)
		for i := range b {
			b[i] = math.Round(rng.NormFloat64()*10) / 4 // ties
		}
		for i := range c {
			c[i] = math.Round(rng.NormFloat64()*10+float64(trial%3)) / 4
		}
		slices.Sort(b)
		slices.Sort(c)
		var d []float64
		for _, y := range c {
			for _, x := range b {
				d = append(d, y-x)
			}
		}
		slices.Sort(d)
		for _, k := range []int{1, 2, len(d) / 3, (len(d) + 1) / 2, len(d)} {
			if k < 1 {
				continue
			}
			if got := kthDiff(b, c, k); got != d[k-1] {
				t.Fatalf("trial %d: k=%d of %d: got %g, want %g", trial, k, len(d), got, d[k-1])
			}
		}
	}
}

// Past MaxPairs the shift and its interval are selected, not listed: the
// same answer as listing, for samples of per-request size.
func TestShiftLargeSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b, c := make([]float64, 700), make([]float64, 800)
	for i := range b {
		b[i] = math.Exp(rng.NormFloat64() * 0.4)
	}
	for i := range c {
		c[i] = 1.2 * math.Exp(rng.NormFloat64()*0.4)
	}
	lb, lc := logs(b), logs(c)
	slices.Sort(lb)
	slices.Sort(lc)
	est, lo, hi, _ := shift(lb, lc, 0.95)
	d := make([]float64, 0, len(b)*len(c))
	for _, y := range lc {
		for _, x := range lb {
			d = append(d, y-x)
		}
	}
	slices.Sort(d)
	k, _ := order(len(b), len(c), 0.95)
	if est != median(d) || lo != d[k-1] || hi != d[len(d)-k] {
		t.Fatalf("selected %g [%g, %g], listed %g [%g, %g]", est, lo, hi, median(d), d[k-1], d[len(d)-k])
	}
	if r := Compare(b, c, 0.95); !(r.ChangeLo < 0.2 && r.ChangeHi > 0.2 && r.P < 1e-6) {
		t.Fatalf("a 20%% shift of 700 and 800 values: %+v", r)
	}
}

// Equal distributions: the quantile test rejects at about alpha; a
// shifted tail is found with an interval holding the true change.
func TestQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	draw := func(n int, scale float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = scale * math.Exp(rng.NormFloat64()*0.5)
		}
		return xs
	}
	rejected := 0
	const trials = 400
	for range trials {
		if r := Quantiles(draw(600, 1), draw(600, 1), 0.9, 0.95); r.Insufficient == "" && r.P < 0.05 {
			rejected++
		}
	}
	if f := float64(rejected) / trials; f > 0.09 {
		t.Errorf("A/A: the p90 test rejected %.1f%% of %d trials at 0.05", 100*f, trials)
	}
	r := Quantiles(draw(2000, 1), draw(2000, 1.5), 0.99, 0.95)
	if r.Insufficient != "" || !(r.P < 0.05) || !(r.ChangeLo < 0.5 && r.ChangeHi > 0.5 && r.ChangeLo > 0) {
		t.Fatalf("p99 of a 1.5× scale: %+v", r)
	}
	if r := Quantiles(draw(100, 1), draw(100, 1), 0.99, 0.95); r.Insufficient == "" {
		t.Fatalf("p99 of 100 values has an interval: %+v", r)
	}
}

func TestProportions(t *testing.T) {
	r := Proportions(10, 1000, 40, 1000, 0.95)
	if r.Insufficient != "" || !(r.P < 1e-4) || math.Abs(r.Change-3) > 1e-12 || !(r.ChangeLo > 1 && r.ChangeHi < 8) {
		t.Fatalf("1%% → 4%%: %+v", r)
	}
	if r := Proportions(0, 500, 0, 500, 0.95); r.P != 1 || !math.IsNaN(r.Change) || r.Base.Median != 0 {
		t.Fatalf("0 of 500 on both: %+v", r)
	}
	if r := Proportions(1, 3, 1, 500, 0.95); r.Insufficient == "" {
		t.Fatalf("3 requests: %+v", r)
	}
}

// Two samples of a client's per-request values, 24,000 requests a side
// (20 minutes at 20 requests/s): the p50 row (Mann-Whitney, the
// Hodges-Lehmann shift selected among 5.8e8 differences) and a p99 row.
func BenchmarkPerRequest(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	base, cand := make([]float64, 24000), make([]float64, 24000)
	for i := range base {
		base[i] = math.Exp(rng.NormFloat64() * 0.5)
		cand[i] = 1.05 * math.Exp(rng.NormFloat64()*0.5)
	}
	b.Run("p50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compare(base, cand, 0.95)
		}
	})
	b.Run("p99", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Quantiles(base, cand, 0.99, 0.95)
		}
	})
}
