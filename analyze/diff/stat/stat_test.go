package stat

import (
	"math"
	"strings"
	"testing"
)

// Hollander & Wolfe (1973), p. 69f, as in R's ?wilcox.test: permeability
// constants of the human chorioamnion at term (x) and at 12 to 26 weeks
// (y).
var (
	hwX = []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	hwY = []float64{1.15, 0.88, 0.90, 0.74, 1.21}
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The test is the exact Mann-Whitney U test (go-moremath via benchmath).
// R's ?wilcox.test prints for wilcox.test(x, y, alternative = "g"):
// W = 35, p-value = 0.1272; the exact distribution is symmetric, so the
// two-sided p-value is twice that.
func TestUTestReference(t *testing.T) {
	r := Compare(hwY, hwX, 0.95)
	if !near(r.P, 2*0.1272, 1e-4) {
		t.Errorf("P = %v, want 0.2544 (2 × R's one-sided 0.1272)", r.P)
	}
	if r.Insufficient != "" {
		t.Errorf("Insufficient = %q", r.Insufficient)
	}
}

// The Hodges-Lehmann shift of the same data: Hollander & Wolfe's estimate
// of the shift x − y is Δ̂ = 0.305 (the median of the 50 differences).
// Its 95 % Moses interval runs from the k-th smallest to the k-th largest
// difference, k = U_crit + 1 with U_crit = 8 the two-tailed 0.05 critical
// value of U for sizes 5 and 10 (table of critical values of the
// Mann-Whitney U, e.g. Hollander & Wolfe Table A.6 / Zar's Table B.11):
// the 9th and 42nd of the sorted differences, −0.15 and 0.76.
func TestHodgesLehmannReference(t *testing.T) {
	est, lo, hi, got := shift(sorted(hwY), sorted(hwX), 0.95)
	if !near(est, 0.305, 1e-9) || !near(lo, -0.15, 1e-9) || !near(hi, 0.76, 1e-9) {
		t.Errorf("shift = %v [%v, %v], want 0.305 [-0.15, 0.76]", est, lo, hi)
	}
	if !near(got, 0.96, 0.001) {
		t.Errorf("achieved level %v, want 1 − 2·P(U ≤ 8) ≈ 0.960", got)
	}
}

// The interval's order k is one more than the two-tailed α = 0.05
// critical value of U in the published tables of the Mann-Whitney U (Mann
// & Whitney 1947; Milton 1964; reproduced in Zar, Biostatistical
// Analysis, Table B.11): 4,4 → 0; 5,5 → 2; 6,6 → 5; 7,7 → 8; 8,8 → 13;
// 9,9 → 17; 10,10 → 23; 5,10 → 8; 20,20 → 127.
func TestOrderReference(t *testing.T) {
	for _, c := range []struct{ m, n, crit int }{
		{4, 4, 0}, {5, 5, 2}, {6, 6, 5}, {7, 7, 8}, {8, 8, 13},
		{9, 9, 17}, {10, 10, 23}, {5, 10, 8}, {10, 5, 8}, {20, 20, 127},
	} {
		if k, got := computeOrder(c.m, c.n, 0.95); k != c.crit+1 || got < 0.95 {
			t.Errorf("order(%d, %d) = %d (level %v), want %d (level ≥ 0.95)", c.m, c.n, k, got, c.crit+1)
		}
	}
	// The large-sample rule lands on the exact table's value where the
	// table reaches: 20,20 → 127 + 1.
	if k, _ := normalOrder(20, 20, 0.95); k != 128 {
		t.Errorf("normalOrder(20, 20) = %d, want 128", k)
	}
}

// The sample's centre is benchmath's AssumeNothing summary; benchmath's own
// test (assumption_test.go, TestSummaryNone): {-10, 2, 3, 4, 5, 6} at 0.95
// is 3.5 in [-10, 6], and needs ≥ 6 values for an interval at all.
func TestEstimateReference(t *testing.T) {
	r := Compare([]float64{-10, 2, 3, 4, 5, 6}, []float64{1, 2, 3, 4, 5}, 0.95)
	if b := r.Base; b.N != 6 || b.Median != 3.5 || b.Lo != -10 || b.Hi != 6 {
		t.Errorf("Base = %+v, want 3.5 in [-10, 6]", b)
	}
	if c := r.Cand; c.N != 5 || c.Median != 3 || !math.IsInf(c.Lo, -1) {
		t.Errorf("Cand = %+v, want 3 with an unbounded interval", c)
	}
	// A negative baseline value: no logs; the shift over the median.
	if r.Method != MethodDiff {
		t.Errorf("Method = %q, want %q", r.Method, MethodDiff)
	}
}

// A ratio: the change is exp(HL shift of logs) − 1, and a sample scaled by
// 0.9 has a change of exactly −10 % with an interval around it.
func TestChangeOfScaledSample(t *testing.T) {
	base := []float64{101, 97, 103, 99, 100, 98, 102, 104, 96, 100.5}
	cand := make([]float64, len(base))
	for i, x := range base {
		cand[i] = 0.9 * x
	}
	r := Compare(base, cand, 0.95)
	if !near(r.Change, -0.10, 1e-12) {
		t.Errorf("Change = %v, want −0.10", r.Change)
	}
	if !(r.ChangeLo <= r.Change && r.Change <= r.ChangeHi) || r.ChangeHi >= 0 {
		t.Errorf("interval [%v, %v] should hold −0.10 and exclude 0", r.ChangeLo, r.ChangeHi)
	}
	if !(r.P < 0.05) || r.Method != MethodLog || r.Beyond(0.05) != -1 || !r.Significant(0.05) {
		t.Errorf("P = %v, method %q, beyond %d", r.P, r.Method, r.Beyond(0.05))
	}
}

func TestInsufficient(t *testing.T) {
	nan := math.NaN()
	r := Compare([]float64{1, nan, 2, nan}, []float64{1, 2, 3, 4}, 0.95)
	if r.Insufficient != "baseline has 2 values (2 missing), at least 4 needed" {
		t.Errorf("Insufficient = %q", r.Insufficient)
	}
	if r.Base.N != 2 || r.Base.Missing != 2 || !math.IsNaN(r.P) || !math.IsNaN(r.Change) || r.Significant(0.05) {
		t.Errorf("r = %+v", r)
	}
	r = Compare(nil, []float64{1, math.Inf(1)}, 0)
	if !strings.HasPrefix(r.Insufficient, "baseline has 0 values, at least 4 needed; candidate has 1 values (1 missing)") || r.Conf != DefaultConf {
		t.Errorf("Insufficient = %q, conf %v", r.Insufficient, r.Conf)
	}
}

// A zero baseline has no relative change; equal samples have none and
// p = 1; a zero among positive values drops to the shift of the values.
func TestEdges(t *testing.T) {
	r := Compare([]float64{0, 0, 0, 0, 1}, []float64{1, 2, 3, 4}, 0.95)
	if !math.IsNaN(r.Change) || !math.IsNaN(r.ChangeLo) || math.IsNaN(r.P) {
		t.Errorf("zero baseline: %+v", r)
	}
	r = Compare([]float64{5, 5, 5, 5}, []float64{5, 5, 5, 5}, 0.95)
	if r.P != 1 || r.Change != 0 || r.ChangeLo != 0 || r.ChangeHi != 0 {
		t.Errorf("equal samples: %+v", r)
	}
	r = Compare([]float64{0, 10, 10, 10, 10}, []float64{11, 11, 11, 11, 11}, 0.95)
	if r.Method != MethodDiff || !near(r.Change, 0.1, 1e-12) {
		t.Errorf("zero in a sample: %+v", r)
	}
}

func sorted(xs []float64) []float64 {
	out, _ := finite(xs)
	return out
}
