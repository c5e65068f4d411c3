package analyze

import (
	"syscall"
	"unsafe"
)

// hugePages asks the kernel to back s's array with huge pages
// (madvise MADV_HUGEPAGE; the system's transparent huge pages set to
// "madvise", the default of many distributions, gives them only where
// asked). A replay's kept per-poll records are written once, poll by
// poll, into arrays of tens of megabytes sized from the manifests: with
// 4 KiB pages each page's first write is a fault (150,000 on a day of 8
// engines, most of the system time). An advice the kernel refuses
// changes nothing.
func hugePages[T any](s []T) {
	n := uintptr(cap(s)) * unsafe.Sizeof(*new(T))
	// Below a huge page there is nothing to ask.
	if n < 2<<20 {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))), n), syscall.MADV_HUGEPAGE)
}
