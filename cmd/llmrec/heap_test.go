package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// boundHeap sets the soft memory limit to its floor at once, keeps it
// there over a small live heap, an eighth above a large one, restores the limit there was when
// stopped, and leaves alone a GOMEMLIMIT the user set.
func TestBoundHeap(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "")
	limitAfterGC := func() int64 {
		t.Helper()
		runtime.GC()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(60 * time.Millisecond)
			if l := debug.SetMemoryLimit(-1); l != prev {
				return l
			}
		}
		return debug.SetMemoryLimit(-1)
	}
	stop := boundHeap()
	// Set before anything is read: a replay started unbounded would back
	// its heap with huge pages.
	if l := debug.SetMemoryLimit(-1); l != heapFloor {
		t.Errorf("limit as boundHeap returns: %d, want the floor %d at once", l, heapFloor)
	}
	if l := limitAfterGC(); l != heapFloor {
		t.Errorf("limit over a small heap: %d, want the floor %d", l, heapFloor)
	}
	held := make([]byte, 480<<20) // a live heap whose limit is above the floor (its pages never touched): 480 + 30 + 32 MiB
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	if l, want := debug.SetMemoryLimit(-1), int64(480<<20+480<<16+heapSlack); l < want || l > want+want/10 {
		t.Errorf("limit over a 480 MiB heap: %d MiB, want about %d MiB", l>>20, want>>20)
	}
	runtime.KeepAlive(held)
	stop()
	if l := debug.SetMemoryLimit(-1); l != prev {
		t.Errorf("after stop: limit %d, want %d", l, prev)
	}

	t.Setenv("GOMEMLIMIT", "1GiB")
	stop = boundHeap()
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	if l := debug.SetMemoryLimit(-1); l != prev {
		t.Errorf("with GOMEMLIMIT set: limit %d, want %d left alone", l, prev)
	}
	stop()
}
