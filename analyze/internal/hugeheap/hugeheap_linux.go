package hugeheap

import (
	"bytes"
	"os"
	"syscall"
	"unsafe"
)

// adviceFollowed reports whether the kernel's transparent huge pages are
// given where asked only ("madvise"): under "always" the heap has them
// already, under "never" not at all.
func adviceFollowed() bool {
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
