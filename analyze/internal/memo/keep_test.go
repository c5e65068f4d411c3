package memo

import "testing"

// Keep moves past a recalled answer and keeps it for the next sequence.
func TestKeep(t *testing.T) {
	var s Seq[int]
	s.Start()
	s.Note("a", 1)
	s.Note("b", 2)
	for range 2 {
		s.Start()
		if v, ok := s.Recall("a"); !ok || v != 1 {
			t.Fatalf("a: %d %v", v, ok)
		}
		s.Keep()
		// The next question is compared with the second point, not the first.
		if v, ok := s.Recall("b"); !ok || v != 2 {
			t.Fatalf("b: %d %v", v, ok)
		}
		s.Keep()
	}
}
