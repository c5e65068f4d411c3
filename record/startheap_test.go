package record

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent is the GOGC in force (set and put back).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// A recording's start holds the heap to a floor of startHeapPerTarget a
// target (GOGC off, a memory limit there), gives the collector its
// settings back at the first collection, at the window's end or at
// release, and leaves the user's settings and small recordings alone.
func TestHoldStartHeap(t *testing.T) {
	if v, _ := lookupEnv("GOGC", "GOMEMLIMIT"); v {
		t.Skip("GOGC or GOMEMLIMIT is set in this environment: the floor is left out by design")
	}
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)
	restored := func(when string) {
		t.Helper()
		if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != percent || l != limit {
			t.Errorf("%s: GOGC %d and limit %d, want %d and %d back", when, p, l, percent, limit)
		}
	}
	held := func(when string, floor int64) {
		t.Helper()
		if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != -1 || l != floor {
			t.Errorf("%s: GOGC %d and limit %d, want off and %d", when, p, l, floor)
		}
	}
	const n = 1000
	floor := int64(n * startHeapPerTarget)

	// Released by the caller; two holders (Runs in one process) share it.
	a := holdStartHeap(n, time.Hour)
	held("held", floor)
	b := holdStartHeap(n/2, time.Hour)
	held("held twice", floor)
	a()
	a() // twice is once
	held("one holder left", floor)
	b()
	restored("released")

	// A small recording: no floor.
	release := holdStartHeap(startHeapMin/startHeapPerTarget-1, time.Hour)
	restored("small recording")
	release()

	// The first collection gives the settings back.
	release = holdStartHeap(n, time.Hour)
	runtime.GC()
	waitFor(t, "the first collection to release the floor", func() bool { return gcPercent() == percent })
	restored("after a collection")
	release()
	restored("released after")

	// So does the end of the window.
	release = holdStartHeap(n, 10*time.Millisecond)
	defer release()
	waitFor(t, "the window to end", func() bool { return gcPercent() == percent })
	restored("after the window")
}

// The user's GOGC is theirs.
func TestHoldStartHeapLeavesGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	percent := gcPercent()
	release := holdStartHeap(1000, time.Hour)
	defer release()
	if p := gcPercent(); p != percent {
		t.Errorf("GOGC set by the user: %d, want %d left alone", p, percent)
	}
}

func lookupEnv(names ...string) (bool, string) {
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok && v != "" {
			return true, n
		}
	}
	return false, ""
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
