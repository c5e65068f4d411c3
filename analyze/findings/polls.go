package findings

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"sort"

	"github.com/llmrec/llmrec/analyze/internal/prefault"
	"github.com/llmrec/llmrec/analyze/rate"
)

// PollList is a target's polls, packed: a Poll is 648 bytes and a day of
// 8 engines at 2 s holds 345,600 of them (224 MB) until the findings are
// computed. Times (T, Start) and the spans' numbers are kept as columns;
// the rest of each poll as one record of bytes: a mask of its present
// numbers, those numbers' bits, its row, and its strings (reasons, the
// restart's evidence) as ids of strings kept once; a number equal to the
// one of the first poll of its chunk is not repeated. A poll's numbers are
// kept exactly (their bits, a null number's too). Polls are added at the
// end and read back by index; a read decodes a copy.
type PollList struct {
	n      int
	t, st  []float64          // T and Start, by poll
	off    []uint64           // poll i's record is in chunk off[i]>>32 from offset uint32(off[i])
	chunks [][]byte           // records; a chunk is never grown: the next starts when it lacks room for the longest
	bases  []*[nNums]rate.Num // by pollChunk polls, the first's numbers: a record leaves out those it shares
	spans  []rate.Num         // nspans numbers a poll (Poll.Spans)
	nspans int                // len(Poll.Spans) of every poll: the first's
	hint   int                // the polls Grow made room for
	// faulted is how many polls' times and spans are faulted in, cfaulted
	// how many bytes of the last chunk (package prefault): up to the
	// hint, memory is mapped ahead of its first writes.
	faulted, cfaulted int
	notes             map[int][]string
	strs              []string
	sid               map[string]uint32
	// last is, by text position, the last string given an id and its id:
	// a poll's reasons are mostly the poll's before, compared faster than
	// hashed.
	last [nTexts]struct {
		s  string
		id uint32
	}
}

// pollChunk is how many polls share a base (their first's numbers).
const pollChunk = 1024

// Chunk sizes: the first's, and the most one grows to by doubling.
const (
	firstPollChunk = 16 << 10
	maxPollChunk   = 256 << 10
)

// maxRecord is the longest record: three masks, every number, the row, the
// strings' mask and ids.
const maxRecord = 12 + 8*nNums + binary.MaxVarintLen64 + 1 + nTexts*binary.MaxVarintLen32

// A record's masks are 32 bits wide.
var _ [32 - nNums]struct{}

// Len is the number of polls.
func (l *PollList) Len() int { return l.n }

// T is poll i's T.
func (l *PollList) T(i int) float64 { return l.t[i] }

// Start is poll i's Start.
func (l *PollList) Start(i int) float64 { return l.st[i] }

// Last is the last poll's T; the list must not be empty.
func (l *PollList) Last() float64 { return l.t[l.n-1] }

// At is a copy of poll i. Its Spans and DecodeNotes are the list's: read
// only.
func (l *PollList) At(i int) *Poll {
	p := new(Poll)
	l.Get(i, p)
	return p
}

// Search is the index of the first poll whose T is not below t (Len when
// none), as slices.BinarySearchFunc by cmp.Compare of T.
func (l *PollList) Search(t float64) int {
	return sort.Search(l.n, func(i int) bool { return cmp.Compare(l.t[i], t) >= 0 })
}

// PollsOf packs ps.
func PollsOf(ps ...Poll) PollList {
	var l PollList
	for i := range ps {
		l.Append(&ps[i])
	}
	return l
}

// Grow makes room for n more polls' times without reallocating.
func (l *PollList) Grow(n int) {
	if n <= 0 {
		return
	}
	l.t = growCap(l.t, n)
	l.st = growCap(l.st, n)
	l.off = growCap(l.off, n)
	l.hint = l.n + n
}

func growCap[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]T, len(s), len(s)+n)
	copy(out, s)
	return out
}

