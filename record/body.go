package record

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
)

// smallBody is how much of a body is read without taking a turn: every
// engine's page fits (a vLLM page is about 47 KB).
const smallBody = 1 << 20

// largeChunk is the most a large body's read copies or inflates at once.
const largeChunk = 256 << 10

// bodyReader reads scrape bodies so a giant, endless or inflating body costs
// its own target, not its neighbours. The first smallBody bytes of every
// body are read freely; past them, bodies take turns: one large body at a
// time is read, into chunks of largeChunk kept from turn to turn, so giant
// bodies use at most one core's worth of copying or inflating, and allocate
// only what is kept (a body over the cap allocates nothing). No step copies
// more than largeChunk at once: a contiguous buffer grown by doubling
// copied 32 MiB into fresh memory in one non-preemptible move, and the
// page faults held a processor for a tick's worth of time. Waiting for a
// turn counts against the waiting scrape's own timeout.
type bodyReader struct {
	turn chan [][]byte // holds the chunks while no large body is read
}

func newBodyReader() *bodyReader {
	r := &bodyReader{turn: make(chan [][]byte, 1)}
	r.turn <- nil
	return r
}

// read reads body up to max bytes and one more, and returns what it read
// and how much: when n > max the body is over the cap and b is nil. On an error b
// holds nothing and n what was read before it.
//
// hint is the size the body is expected to have (its Content-Length, or
// the endpoint's last body's), 0 when unknown: a body of about that size is
// read into one allocation, where growing from nothing copied a 47 KB page
// seven times over.
func (r *bodyReader) read(ctx context.Context, body io.Reader, max, hint int64) (b []byte, n int64, err error) {
	limit := max + 1
	small := min(limit, smallBody)
	b, err = readAll(io.LimitReader(body, small), min(hint, small))
	n = int64(len(b))
	switch {
	case err != nil:
		return nil, n, err
	case n < small: // the whole body
		return b, n, nil
	case n == limit:
		return nil, n, nil
	}
	var chunks [][]byte
	select {
	case chunks = <-r.turn:
	case <-ctx.Done():
		return nil, n, fmt.Errorf("waiting for a turn to read a body over %d bytes: %w", smallBody, ctx.Err())
	}
	defer func() { r.turn <- chunks }()
	// used[i] is how much of chunks[i] this body fills.
	var used []int
	for n < limit {
		if len(used) == 0 || used[len(used)-1] == largeChunk {
			if len(used) == len(chunks) {
				chunks = append(chunks, make([]byte, largeChunk))
			}
			used = append(used, 0)
		}
		c := chunks[len(used)-1]
		m, rerr := body.Read(c[used[len(used)-1]:min(int64(largeChunk), int64(used[len(used)-1])+limit-n)])
		used[len(used)-1] += m
		n += int64(m)
		// Between reads the tick loops get a processor: a giant body is
		// copied or inflated in slices of at most largeChunk.
		runtime.Gosched()
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, n, rerr
		}
	}
	if n > max {
		return nil, n, nil
	}
	// A body under the cap is kept: copied out at its exact size, a chunk
	// at a time.
	out := make([]byte, 0, n)
	out = append(out, b...)
	for i, u := range used {
		out = append(out, chunks[i][:u]...)
		runtime.Gosched()
	}
	return out, n, nil
}

// readAll is io.ReadAll starting from a buffer of hint bytes and a little
// more, so that reading a body of the hinted size finds its end without
// growing the buffer.
func readAll(r io.Reader, hint int64) ([]byte, error) {
	b := make([]byte, 0, max(512, hint+512))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			// A body much smaller than its hint is not kept in the
			// hint's space (the writer holds a body until it is sealed).
			if cap(b)-len(b) > len(b)/4+4096 {
				b = append([]byte(nil), b...)
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
}

// largeParse is the body size from which parses take turns: one at a
// time. A page this large is not an engine's usual page (a vLLM page is
// about 47 KB); parsing it costs seconds of CPU and memory in proportion.
const largeParse = 4 << 20

// parseGate sheds the parse of a large page when another one is being
// parsed: its body is stored byte-exact but unparsed, as a parse_error row
// with the reason (analysis sees no samples for that poll; the body can be
// exported and parsed later), and no other target waits for it.
type parseGate chan struct{}

func newParseGate() parseGate { return make(parseGate, 1) }

// parse parses row's body, or sheds it (see parseGate). A nil gate never
// sheds.
func (g parseGate) parse(row *capture.Scrape, in *expo.Interner, lim capture.Limits) {
	if g == nil || len(row.Body) < largeParse || row.Endpoint != capture.EndpointMetrics || row.Outcome != capture.OutcomeOK {
		capture.ParseCapped(row, in, lim)
		return
	}
	select {
	case g <- struct{}{}:
		defer func() { <-g }()
		capture.ParseCapped(row, in, lim)
	default:
		msg := fmt.Sprintf("parse shed: another page over %d bytes was being parsed; the %d-byte body is stored unparsed", largeParse, len(row.Body))
		row.Outcome, row.ParseError = capture.OutcomeParseError, &msg
	}
}

// parseSlots bounds the parses of ordinary pages (up to smallBody) that run
// at once to one fewer than the processors, at least one, so one processor
// stays free for the tick loops, the requests and the writer, until the
// ticks stop (widen): then the pages still waiting are parsed on every
// processor. Without it,
// every page that arrived was parsed at once: with a few hundred targets
// at 1 s, tens of parse goroutines (a 47 KB page is 1–3 ms of CPU) stood
// runnable ahead of a tick loop that had just woken, and the tick fired as
// late as the queue was long. A parse past the bound waits parked, not
// runnable. Larger pages do not take a slot (parseGate takes care of the
// largest): a slow hostile page cannot hold the others' parses.
type parseSlots chan struct{}

func newParseSlots() parseSlots {
	n := runtime.GOMAXPROCS(0)
	s := make(parseSlots, n)
	if n > 1 {
		s <- struct{}{} // the tick loops' processor, until widen
	}
	return s
}

// widen gives the parses the slot kept for the tick loops, once they have
// stopped: a recording's stop waits for the pages still waiting for their
// parse (journaled, their samples still to come), and a thousand targets
// leave a few thousand. Called once, on slots made by newParseSlots.
func (s parseSlots) widen() {
	if cap(s) > 1 {
		<-s
	}
}

// parse parses row's body through g in a slot (see parseSlots). Nil
// slots (a recorder made without them) bound nothing.
func (s parseSlots) parse(g parseGate, row *capture.Scrape, in *expo.Interner, lim capture.Limits) {
	if s != nil && len(row.Body) <= smallBody {
		s <- struct{}{}
		defer func() { <-s }()
	}
	g.parse(row, in, lim)
}
