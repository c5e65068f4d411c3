package memo

// Keep keeps the answer Recall just returned at this point, and moves to
// the next: Note with the same question and answer, without writing them.
func (s *Seq[V]) Keep() { s.next++ }