// Tail is a list of the polls from i on (a copy), their Row less rows.
func (l *PollList) Tail(from, rows int) PollList {
	var out PollList
	out.Grow(l.n - from)
	var p Poll
	for i := from; i < l.n; i++ {
		l.Get(i, &p)
		p.Row -= rows
		out.Append(&p)
	}
	return out
}

// nNums are the numbers of a poll in a record (numsOf's order).
const nNums = 2*NRates + 2 + NRates + 12

// numsOf are p's numbers in record order.
func numsOf(p *Poll) [nNums]rate.Num {
	var xs [nNums]rate.Num
	for r := range NRates {
		xs[r], xs[NRates+r], xs[2*NRates+2+r] = p.Rates[r].V, p.Rates[r].Window, p.Totals[r]
	}
	xs[2*NRates], xs[2*NRates+1] = p.Interval.V, p.Interval.Window
	g := xs[3*NRates+2:]
	g[0], g[1], g[2], g[3], g[4], g[5] = p.Running, p.Waiting, p.KV, p.TokensTotal, p.Capacity, p.Deferred
	g[6], g[7], g[8], g[9], g[10], g[11] = p.KVCapacity, p.PrefixCaching, p.ProcessStart, p.Steps, p.Energy, p.Power
	return xs
}

// setNums sets p's numbers from xs (numsOf's order).
func setNums(p *Poll, xs *[nNums]rate.Num) {
	for r := range NRates {
		p.Rates[r].V, p.Rates[r].Window, p.Totals[r] = xs[r], xs[NRates+r], xs[2*NRates+2+r]
	}
	p.Interval.V, p.Interval.Window = xs[2*NRates], xs[2*NRates+1]
	g := xs[3*NRates+2:]
	p.Running, p.Waiting, p.KV, p.TokensTotal, p.Capacity, p.Deferred = g[0], g[1], g[2], g[3], g[4], g[5]
	p.KVCapacity, p.PrefixCaching, p.ProcessStart, p.Steps, p.Energy, p.Power = g[6], g[7], g[8], g[9], g[10], g[11]
}

// nTexts are the strings of a poll in a record: the rate cells' reasons,
// the interval's and the restart's evidence.
const nTexts = NRates + 2

func textsOf(p *Poll) [nTexts]string {
	var ts [nTexts]string
	for r := range NRates {
		ts[r] = p.Rates[r].Reason
	}
	ts[NRates], ts[NRates+1] = p.Interval.Reason, p.Restart
	return ts
}

func (l *PollList) id(s string) uint32 {
	if id, ok := l.sid[s]; ok {
		return id
	}
	if l.sid == nil {
		l.sid = map[string]uint32{}
	}
	id := uint32(len(l.strs))
	l.strs = append(l.strs, s)
	l.sid[s] = id
	return id
}

