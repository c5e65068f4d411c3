package stat

import (
	"fmt"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// Method names of Quantiles and Proportions.
const (
	MethodQuantile   = "quantile test (pooled q-quantile, counts above it by side, two-proportion z); change: ratio of the sample quantiles, interval from each side's order-statistic interval at √conf"
	MethodProportion = "two-proportion z test (pooled); change: ratio of the proportions, Katz log interval (0.5 added to every count when one is 0)"
)

// Quantiles compares the q-quantiles (0 < q < 1) of two samples of single
// observations (a client's per-request latencies): each side's quantile by
// linear interpolation between ranks with its distribution-free
// order-statistic interval at level √conf (normal approximation of the
// binomial ranks), so that both hold at once with probability at least
// conf; the change cand/base − 1 with the interval the two give
// ([lo_c/hi_b − 1, hi_c/lo_b − 1]); and the quantile test's p-value: the
// pooled sample's q-quantile, and whether the fraction of each side above it
// differs (two-proportion z, pooled). Insufficient when a side's interval
// needs ranks beyond its sample (a p99 needs several hundred values).
// Estimate.Median holds the side's q-quantile, Lo and Hi its interval.
func Quantiles(base, cand []float64, q, conf float64) Result {
	if !(conf > 0 && conf < 1) {
		conf = DefaultConf
	}
	b, bMiss := finite(base)
	c, cMiss := finite(cand)
	side := math.Sqrt(conf)
	r := Result{Base: quantileEstimate(b, bMiss, q, side), Cand: quantileEstimate(c, cMiss, q, side),
		Change: math.NaN(), ChangeLo: math.NaN(), ChangeHi: math.NaN(), P: math.NaN(), Conf: conf, ChangeConf: conf,
		Method: MethodQuantile}
	var why []string
	for _, s := range []struct {
		name string
		e    Estimate
	}{{"baseline", r.Base}, {"candidate", r.Cand}} {
		switch {
		case s.e.N < MinValues:
			why = append(why, fmt.Sprintf("%s has %d values, at least %d needed", s.name, s.e.N, MinValues))
		case math.IsInf(s.e.Lo, 0) || math.IsInf(s.e.Hi, 0):
			why = append(why, fmt.Sprintf("%s's %d values are too few for an interval of its q%g (about %d needed)", s.name, s.e.N, q, minForQuantile(q, side)))
		}
	}
	if len(why) > 0 {
		r.Insufficient = joinAll(why)
		return r
	}
	pooled := make([]float64, 0, len(b)+len(c))
	pooled = append(append(pooled, b...), c...)
	slices.Sort(pooled)
	at := quantileSorted(pooled, q)
	r.P = twoProportions(above(b, at), len(b), above(c, at), len(c))
	if r.Base.Median > 0 && r.Base.Lo > 0 {
		r.Change = r.Cand.Median/r.Base.Median - 1
		r.ChangeLo = r.Cand.Lo/r.Base.Hi - 1
		r.ChangeHi = r.Cand.Hi/r.Base.Lo - 1
	}
	return r
}

// minForQuantile is about the fewest values whose q-quantile has a finite
// interval at level conf.
func minForQuantile(q, conf float64) int {
	z := stats.StdNormal.InvCDF(1 - (1-conf)/2)
	for n := MinValues; n < 1<<24; n = n * 5 / 4 {
		if l, u := quantileRanks(n, q, z); l >= 1 && u <= n {
			return n
		}
	}
	return 1 << 24
}

// quantileRanks are the 1-based ranks of the order statistics bounding
// the q-quantile of n values at the normal quantile z.
func quantileRanks(n int, q, z float64) (int, int) {
	nq := float64(n) * q
	sd := math.Sqrt(nq * (1 - q))
	return int(math.Floor(nq - z*sd)), int(math.Ceil(nq+z*sd)) + 1
}

func quantileEstimate(xs []float64, miss int, q, conf float64) Estimate {
	e := Estimate{N: len(xs), Missing: miss, Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if len(xs) == 0 {
		return e
	}
	e.Median = quantileSorted(xs, q)
	z := stats.StdNormal.InvCDF(1 - (1-conf)/2)
	l, u := quantileRanks(len(xs), q, z)
	e.Lo, e.Hi = math.Inf(-1), math.Inf(1)
	if l >= 1 {
		e.Lo = xs[l-1]
	}
	if u <= len(xs) {
		e.Hi = xs[u-1]
	}
	return e
}

// quantileSorted is the q-quantile of a sorted sample by linear
// interpolation between ranks (the client's own figures use the same).
func quantileSorted(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// above counts the values of a sorted sample above t.
func above(xs []float64, t float64) int {
	n := 0
	for i := len(xs) - 1; i >= 0 && xs[i] > t; i-- {
		n++
	}
	return n
}

// twoProportions is the two-sided p-value of the pooled two-proportion z
// test of x1/n1 against x2/n2: 1 when both are 0 or both are 1.
func twoProportions(x1, n1, x2, n2 int) float64 {
	p := float64(x1+x2) / float64(n1+n2)
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	if se == 0 {
		return 1
	}
	z := (float64(x1)/float64(n1) - float64(x2)/float64(n2)) / se
	return 2 * stats.StdNormal.CDF(-math.Abs(z))
}

// Proportions compares two proportions, xb of nb against xc of nc (a
// client's failed requests of those started): each side's proportion with
// its Wilson interval at conf, the pooled two-proportion z test, and the
// change pc/pb − 1 with the Katz interval of the log ratio (0.5 added to
// every count when one is 0); the change is NaN when the baseline's is 0.
// Insufficient when a side has fewer than MinValues trials.
func Proportions(xb, nb, xc, nc int, conf float64) Result {
	if !(conf > 0 && conf < 1) {
		conf = DefaultConf
	}
	z := stats.StdNormal.InvCDF(1 - (1-conf)/2)
	r := Result{Base: wilson(xb, nb, z), Cand: wilson(xc, nc, z),
		Change: math.NaN(), ChangeLo: math.NaN(), ChangeHi: math.NaN(), P: math.NaN(), Conf: conf, ChangeConf: conf,
		Method: MethodProportion}
	var why []string
	for _, s := range []struct {
		name string
		n    int
	}{{"baseline", nb}, {"candidate", nc}} {
		if s.n < MinValues {
			why = append(why, fmt.Sprintf("%s has %d requests, at least %d needed", s.name, s.n, MinValues))
		}
	}
	if len(why) > 0 {
		r.Insufficient = joinAll(why)
		return r
	}
	r.P = twoProportions(xb, nb, xc, nc)
	if xb == 0 {
		return r
	}
	r.Change = (float64(xc)/float64(nc))/(float64(xb)/float64(nb)) - 1
	a, b, c, d := float64(xb), float64(nb), float64(xc), float64(nc)
	if xc == 0 {
		a, b, c, d = a+0.5, b+0.5, c+0.5, d+0.5
	}
	lr := math.Log((c / d) / (a / b))
	se := math.Sqrt(1/a - 1/b + 1/c - 1/d)
	r.ChangeLo, r.ChangeHi = math.Expm1(lr-z*se), math.Expm1(lr+z*se)
	return r
}

// wilson is x of n as an estimate with its Wilson score interval.
func wilson(x, n int, z float64) Estimate {
	e := Estimate{N: n, Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if n == 0 {
		return e
	}
	p, nn := float64(x)/float64(n), float64(n)
	d := 1 + z*z/nn
	mid := (p + z*z/(2*nn)) / d
	half := z * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn)) / d
	e.Median, e.Lo, e.Hi = p, max(0, mid-half), min(1, mid+half)
	return e
}

func joinAll(xs []string) string {
	out := xs[0]
	for _, x := range xs[1:] {
		out += "; " + x
	}
	return out
}
