package record

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The start's heap floor (see holdStartHeap).
const (
	// startHeapPerTarget is the heap a target's start is given before the
	// first collection: at 1,000 vLLM targets the live heap after the
	// first seconds is about 250-350 MB, so 384 KiB a target is below
	// what the run holds later (the collector's own goal there is twice
	// the live heap: 600-800 MB).
	startHeapPerTarget = 384 << 10
	// startHeapMin is the smallest floor worth holding: below it the
	// collections of the start are few and cheap.
	startHeapMin = 32 << 20
	// startHeapTicks is how many intervals the floor is held at most.
	startHeapTicks = 3
)

// startHeap is the process's one floor: Runs in one process (tests) share
// it, and the GC settings there were before the first are restored after
// the last.
var startHeap struct {
	mu      sync.Mutex
	holders int
	percent int   // GOGC before the first holder
	limit   int64 // the memory limit before the first holder
}

// holdStartHeap lets the heap of a recording's start grow to a floor of
// startHeapPerTarget a target before the garbage collector runs, and
// returns the function that gives the collector back its settings. By
// default the collector starts at a 4 MB heap and collects each time the
// heap doubles: a thousand targets' first seconds, whose heap grows from
// nothing to 300 MB, were 13-14 collections in 3 s, each with its
// stop-the-world pauses (up to 17 ms), its mark phase (up to 141 ms, a
// third of the first 1.4 s in all) and the mark assists it charges to
// the goroutines that allocate, the tick loops' scrapes among them. The
// floor is a memory limit with GOGC off (the runtime's documented way to
// collect at a heap size): the first collection comes when the heap
// reaches it. The collector's own settings come back at that first
// collection, after startHeapTicks intervals (interval: the shortest of
// the targets'), or when release is called, whichever is first. A GOGC or
// GOMEMLIMIT the user set is left alone, as is a floor below startHeapMin.
func holdStartHeap(targets int, interval time.Duration) (release func()) {
	floor := int64(targets) * startHeapPerTarget
	// The user's settings win; a small recording needs no floor.
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || floor < startHeapMin {
		return func() {}
	}
	startHeap.mu.Lock()
	if startHeap.holders == 0 {
		startHeap.percent = debug.SetGCPercent(-1)
		startHeap.limit = debug.SetMemoryLimit(floor)
	}
	startHeap.holders++
	startHeap.mu.Unlock()

	var once sync.Once
	done := make(chan struct{})
	give := func() {
		once.Do(func() {
			close(done)
			startHeap.mu.Lock()
			defer startHeap.mu.Unlock()
			if startHeap.holders--; startHeap.holders == 0 {
				debug.SetMemoryLimit(startHeap.limit)
				debug.SetGCPercent(startHeap.percent)
			}
		})
	}
	go func() {
		cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(cycles)
		first := cycles[0].Value.Uint64()
		window := time.NewTimer(startHeapTicks * interval)
		defer window.Stop()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-window.C:
				give()
				return
			case <-tick.C:
			}
			// The heap reached the floor: from here the collector paces
			// itself on a live heap worth pacing on.
			if metrics.Read(cycles); cycles[0].Value.Uint64() != first {
				give()
				return
			}
		}
	}()
	return give
}
