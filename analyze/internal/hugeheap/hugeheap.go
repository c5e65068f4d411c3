// Package hugeheap backs the memory a replay's heap grows into with huge
// pages.
//
// A fresh process's heap grows as it is used: every first write to a
// 4 KiB page of it is a page fault. On the project's machine (a
// paravirtualised VM) a fault costs 6-14 µs, and `llmrec analyze` of an
// hour of 8 engines first touches about 60 MB of heap: 14,000 faults, a
// third of the process's CPU. The Go runtime maps its heap in chunks as
// it grows and, with the kernel's transparent huge pages set to "madvise"
// (the default of many distributions), backs them with 4 KiB pages
// unless asked otherwise; a chunk it maps anew is a fresh mapping, so an
// advice given once covers only what is mapped by then.
package hugeheap

import (
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"
)

var once sync.Once

// Advise asks, once a process, that the next n bytes of address space the
// heap grows into be backed by huge pages: it makes the heap map them at
// once, advises them MADV_HUGEPAGE and gives them back, unwritten, with
// one collection. (debug.FreeOSMemory would also count them as released,
// but gives back every free page: a process whose heap was used before
// faults them in again, which cost a benchmark's first replay what the
// advice saved.) A later call does nothing: a warm heap has its pages.
// Where a memory limit is set, or the kernel gives huge pages to every
// mapping, to none, or is not Linux, nothing is done.
func Advise(n int) {
	once.Do(func() {
		// Nothing to ask where the kernel would not follow the advice.
		if !adviceFollowed() {
			return
		}
		// A process that bounds its memory (render's boundHeap, a
		// user's GOMEMLIMIT) keeps its 4 KiB pages: a huge page counts
		// whole against the bound (render of a day of 8 engines peaked
		// at 445-498 MiB instead of 424-441).
		if debug.SetMemoryLimit(-1) != math.MaxInt64 {
			return
		}
		// Below a huge page there is nothing to ask.
		if n < hugePage {
			return
		}
		reserve(n)
		// The reserve is unreachable but not yet free: a collection
		// frees it before the heap grows past it (else the heap grows
		// beyond it, into pages nobody advised).
		runtime.GC()
	})
}

const hugePage = 2 << 20

// reserve allocates n bytes of memory nothing has written (the heap maps
// it anew), advises it and drops it. Not inlined: the array must be
// unreachable once it returns.
//
// The bytes are not cleared: a strings.Builder grows into memory the
// runtime does not zero. make([]byte, n) zeroes what the heap held
// before (a process that used its heap and freed it: a benchmark's
// reading, a library caller's work), and clearing 128 MiB writes every
// 4 KiB page of it, a fault each before the advice is given: 0.46 s of a
// benchmark's 40 replays, and the pages then small ones. Nothing reads
// the reserve.
//
//go:noinline
func reserve(n int) {
	advise(uncleared(n))
}

// uncleared is n bytes of heap the runtime has not cleared: what a
// strings.Builder grows into.
func uncleared(n int) []byte {
	var b strings.Builder
	b.Grow(n)
	// The builder's buffer: its String is empty but points at it.
	p := unsafe.StringData(b.String())
	// No buffer (n is 0).
	if p == nil {
		return nil
	}
	return unsafe.Slice(p, n)
}
