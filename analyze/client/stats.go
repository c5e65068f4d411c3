package client

import (
	"slices"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Quantile is the q-quantile of xs by linear interpolation between the
// ranks of the sorted values (numpy's default, which AIPerf uses); absent
// for none. xs is left as it was.
func Quantile(xs []float64, q float64) rate.Num {
	if len(xs) == 0 {
		return rate.Num{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return rate.Some(sortedQuantile(s, q))
}

func sortedQuantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (s[i+1]-s[i])*(pos-float64(i))
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func some(v float64) rate.Num { return rate.Some(v) }
