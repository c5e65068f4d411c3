// Package par runs independent pieces of work on every core: the serial
// tail of an analysis (each target's findings and phases) is per target
// until the fleet is summed.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls f(w, i) for every i in [0, n), on Workers(n) goroutines, and
// returns when every call has; w in [0, Workers(n)) is the goroutine's, so
// that what a call reuses (scratch space) can be had once a worker. Each
// call must touch only what is its own (index i of slices made before, its
// worker's w). With one worker f runs on the caller's goroutine in order.
func For(n int, f func(w, i int)) {
	workers := Workers(n)
	// Nothing to share: no goroutine.
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(w, i)
			}
		})
	}
	wg.Wait()
}

// Workers is how many goroutines For runs n calls on: GOMAXPROCS, at most
// n, at least 1.
func Workers(n int) int { return max(1, min(n, runtime.GOMAXPROCS(0))) }
