// Package stat compares two samples of one quantity: a baseline and a
// candidate, each a set of independent values (one per non-overlapping
// block of a steady phase, or one per repeat of a run). It is pure: no I/O,
// no formatting beyond the method's name.
//
// The method is benchstat's (golang.org/x/perf/benchmath, AssumeNothing):
// each sample's centre is its median with a distribution-free confidence
// interval from order statistics, and the two samples are compared with the
// two-sided Mann-Whitney U test (exact for small samples without ties,
// normal approximation with tie correction otherwise). benchmath gives no
// interval for the change; here it is the Hodges-Lehmann estimator of the
// shift between the samples' log values (the median of all pairwise
// differences log cand − log base) with the Mann-Whitney-based (Moses)
// confidence interval of Hollander & Wolfe, exponentiated to a ratio: the
// change is exp(shift) − 1. This is what R's wilcox.test(log(cand),
// log(base), conf.int=TRUE) computes in its exact case. Where a sample holds
// a zero the logs are undefined and the shift is of the values themselves,
// divided by the baseline's median. See docs/diff-method.md.
package stat

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// MinValues is the fewest values a sample needs for a verdict: with four
// values on each side the smallest two-sided Mann-Whitney p-value is
// 2/70 ≈ 0.029, the first below 0.05, and the interval of the change is
// finite.
const MinValues = 4

// DefaultConf is the confidence level used when Compare is given none in
// (0, 1).
const DefaultConf = 0.95

// Method names, as Result.Method carries them.
const (
	MethodLog  = "Mann-Whitney U; Hodges-Lehmann shift of log values (Moses interval)"
	MethodDiff = "Mann-Whitney U; Hodges-Lehmann shift of values over the baseline median (Moses interval)"
)

// Estimate is a sample's centre with a confidence interval.
type Estimate struct {
	// N is the number of values used (NaNs dropped).
	N int
	// Median is the sample median; Lo and Hi its distribution-free
	// confidence interval (±Inf when the sample is too small for one at
	// the level asked: 6 values at 0.95).
	Median, Lo, Hi float64
	// Missing is the number of NaN (or infinite) values dropped.
	Missing int
}

// Result compares a candidate sample with a baseline sample.
type Result struct {
	Base, Cand Estimate
	// Change is the candidate's relative change, cand/base − 1, with its
	// confidence interval (ChangeLo ≤ Change ≤ ChangeHi); NaN where
	// undefined (a zero or negative baseline).
	Change, ChangeLo, ChangeHi float64
	// P is the two-sided p-value of the test; NaN when not computed.
	P float64
	// Conf is the confidence level used, e.g. 0.95; ChangeConf the level
	// the change's interval achieves (at least Conf where the exact
	// distribution is used: the interval's ends are order statistics).
	Conf, ChangeConf float64
	// Method names the test and the interval.
	Method string
	// Insufficient is non-empty when the samples cannot support a
	// verdict, saying what is missing.
	Insufficient string
}

// Significant reports whether the test rejects "no difference" at the
// level alpha (p < alpha). A result with Insufficient set is never
// significant.
func (r Result) Significant(alpha float64) bool {
	return r.Insufficient == "" && !math.IsNaN(r.P) && r.P < alpha
}

// Beyond reports whether the change's whole interval lies beyond ±threshold
// (a fraction, 0.05 for 5 %): +1 when ChangeLo > threshold, −1 when
// ChangeHi < −threshold, 0 otherwise (NaN included).
func (r Result) Beyond(threshold float64) int {
	switch {
	case r.ChangeLo > threshold:
		return 1
	case r.ChangeHi < -threshold:
		return -1
	}
	return 0
}

