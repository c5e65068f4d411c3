// Package order selects from unsorted values: the k-th smallest without
// sorting them all (a day of polls is 43,200 values a cell).
package order

import (
	"math/bits"
	"slices"
)

// Nth reorders xs so that xs[k] is the value slices.Sort would put there,
// none before it greater and none after it less (in cmp.Compare's order,
// NaN first), and returns it. It is Hoare's selection with a median of
// three pivot; a range that shrinks too slowly is sorted instead, so the
// worst case stays O(n log n).
func Nth(xs []float64, k int) float64 {
	// NaN is the least: the NaNs are moved to the front, and the rest is
	// selected from by < alone, which orders them as cmp.Less does.
	m := 0
	for i, x := range xs {
		if x != x {
			xs[i], xs[m] = xs[m], xs[i]
			m++
		}
	}
	// The rank is a NaN's.
	if k < m {
		return xs[k]
	}
	return nth(xs[m:], k-m)
}

// nth is Nth of xs holding no NaN.
func nth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for budget := 2 * bits.Len(uint(len(xs))); hi-lo > 16; budget-- {
		// Too many bad pivots: sorting the rest bounds the cost.
		if budget == 0 {
			break
		}
		m := lo + (hi-lo)/2
		if xs[m] < xs[lo] {
			xs[m], xs[lo] = xs[lo], xs[m]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[m] {
			xs[hi], xs[m] = xs[m], xs[hi]
		}
		p := xs[m]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for p < xs[j] {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		// Now xs[lo..j] ≤ p ≤ xs[i..hi], and xs[j+1..i-1] (if any) equal p.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	slices.Sort(xs[lo : hi+1])
	return xs[k]
}
