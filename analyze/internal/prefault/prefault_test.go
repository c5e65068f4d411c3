//go:build linux

package prefault

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// faults counts the calling thread's minor faults while f runs.
func faults(t *testing.T, f func()) int64 {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rusageThread = 1
	var a, b syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &a); err != nil {
		t.Fatal(err)
	}
	f()
	if err := syscall.Getrusage(rusageThread, &b); err != nil {
		t.Fatal(err)
	}
	return b.Minflt - a.Minflt
}

// fresh is a new anonymous mapping of n pages, none of them mapped in yet.
func fresh(t *testing.T, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n*int(pageSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	// No huge pages: each page faults alone.
	_ = syscall.Madvise(b, syscall.MADV_NOHUGEPAGE)
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

func touch(b []byte) {
	for i := 0; i < len(b); i += int(pageSize) {
		b[i] = 1
	}
}

func TestRangeFaultsInItsPagesOnly(t *testing.T) {
	const pages = 256
	b := fresh(t, pages)
	// An array of 8-byte elements starting 24 bytes into the first page,
	// its first half faulted in.
	xs := unsafe.Slice((*uint64)(unsafe.Pointer(&b[24])), (len(b)-24)/8)
	half := len(xs) / 2
	call := faults(t, func() { Range(xs, 0, half) })
	in := faults(t, func() {
		for i := 0; i < half; i += int(pageSize) / 8 {
			xs[i] = 1
		}
	})
	out := faults(t, func() { touch(b[(half*8+24)&^int(pageSize-1)+int(pageSize):]) })
	if in > pages/16 {
		t.Errorf("writing the faulted-in half took %d faults, want about none (the call itself took %d)", in, call)
	}
	if out < pages/2-pages/16 {
		t.Errorf("writing the other half took %d faults, want about %d: Range mapped beyond its range", out, pages/2)
	}
}

func TestRangeCutsAtCapacityAndIgnoresEmpty(t *testing.T) {
	const pages = 64
	b := fresh(t, pages)
	s := b[: 0 : pages/2*int(pageSize)]
	Range(s, 0, 10*len(b)) // cut at the capacity: the rest stays out
	Range(s, 5, 5)
	Range(s, -1, 3)
	in := faults(t, func() { touch(b[:pages/2*int(pageSize)]) })
	out := faults(t, func() { touch(b[pages/2*int(pageSize):]) })
	if in > pages/8 || out < pages/2-pages/8 {
		t.Errorf("faults writing the capacity %d (want about 0), past it %d (want about %d)", in, out, pages/2)
	}
}

func TestElems(t *testing.T) {
	if n := Elems[uint64](); n != Step/8 {
		t.Errorf("Elems[uint64] = %d, want %d", n, Step/8)
	}
	if n := Elems[[Step + 1]byte](); n != 1 {
		t.Errorf("Elems of an element above Step = %d, want 1", n)
	}
}

func TestResident(t *testing.T) {
	const pages = 16
	b := fresh(t, pages)
	xs := unsafe.Slice((*uint64)(unsafe.Pointer(&b[8])), (len(b)-8)/8)
	if in, n := Resident(xs, 0, len(xs)); in != 0 || n != pages {
		t.Fatalf("a fresh mapping: %d of %d pages in, want 0 of %d", in, n, pages)
	}
	Range(xs, 0, len(xs)/2)
	in, n := Resident(xs, 0, len(xs))
	if in < pages/2-1 || in > pages/2+1 || n != pages {
		t.Errorf("half faulted in: %d of %d pages in, want about %d of %d", in, n, pages/2, pages)
	}
}
