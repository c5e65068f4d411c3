package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestForEachIndexOnce: every index is run exactly once, on one core and
// on several, and For returns only after the last.
func TestForEachIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 7, 100} {
			hits := make([]atomic.Int32, n)
			busy := make([]atomic.Int32, Workers(n))
			For(n, func(w, i int) {
				// A worker's calls come one after another.
				if busy[w].Add(1) != 1 {
					t.Errorf("worker %d runs two calls at once", w)
				}
				hits[i].Add(1)
				busy[w].Add(-1)
			})
			for i := range hits {
				if got := hits[i].Load(); got != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: index %d ran %d times", procs, n, i, got)
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestForOneCoreInOrder: on one core the calls come in index order on the
// caller's goroutine (what a serial replay does).
func TestForOneCoreInOrder(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	var got []int
	For(5, func(w, i int) {
		if w != 0 {
			t.Errorf("worker %d of 1", w)
		}
		got = append(got, i)
	})
	for i, x := range got {
		if x != i {
			t.Fatalf("order %v", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("ran %d of 5", len(got))
	}
}
