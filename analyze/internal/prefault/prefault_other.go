//go:build !linux

package prefault

import "unsafe"

func sizeOf[T any]() uintptr { return unsafe.Sizeof(*new(T)) }

// Range is a no-op where madvise's populate is not.
func Range[T any](s []T, from, to int) {}

// Resident reports nothing where mincore is not.
func Resident[T any](s []T, from, to int) (in, pages int) { return 0, 0 }
