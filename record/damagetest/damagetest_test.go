package damagetest

import (
	"bytes"
	"testing"
)

// Flip is deterministic per seed, changes exactly the bytes it picks (each
// to a different value) and leaves its input alone.
func TestFlip(t *testing.T) {
	data := bytes.Repeat([]byte{0xaa}, 20000)
	a, b := Flip(data, 7, 10), Flip(data, 7, 10)
	if !bytes.Equal(a, b) {
		t.Fatal("one seed, two damages")
	}
	if bytes.Equal(a, Flip(data, 8, 10)) {
		t.Error("two seeds, one damage")
	}
	changed, tail := 0, 0
	for i := range a {
		if a[i] != data[i] {
			changed++
			if i >= len(data)-8192 {
				tail++
			}
		}
	}
	if changed == 0 || changed > 10 || tail == 0 {
		t.Errorf("%d bytes changed, %d in the last 8 KiB", changed, tail)
	}
	if !bytes.Equal(data, bytes.Repeat([]byte{0xaa}, 20000)) {
		t.Error("the input was changed")
	}
}
