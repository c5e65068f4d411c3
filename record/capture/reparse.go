package capture

import "github.com/llmrec/llmrec/record/expo"

// reparser parses the rows a seal reads back from the journal (rows kept
// there alone while the open segment was over its budget): with an
// Interner per target endpoint, one at a time (a segment's rows are
// sorted by target and endpoint), so a target's rows after its first are
// read by their values, and the first is read against the recording's
// page shapes when it has one of them. Parsed without an Interner, each
// row went through expfmt in full: a few milliseconds for a vLLM page,
// seconds of a thousand targets' seal (and of the stop, whose last seal
// had the most).
type reparser struct {
	shapes           *expo.Shapes
	target, endpoint string
	in               *expo.Interner
}

// interner is the Interner that parses s.
func (r *reparser) interner(s *Scrape) *expo.Interner {
	if r.in == nil || s.Target != r.target || s.Endpoint != r.endpoint {
		r.target, r.endpoint = s.Target, s.Endpoint
		r.in = &expo.Interner{Shapes: r.shapes}
	}
	return r.in
}
