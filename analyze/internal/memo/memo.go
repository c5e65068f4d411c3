// Package memo remembers the answers to a sequence of lookups that repeats:
// a reader of a poll asks the same questions in the same order every poll,
// so each answer is found by comparing the question with the one asked at
// that point of the last sequence (equal strings, usually at the same
// address, which compares without reading them) instead of hashing it
// into a map.
package memo

// Seq is the questions of the last sequence and their answers. The zero
// Seq is empty and ready to use.
type Seq[V any] struct {
	asked []entry[V]
	next  int // the point of the current sequence
}

type entry[V any] struct {
	q string
	v V
}

// Start starts a new sequence.
func (s *Seq[V]) Start() { s.next = 0 }

// Recall returns the answer given at this point of the last sequence, when
// the question there was q. The caller then calls Note, with that answer or
// a new one.
func (s *Seq[V]) Recall(q string) (v V, ok bool) {
	if s.next < len(s.asked) && s.asked[s.next].q == q {
		return s.asked[s.next].v, true
	}
	return v, false
}

// Note records the answer to q at this point and moves to the next.
func (s *Seq[V]) Note(q string, v V) {
	if s.next < len(s.asked) {
		s.asked[s.next] = entry[V]{q, v}
	} else {
		s.asked = append(s.asked, entry[V]{q, v})
	}
	s.next++
}

// Ask is Recall then Note: the answer given at this point of the last
// sequence when the question there was q, else answer(q).
func (s *Seq[V]) Ask(q string, answer func(string) V) V {
	v, ok := s.Recall(q)
	// A recalled answer is kept where it is, not written again.
	if ok {
		s.Keep()
		return v
	}
	v = answer(q)
	s.Note(q, v)
	return v
}
