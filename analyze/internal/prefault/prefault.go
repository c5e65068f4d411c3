// Package prefault faults in, ahead of their writes, the pages of the
// arrays a replay fills poll by poll.
//
// A first write to a page of fresh memory is a page fault: a trap into the
// kernel, which on a virtual machine costs 8-14 µs (measured on the
// project's machine: 128 MiB touched page by page, 0.45 CPU-s). Asked in
// one call (madvise MADV_POPULATE_WRITE, Linux 5.14), the kernel maps the
// same pages in 0.03 CPU-s. The pages are mapped as a write would map
// them; their contents are not touched.
package prefault

// Step is how many bytes of an array a caller faults in at once: a few
// calls a target's day, no more than one step of memory mapped before it
// is written.
const Step = 64 << 10

// Elems is how many elements of T make a Step.
func Elems[T any]() int {
	return max(1, Step/int(sizeOf[T]()))
}