// Append adds p after the last poll. Every poll of a list has as many
// Spans.
func (l *PollList) Append(p *Poll) {
	i := l.n
	if l.n == 0 {
		l.nspans = len(p.Spans)
		if l.hint > 0 && cap(l.spans) == 0 {
			l.spans = make([]rate.Num, 0, l.hint*l.nspans)
		}
	}
	if i >= l.faulted && i < l.hint {
		l.fault(i)
	}
	// Every poll of a target has the run's spans (Run.Spans); one with
	// other is kept padded with nulls or cut to the first's count.
	k := len(l.spans)
	l.spans = append(l.spans, make([]rate.Num, l.nspans)...)
	copy(l.spans[k:], p.Spans)
	if p.DecodeNotes != nil {
		if l.notes == nil {
			l.notes = map[int][]string{}
		}
		l.notes[i] = append([]string{}, p.DecodeNotes...)
	}
	l.t = append(l.t, p.T)
	l.st = append(l.st, p.Start)
	if i%pollChunk == 0 {
		base := numsOf(p)
		l.bases = append(l.bases, &base)
	}
	ci := len(l.chunks) - 1
	if ci < 0 || cap(l.chunks[ci])-len(l.chunks[ci]) < maxRecord {
		c := firstPollChunk
		if ci >= 0 {
			c = min(maxPollChunk, 2*cap(l.chunks[ci]))
			if i < l.hint {
				c = min(c, l.restChunk(i))
			}
		}
		l.chunks = append(l.chunks, make([]byte, 0, c))
		ci++
		l.cfaulted = 0
	}
	c := l.chunks[ci]
	if len(c)+maxRecord > l.cfaulted && i < l.hint {
		l.cfaulted = len(c) + prefault.Step
		prefault.Range(c, len(c), l.cfaulted)
	}
	l.off = append(l.off, uint64(ci)<<32|uint64(len(c)))
	// The record is written in place: the chunk has room for the longest.
	// The numbers are read from p's fields in numsOf's order, not copied
	// out first: the stored ones after the masks' room, with the masks.
	b, n := c[:cap(c)], len(c)
	e, base := numMasks{at: n + 12}, l.bases[i/pollChunk]
	for r := range NRates {
		e = e.put(b, base, r, p.Rates[r].V)
	}
	for r := range NRates {
		e = e.put(b, base, NRates+r, p.Rates[r].Window)
	}
	e = e.put(b, base, 2*NRates, p.Interval.V)
	e = e.put(b, base, 2*NRates+1, p.Interval.Window)
	for r := range NRates {
		e = e.put(b, base, 2*NRates+2+r, p.Totals[r])
	}
	const g = 3*NRates + 2
	e = e.put(b, base, g, p.Running)
	e = e.put(b, base, g+1, p.Waiting)
	e = e.put(b, base, g+2, p.KV)
	e = e.put(b, base, g+3, p.TokensTotal)
	e = e.put(b, base, g+4, p.Capacity)
	e = e.put(b, base, g+5, p.Deferred)
	e = e.put(b, base, g+6, p.KVCapacity)
	e = e.put(b, base, g+7, p.PrefixCaching)
	e = e.put(b, base, g+8, p.ProcessStart)
	e = e.put(b, base, g+9, p.Steps)
	e = e.put(b, base, g+10, p.Energy)
	e = e.put(b, base, g+11, p.Power)
	valid, same, stored, at := e.valid, e.same, e.stored, e.at
	binary.LittleEndian.PutUint32(b[n:], valid)
	binary.LittleEndian.PutUint32(b[n+4:], same)
	binary.LittleEndian.PutUint32(b[n+8:], stored)
	n = at
	n += binary.PutVarint(b[n:], int64(p.Row))
	// The strings' ids follow their mask's byte, written after them.
	texts := textsOf(p)
	var tm byte
	mask := n
	n++
	for k, s := range texts {
		if s == "" {
			continue
		}
		tm |= 1 << k
		last := &l.last[k]
		if s != last.s {
			last.s, last.id = s, l.id(s)
		}
		n += binary.PutUvarint(b[n:], uint64(last.id))
	}
	b[mask] = tm
	l.chunks[ci] = c[:n]
	l.n++
}

// numMasks are a record's masks while its numbers are written (put): each
// present number's bit in valid; one whose bits and validity are its
// chunk base's in same; any other but a null 0 in stored, its bits at at.
// (Four fields and a value, not a pointer: they stay in registers.)
type numMasks struct {
	at                  int
	valid, same, stored uint32
}

// put writes number k of numsOf's order, x, into b against base.
func (m numMasks) put(b []byte, base *[nNums]rate.Num, k int, x rate.Num) numMasks {
	bit, v := uint32(1)<<k, math.Float64bits(x.V)
	if x.Valid {
		m.valid |= bit
	}
	switch y := &base[k]; {
	case x.Valid == y.Valid && v == math.Float64bits(y.V):
		m.same |= bit
	case x.Valid || v != 0:
		m.stored |= bit
		binary.LittleEndian.PutUint64(b[m.at:], v)
		m.at += 8
	}
	return m
}

