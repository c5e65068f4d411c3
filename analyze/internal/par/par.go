// Package par runs independent pieces of work on every core: the serial
// tail of an analysis (each target's findings and phases) is per target
// until the fleet is summed.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls f(i) for every i in [0, n), on up to GOMAXPROCS goroutines,
// and returns when every call has. Each call must touch only what is its
// own (index i of slices made before); With one call or one core, f runs
// on the caller's goroutine in order.
func For(n int, f func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	// Nothing to share: no goroutine.
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}
