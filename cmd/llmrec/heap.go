package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// heapSlack is what boundHeap allows above the live heap besides a
// sixteenth of it, and heapFloor the limit it never goes below: a small
// heap is left to the collector's default pace (a limit near a small
// live heap makes it collect many times a second while a replay
// allocates: 35 % more CPU in all on a day of 8 engines). On that day the
// peak is set where the findings are computed (about 370 MB live); a
// floor of 320 MiB instead of 384 collected 115 times instead of 78 for
// the same peak.
const (
	heapSlack = 32 << 20
	heapFloor = 384 << 20
)

// boundHeap keeps a batch command's memory near what it holds: a soft
// memory limit (runtime/debug.SetMemoryLimit) a sixteenth above the live
// heap plus heapSlack, at least heapFloor, raised as the live heap grows. By default the
// garbage collector lets the heap grow to twice the live heap before it
// collects, and gives freed pages back to the OS lazily: a report of a
// day of 8 engines, whose analysis held about half a gigabyte until its
// findings were computed, peaked at 1.3 GB of RSS. The limit is soft: a
// heap that outgrows it only makes the collector run more (its CPU is
// capped by the runtime), never fails. A GOMEMLIMIT the user set is left
// alone. stop restores the limit there was.
func boundHeap() (stop func()) {
	// The user's own limit wins.
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	// The floor is set at once, before anything is read: a replay that
	// starts unbounded would have its heap backed by huge pages
	// (analyze/internal/hugeheap), which count whole against the bound.
	prev := debug.SetMemoryLimit(heapFloor)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var last uint64
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			// A runtime without the metric: the default collector.
			if live[0].Value.Kind() != metrics.KindUint64 {
				return
			}
			// The live heap changes only at a collection.
			if n := live[0].Value.Uint64(); n != last {
				last = n
				debug.SetMemoryLimit(int64(max(n+n/16+heapSlack, heapFloor)))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		debug.SetMemoryLimit(prev)
	}
}