// Compare compares cand with base at the confidence level conf (0.95 when
// outside (0, 1)). NaNs and infinities in the inputs are dropped and
// counted as missing. The inputs are not modified.
func Compare(base, cand []float64, conf float64) Result {
	if !(conf > 0 && conf < 1) {
		conf = DefaultConf
	}
	b, bMiss := finite(base)
	c, cMiss := finite(cand)
	r := Result{
		Base: summary(b, bMiss, conf), Cand: summary(c, cMiss, conf),
		Change: math.NaN(), ChangeLo: math.NaN(), ChangeHi: math.NaN(),
		P: math.NaN(), Conf: conf, ChangeConf: math.NaN(), Method: MethodLog,
	}
	r.Insufficient = insufficient("baseline", len(b), bMiss) + join(insufficient("candidate", len(c), cMiss))
	if r.Insufficient != "" {
		if r.Insufficient[0] == ';' {
			r.Insufficient = r.Insufficient[2:]
		}
		return r
	}
	r.P = uTest(b, c)
	// A zero or negative baseline median has no relative change.
	if !(r.Base.Median > 0) {
		r.Method = MethodDiff
		return r
	}
	if positive(b) && positive(c) {
		lb, lc := logs(b), logs(c)
		est, lo, hi, got := shift(lb, lc, conf)
		r.Change, r.ChangeLo, r.ChangeHi, r.ChangeConf = math.Expm1(est), math.Expm1(lo), math.Expm1(hi), got
		return r
	}
	// A zero in a sample: no logs; the shift of the values over the
	// baseline's median (its own uncertainty not carried).
	r.Method = MethodDiff
	est, lo, hi, got := shift(b, c, conf)
	m := r.Base.Median
	r.Change, r.ChangeLo, r.ChangeHi, r.ChangeConf = est/m, lo/m, hi/m, got
	return r
}

// insufficient says what a sample of n values (miss dropped) lacks, or "".
func insufficient(side string, n, miss int) string {
	if n >= MinValues {
		return ""
	}
	s := fmt.Sprintf("%s has %d values, at least %d needed", side, n, MinValues)
	if miss > 0 {
		s = fmt.Sprintf("%s has %d values (%d missing), at least %d needed", side, n, miss, MinValues)
	}
	return s
}

