package memo

import "testing"

// Answers are recalled at the point of the sequence they were given at,
// for the same question only; a sequence that changes course is noted
// afresh from there.
func TestSeq(t *testing.T) {
	var s Seq[int]
	ask := func(q string, answer int) (got int, recalled bool) {
		got, recalled = s.Recall(q)
		if !recalled {
			got = answer
		}
		s.Note(q, got)
		return got, recalled
	}
	s.Start()
	for i, q := range []string{"a", "b", "c"} {
		if _, ok := ask(q, i); ok {
			t.Fatalf("%s recalled in the first sequence", q)
		}
	}
	s.Start()
	if v, ok := ask("a", 9); !ok || v != 0 {
		t.Errorf("a: %d %v", v, ok)
	}
	// Another question at the second point: asked, and noted in its place.
	if v, ok := ask("x", 7); ok || v != 7 {
		t.Errorf("x: %d %v", v, ok)
	}
	if v, ok := ask("c", 9); !ok || v != 2 {
		t.Errorf("c: %d %v", v, ok)
	}
	// A longer sequence grows.
	if _, ok := ask("d", 3); ok {
		t.Error("d recalled")
	}
	s.Start()
	for i, q := range []string{"a", "x", "c", "d"} {
		if v, ok := ask(q, -1); !ok || v != []int{0, 7, 2, 3}[i] {
			t.Errorf("%s: %d %v", q, v, ok)
		}
	}
}

// Ask answers from the last sequence when it can, and asks answer only
// when it cannot.
func TestAsk(t *testing.T) {
	var s Seq[int]
	calls := 0
	answer := func(q string) int { calls++; return len(q) }
	for range 3 {
		s.Start()
		if a, b := s.Ask("x", answer), s.Ask("yy", answer); a != 1 || b != 2 {
			t.Fatalf("answers %d %d", a, b)
		}
	}
	if calls != 2 {
		t.Errorf("answer asked %d times, want 2", calls)
	}
}
