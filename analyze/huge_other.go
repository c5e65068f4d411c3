//go:build !linux

package analyze

// hugePages is a no-op where madvise's huge pages are not.
func hugePages[T any](s []T) {}
