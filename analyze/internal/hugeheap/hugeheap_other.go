//go:build !linux

package hugeheap

// Elsewhere the advice is not asked.
func adviceFollowed() bool { return false }

func advise([]byte) {}
