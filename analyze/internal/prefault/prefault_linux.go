package prefault

import (
	"runtime"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14; older kernels
// refuse it and the pages fault in as they are written).
const madvPopulateWrite = 23

var pageSize = uintptr(syscall.Getpagesize())

func sizeOf[T any]() uintptr { return unsafe.Sizeof(*new(T)) }

// Range faults in the pages of elements [from, to) of s's array (to cut
// at its capacity). A page the range only starts inside is left alone: it
// is the one before's, already written. A refused advice changes nothing.
func Range[T any](s []T, from, to int) {
	to = min(to, cap(s))
	// Nothing to fault in.
	if from < 0 || from >= to {
		return
	}
	size := sizeOf[T]()
	p := unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))
	lo := uintptr(from) * size
	lo += -(uintptr(p) + lo) & (pageSize - 1) // the first page boundary
	hi := uintptr(to) * size
	// The range lies within one page already mapped.
	if lo >= hi {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Add(p, lo)), hi-lo, madvPopulateWrite)
}

// Resident counts the pages of elements [from, to) of s's array (to cut
// at its capacity) that are mapped in (mincore), and the pages they span.
// Tests read it to see what was faulted in.
func Resident[T any](s []T, from, to int) (in, pages int) {
	to = min(to, cap(s))
	// Nothing asked.
	if from < 0 || from >= to {
		return 0, 0
	}
	size := sizeOf[T]()
	p := unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))
	lo := uintptr(from) * size
	lo -= (uintptr(p) + lo) & (pageSize - 1) // back to the page's start
	hi := uintptr(to) * size
	vec := make([]byte, (hi-lo+pageSize-1)/pageSize)
	// The page boundary can lie before the array: mincore reads the
	// addresses only, so it is passed as a number (s kept alive).
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(p)+lo, hi-lo, uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	runtime.KeepAlive(s)
	if e != 0 {
		return 0, len(vec)
	}
	for _, v := range vec {
		in += int(v & 1)
	}
	return in, len(vec)
}
