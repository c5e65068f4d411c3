// Package order selects from unsorted values: the k-th smallest without
// sorting them all (a day of polls is 43,200 values a cell).
package order

import (
	"cmp"
	"math/bits"
	"slices"
)

// Nth reorders xs so that xs[k] is the value slices.Sort would put there,
// none before it greater and none after it less (in cmp.Compare's order,
// NaN first), and returns it. It is Hoare's selection with a median of
// three pivot; a range that shrinks too slowly is sorted instead, so the
// worst case stays O(n log n).
func Nth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for budget := 2 * bits.Len(uint(len(xs))); hi-lo > 16; budget-- {
		// Too many bad pivots: sorting the rest bounds the cost.
		if budget == 0 {
			break
		}
		m := lo + (hi-lo)/2
		if cmp.Less(xs[m], xs[lo]) {
			xs[m], xs[lo] = xs[lo], xs[m]
		}
		if cmp.Less(xs[hi], xs[lo]) {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if cmp.Less(xs[hi], xs[m]) {
			xs[hi], xs[m] = xs[m], xs[hi]
		}
		p := xs[m]
		i, j := lo, hi
		for i <= j {
			for cmp.Less(xs[i], p) {
				i++
			}
			for cmp.Less(p, xs[j]) {
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
