package phases

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// runs hold what a slice of the same indexes would: every index added, in
// the order added, repeats and steps back included, and as many.
func TestRunsKeepIndexesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		var want []int
		var r runs
		i := rng.IntN(5)
		for range rng.IntN(60) {
			want, r = append(want, i), r.add(i)
			switch rng.IntN(6) {
			case 0:
				i -= rng.IntN(4) // a window that starts before the last ended
			case 1:
				i += 1 + rng.IntN(4)
			default:
				i++
			}
			i = max(i, 0)
		}
		if got := slices.Collect(r.all()); !slices.Equal(got, want) {
			t.Fatalf("runs %v yield %v, want %v", r, got, want)
		}
		if r.len() != len(want) {
			t.Fatalf("runs %v: len %d, want %d", r, r.len(), len(want))
		}
	}
	// Consecutive indexes are one run.
	var r runs
	for i := 10; i < 20; i++ {
		r = r.add(i)
	}
	if len(r) != 1 || r[0] != [2]int{10, 20} {
		t.Fatalf("10..19 added one by one: %v, want one run [10 20]", r)
	}
	// A loop may stop early (a yield past its false answer panics).
	n := 0
	for i := range append(r, [2]int{30, 40}).all() {
		if i == 12 {
			break
		}
		n++
	}
	if n != 2 {
		t.Fatalf("stopped at 12: %d indexes before it, want 2", n)
	}
}
