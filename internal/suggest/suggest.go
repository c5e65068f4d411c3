// Package suggest finds the word a mistyped one was meant to be: the
// "did you mean" of the command line's flags and of llmrec diff's
// quantity names.
package suggest

import "strings"

// Closest returns the word of words closest to w, at most two edits away
// (a word that w begins, w being two letters or more, counts as one edit;
// ties go to the first in byte order); "" when none is.
func Closest(w string, words []string) string {
	best, bestD := "", 3
	for _, x := range words {
		d := Distance(w, x)
		if strings.HasPrefix(x, w) && len(w) >= 2 {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && x < best) {
			best, bestD = x, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b, in bytes.
func Distance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