// restChunk is what the polls the hint still counts (from i on) take, at
// the bytes a poll took so far and a tenth more: a chunk while the hint
// lasts is no larger, where doubling would allocate up to twice what the
// last chunk's records take. A hint short of the polls to come leaves the
// rest to doubling again.
func (l *PollList) restChunk(i int) int {
	used := 0
	for _, c := range l.chunks {
		used += len(c)
	}
	return (l.hint-i)*(used/i+1)*11/10 + maxRecord
}

// fault faults in the times' and spans' pages of the polls from i on, a
// step of them (up to the hint).
func (l *PollList) fault(i int) {
	l.faulted = min(l.hint, i+prefault.Elems[float64]())
	prefault.Range(l.t, i, l.faulted)
	prefault.Range(l.st, i, l.faulted)
	prefault.Range(l.off, i, l.faulted)
	prefault.Range(l.spans, i*l.nspans, l.faulted*l.nspans)
}

// Get decodes poll i into p (every field set).
func (l *PollList) Get(i int, p *Poll) {
	*p = Poll{T: l.t[i], Start: l.st[i]}
	if l.nspans > 0 {
		p.Spans = l.spans[i*l.nspans : (i+1)*l.nspans : (i+1)*l.nspans]
	}
	p.DecodeNotes = l.notes[i]
	valid, same, stored, b := l.head(i)
	base := l.bases[i/pollChunk]
	var xs [nNums]rate.Num
	// Only the numbers the record names are visited: the rest are null 0.
	for m := valid | same | stored; m != 0; m &= m - 1 {
		k := bits.TrailingZeros32(m)
		switch {
		case same&(1<<k) != 0:
			xs[k].V = base[k].V
		case stored&(1<<k) != 0:
			xs[k].V = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
		xs[k].Valid = valid&(1<<k) != 0
	}
	setNums(p, &xs)
	row, n := binary.Varint(b)
	b = b[n:]
	p.Row = int(row)
	tm := b[0]
	b = b[1:]
	for ; tm != 0; tm &= tm - 1 {
		k := bits.TrailingZeros8(tm)
		id, n := binary.Uvarint(b)
		b = b[n:]
		s := l.strs[id]
		switch {
		case k < NRates:
			p.Rates[k].Reason = s
		case k == NRates:
			p.Interval.Reason = s
		default:
			p.Restart = s
		}
	}
}

// texts is poll i's mask of present strings (textsOf's order) and the
// bytes of their ids.
func (l *PollList) texts(i int) (uint64, []byte) {
	_, _, stored, b := l.head(i)
	b = b[8*bits.OnesCount32(stored):]
	_, n := binary.Varint(b)
	return uint64(b[n]), b[n+1:]
}

// Reasons are poll i's rate cells' reasons (Rates[k].Reason), read alone.
func (l *PollList) Reasons(i int) [NRates]string {
	var out [NRates]string
	tm, b := l.texts(i)
	for ; tm != 0; tm &= tm - 1 {
		k := bits.TrailingZeros64(tm)
		if k >= NRates {
			break
		}
		id, n := binary.Uvarint(b)
		b = b[n:]
		out[k] = l.strs[id]
	}
	return out
}

// Span is poll i's Spans[j], read alone; null past the list's spans.
func (l *PollList) Span(i, j int) rate.Num {
	if j >= l.nspans {
		return rate.Num{}
	}
	return l.spans[i*l.nspans+j]
}

// Rate is poll i's Rates[k].V, read alone.
func (l *PollList) Rate(i, k int) rate.Num { return l.num(i, k) }

// Waiting is poll i's Waiting, read alone.
func (l *PollList) Waiting(i int) rate.Num { return l.num(i, 3*NRates+2+1) }

// ProcessStart is poll i's ProcessStart, read alone.
func (l *PollList) ProcessStart(i int) rate.Num { return l.num(i, 3*NRates+2+8) }

// Total is poll i's Totals[k], read alone.
func (l *PollList) Total(i, k int) rate.Num { return l.num(i, 2*NRates+2+k) }

// IntervalV is poll i's Interval.V, read alone.
func (l *PollList) IntervalV(i int) rate.Num { return l.num(i, 2*NRates) }

// Running is poll i's Running, read alone.
func (l *PollList) Running(i int) rate.Num { return l.num(i, 3*NRates+2) }

// Steps is poll i's Steps, read alone.
func (l *PollList) Steps(i int) rate.Num { return l.num(i, 3*NRates+2+9) }

// KV is poll i's KV, read alone.
func (l *PollList) KV(i int) rate.Num { return l.num(i, 3*NRates+2+2) }

// TokensTotal is poll i's TokensTotal, read alone.
func (l *PollList) TokensTotal(i int) rate.Num { return l.num(i, 3*NRates+2+3) }

// Notes are poll i's DecodeNotes: the list's, read only.
func (l *PollList) Notes(i int) []string { return l.notes[i] }

// Capacity is poll i's Capacity, read alone.
func (l *PollList) Capacity(i int) rate.Num { return l.num(i, 3*NRates+2+4) }

// Deferred is poll i's Deferred, read alone.
func (l *PollList) Deferred(i int) rate.Num { return l.num(i, 3*NRates+2+5) }

// KVCapacity is poll i's KVCapacity, read alone.
func (l *PollList) KVCapacity(i int) rate.Num { return l.num(i, 3*NRates+2+6) }

// PrefixCaching is poll i's PrefixCaching, read alone.
func (l *PollList) PrefixCaching(i int) rate.Num { return l.num(i, 3*NRates+2+7) }

// Energy is poll i's Energy, read alone.
func (l *PollList) Energy(i int) rate.Num { return l.num(i, 3*NRates+2+10) }

// Power is poll i's Power, read alone.
func (l *PollList) Power(i int) rate.Num { return l.num(i, 3*NRates+2+11) }

// Row is poll i's Row, read alone.
func (l *PollList) Row(i int) int {
	_, _, stored, b := l.head(i)
	row, _ := binary.Varint(b[8*bits.OnesCount32(stored):])
	return int(row)
}

// Restarted reports whether poll i's Restart is not "".
func (l *PollList) Restarted(i int) bool {
	tm, _ := l.texts(i)
	return tm&(1<<(nTexts-1)) != 0
}

// head is poll i's record's masks of its numbers (valid, the same as its
// chunk's first poll's, stored) and the bytes after them: the stored
// numbers, then the row and the strings.
func (l *PollList) head(i int) (valid, same, stored uint32, b []byte) {
	o := l.off[i]
	b = l.chunks[o>>32][uint32(o):]
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:]), b[12:]
}

