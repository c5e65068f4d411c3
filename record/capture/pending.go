package capture

// Pending is the parse of a row that was journaled before it was parsed.
// The recorder journals a scrape as soon as its body is read, so a kill
// while a large page is being parsed loses nothing (the journal holds no
// samples: recovery parses the body again), and hands the parse's result
// over with Done. The sealer waits for it before it writes the row.
type Pending struct {
	done    chan struct{}
	outcome string
	samples []Sample
	perr    *string
}

// NewPending returns a parse still to be done.
func NewPending() *Pending { return &Pending{done: make(chan struct{})} }

// Done hands over what parsing s gave: its outcome, samples and parse
// error. It is called once, by the goroutine that parsed s.
func (p *Pending) Done(s *Scrape) {
	p.outcome, p.samples, p.perr = s.Outcome, s.Samples, s.ParseError
	close(p.done)
}

// apply waits for the parse and puts its result into s.
func (p *Pending) apply(s *Scrape) {
	<-p.done
	s.Outcome, s.Samples, s.ParseError = p.outcome, p.samples, p.perr
}