func join(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// finite returns the finite values of xs, sorted, and how many were not.
func finite(xs []float64) ([]float64, int) {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out, len(xs) - len(out)
}

func positive(xs []float64) bool {
	return len(xs) > 0 && xs[0] > 0 // sorted
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// summary is benchmath's AssumeNothing summary of a sorted sample.
func summary(xs []float64, miss int, conf float64) Estimate {
	e := Estimate{N: len(xs), Missing: miss, Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if len(xs) == 0 {
		return e
	}
	s := benchmath.NewSample(slices.Clone(xs), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, conf)
	e.Median, e.Lo, e.Hi = sum.Center, sum.Lo, sum.Hi
	return e
}

// uTest is the two-sided Mann-Whitney U test's p-value: 1 when every value
// of both samples is equal.
func uTest(b, c []float64) float64 {
	res, err := stats.MannWhitneyUTest(b, c, stats.LocationDiffers)
	if err == stats.ErrSamplesEqual {
		return 1
	}
	if err != nil {
		return math.NaN()
	}
	return res.P
}

// shift is the Hodges-Lehmann estimate of the shift c − b (the median of
// the m·n differences c_j − b_i) with its Moses confidence interval: the
// k-th smallest and k-th largest difference, k = qu the lower α/2 quantile
// of the Mann-Whitney U distribution (R's qwilcox(α/2, m, n), at least 1),
// exact below ExactLimit values per side, else from the normal
// approximation (normalOrder). got is the level achieved.
func shift(b, c []float64, conf float64) (est, lo, hi, got float64) {
	m, n := len(b), len(c)
	k, got := order(m, n, conf)
	// Large samples (per-request values): the order statistics of the
	// differences are selected without listing them.
	if m*n > MaxPairs {
		est = kthDiff(b, c, (m*n+1)/2)
		if m*n%2 == 0 {
			est = (est + kthDiff(b, c, m*n/2+1)) / 2
		}
		return est, kthDiff(b, c, k), kthDiff(b, c, m*n-k+1), got
	}
	d := make([]float64, 0, m*n)
	for _, y := range c {
		for _, x := range b {
			d = append(d, y-x)
		}
	}
	slices.Sort(d)
	est = median(d)
	return est, d[k-1], d[m*n-k], got
}

// MaxPairs is the most pairwise differences shift lists; beyond it (two
// samples of per-request values) each order statistic is selected by
// kthDiff in O((m+n)·log) time and no memory.
const MaxPairs = 1 << 18

// kthDiff is the k-th smallest (1-based) of the differences c_j − b_i of
// two sorted samples: a bisection over values, counting the differences at
// most t in one merge pass, until the bracket holds one distinct
// difference, which is then read from the samples.
func kthDiff(b, c []float64, k int) float64 {
	lo, hi := c[0]-b[len(b)-1], c[len(c)-1]-b[0]
	if countAtMost(b, c, lo) >= k {
		return lo
	}
	// Invariant: count(≤ lo) < k ≤ count(≤ hi).
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if countAtMost(b, c, mid) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	// The k-th difference lies in (lo, hi]: the largest difference ≤ hi.
	best := math.Inf(-1)
	i := 0
	for _, y := range c {
		// The smallest b_i with y − b_i ≤ hi, i.e. b_i ≥ y − hi.
		for i < len(b) && y-b[i] > hi {
			i++
		}
		if i < len(b) {
			best = max(best, y-b[i])
		}
	}
	return best
}

// countAtMost counts the differences c_j − b_i ≤ t of sorted samples.
func countAtMost(b, c []float64, t float64) int {
	n, i := 0, 0
	for _, y := range c {
		// b_i ≥ y − t makes y − b_i ≤ t; the first such i grows with y.
		for i < len(b) && y-b[i] > t {
			i++
		}
		n += len(b) - i
	}
	return n
}

// ExactLimit is the sample size (per side) below which the interval's
// order statistic comes from the exact U distribution, as in R.
const ExactLimit = 50

// order returns the rank k (1-based) of the interval's lower end and the
// level achieved.
func order(m, n int, conf float64) (int, float64) {
	key := orderKey{m, n, conf}
	if v, ok := orders.Load(key); ok {
		o := v.(orderVal)
		return o.k, o.got
	}
	k, got := computeOrder(m, n, conf)
	orders.Store(key, orderVal{k, got})
	return k, got
}

type orderKey struct {
	m, n int
	conf float64
}

type orderVal struct {
	k   int
	got float64
}

// orders caches order's answers: a diff asks for the same sample sizes for
// every quantity.
var orders sync.Map

func computeOrder(m, n int, conf float64) (int, float64) {
	alpha := 1 - conf
	mn := m * n
	if m < ExactLimit && n < ExactLimit {
		d := stats.UDist{N1: m, N2: n}
		// qu: the smallest q with P(U ≤ q) ≥ α/2, by bisection over
		// the distribution's lower half.
		lo, hi := 0, mn/2
		for lo < hi {
			mid := (lo + hi) / 2
			if d.CDF(float64(mid)) >= alpha/2 {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		k := max(lo, 1)
		return k, 1 - 2*d.CDF(float64(k-1))
	}
	return normalOrder(m, n, conf)
}

// normalOrder is the large-sample rank of the interval's lower end,
// Hollander & Wolfe's C_α ≈ mn/2 − z_{α/2}·√(mn(m+n+1)/12) rounded to the
// nearest integer (at least 1), with the level the normal approximation
// gives it.
func normalOrder(m, n int, conf float64) (int, float64) {
	mn := float64(m * n)
	sd := math.Sqrt(mn * float64(m+n+1) / 12)
	z := stats.StdNormal.InvCDF(1 - (1-conf)/2)
	k := max(int(math.Round(mn/2-z*sd)), 1)
	// P(U ≤ k−1) with continuity correction.
	got := 1 - 2*stats.StdNormal.CDF((float64(k-1)+0.5-mn/2)/sd)
	return k, got
}

// median of a sorted slice.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Shift is the Hodges-Lehmann shift of cand over base in the values' own
// unit (candidate − baseline) with its Moses interval at conf (0.95 when
// outside (0, 1)): the change of a quantity compared in absolute points,
// such as a ratio. NaNs and infinities are dropped; all three are NaN when
// a side has fewer than MinValues values.
func Shift(base, cand []float64, conf float64) (est, lo, hi float64) {
	if !(conf > 0 && conf < 1) {
		conf = DefaultConf
	}
	b, _ := finite(base)
	c, _ := finite(cand)
	if len(b) < MinValues || len(c) < MinValues {
		return math.NaN(), math.NaN(), math.NaN()
	}
	est, lo, hi, _ = shift(b, c, conf)
	return est, lo, hi
}
