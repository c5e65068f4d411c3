//go:build linux

package prefault

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
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

// TestHugeBacksAWholeHugePage: an array spanning whole huge pages, advised
// by Huge and faulted in by Range, is backed by huge pages (AnonHugePages
// of its mapping); without the advice (fresh's MADV_NOHUGEPAGE stands) it
// is not.
func TestHugeBacksAWholeHugePage(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || !bytes.Contains(b, []byte("[madvise]")) && !bytes.Contains(b, []byte("[always]")) {
		t.Skip("transparent huge pages are off here")
	}
	const huge = 2 << 20
	for _, advise := range []bool{false, true} {
		b := fresh(t, 3*huge/int(pageSize))
		// The whole huge page inside the mapping.
		off := int(-uintptr(unsafe.Pointer(&b[0])) & (huge - 1))
		xs := b[off : off+huge]
		if advise {
			Huge(xs)
		}
		Range(xs, 0, len(xs))
		got := anonHuge(t, uintptr(unsafe.Pointer(&xs[0])))
		if advise && got < huge>>10 {
			t.Errorf("advised: AnonHugePages %d kB, want at least %d", got, huge>>10)
		}
		if !advise && got != 0 {
			t.Errorf("not advised: AnonHugePages %d kB, want 0", got)
		}
	}
}

// anonHuge is the AnonHugePages (kB) of the mapping that holds addr.
func anonHuge(t *testing.T, addr uintptr) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(l) <= addr && addr < uintptr(h)
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	t.Fatalf("no mapping at %#x in smaps", addr)
	return 0
}
