package hugeheap

import (
	"bytes"
	"os"
	"syscall"
	"unsafe"
)

// adviceFollowed reports whether the kernel's transparent huge pages are
// given where asked only ("madvise"): under "always" the heap has them
// already, under "never" not at all. A 32-bit process, or one whose
// address space is bounded (ulimit -v), is not asked to map a reserve:
// a heap that cannot grow is a fatal error, not an answer.
func adviceFollowed() bool {
	if ^uint(0)>>32 == 0 {
		return false
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil || lim.Cur != ^uint64(0) {
		return false
	}
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && bytes.Contains(b, []byte("[madvise]"))
}

// advise asks for huge pages on b's whole huge pages. A refused advice
// changes nothing.
func advise(b []byte) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := (p+hugePage-1)&^(hugePage-1), (p+uintptr(len(b)))&^(hugePage-1)
	// No whole huge page inside.
	if lo >= hi {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), lo-p)), hi-lo), syscall.MADV_HUGEPAGE)
}