// num is poll i's number k of numsOf's order. (head's reads written for
// one bounds check of the masks: the tail reads numbers one at a time.)
func (l *PollList) num(i, k int) rate.Num {
	o := l.off[i]
	c, at := l.chunks[o>>32], int(uint32(o))
	h := c[at : at+12 : at+12]
	bit := uint32(1) << k
	x := rate.Num{Valid: binary.LittleEndian.Uint32(h)&bit != 0}
	switch stored := binary.LittleEndian.Uint32(h[8:]); {
	case binary.LittleEndian.Uint32(h[4:])&bit != 0:
		x.V = l.bases[i/pollChunk][k].V
	case stored&bit != 0:
		j := at + 12 + 8*bits.OnesCount32(stored&(bit-1))
		x.V = math.Float64frombits(binary.LittleEndian.Uint64(c[j : j+8]))
	}
	return x
}

// Bytes is what the list holds, in bytes (its slices' capacities).
func (l *PollList) Bytes() int {
	n := 8*(cap(l.t)+cap(l.st)) + 8*cap(l.off) + 16*cap(l.spans) + 24*cap(l.chunks) + (8+16*nNums)*len(l.bases)
	for _, c := range l.chunks {
		n += cap(c)
	}
	for _, s := range l.strs {
		n += 16 + len(s)
	}
	return n
}
