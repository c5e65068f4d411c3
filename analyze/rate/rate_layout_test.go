package rate

import (
	"testing"
	"unsafe"
)

// TestKeyStateIsThreeLines keeps keyState at three cache lines with
// gather's fields in the first: a field added, or moved before them,
// fails here rather than in a profile.
func TestKeyStateIsThreeLines(t *testing.T) {
	var st keyState
	if n := unsafe.Sizeof(st); n != 192 {
		t.Errorf("keyState is %d bytes, want 192 (three cache lines)", n)
	}
	for name, off := range map[string]uintptr{"lastSeq": unsafe.Offsetof(st.lastSeq),
		"reason": unsafe.Offsetof(st.reason), "delta": unsafe.Offsetof(st.delta),
		"window": unsafe.Offsetof(st.window), "hasWin": unsafe.Offsetof(st.hasWin),
		"grp": unsafe.Offsetof(st.grp), "le": unsafe.Offsetof(st.le)} {
		if off >= 64 {
			t.Errorf("keyState.%s at byte %d, outside the first cache line", name, off)
		}
	}
}
