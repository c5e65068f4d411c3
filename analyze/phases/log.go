package phases

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/internal/prefault"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
)

// Log keeps, compactly, what the phase figures need of one target's polls:
// each poll's increments of the counter series its engine reader reads
// (histogram buckets included), and the published cells the figures are
// compared with that the findings' polls do not keep. Phases are known only
// after the replay (their edges are found at its end), so the increments of
// every poll are kept: a phase's Δ is their sum over the phase.
//
// Increments are Prometheus' increase between consecutive readings of one
// series: a reading below the last is a reset, counted from 0, and the poll
// is marked as holding one. A series' first reading is its baseline and
// adds nothing. Only the nonzero ones are written: an idle poll costs a
// few bytes.
type Log struct {
	// Series are the logged series, by log id.
	Series []engine.Series

	// Poll i's increments are in chunk off[i]>>32 from offset
	// uint32(off[i]) to the next poll's start in that chunk, or its end:
	// chunks of a megabyte are never copied to grow, and waste at most one
	// chunk's free end.
	off    []int64
	chunks [][]byte
	reset  []uint64 // bit i: a logged series fell at poll i
	hint   int      // the polls expected (NewLog), 0 unknown
	// faulted is how many polls' offsets and published cells are faulted
	// in, cfaulted how many bytes of the last chunk (package prefault): up
	// to the hint, memory is mapped ahead of its first writes.
	faulted, cfaulted int

	// Per tracker id: the log id, lidNone for a series not logged,
	// lidPending for one not classified yet (the engine is not known).
	lid     []int32
	pending []engine.Series // by tracker id, while pending
	prev    []float64       // by log id: the last reading, NaN before the first
	engine  string

	// Published cells of PubCells, per poll: values (NaN when null) and
	// their reasons' codes (0 valued).
	pubV    []float64
	pubR    []uint8
	reasons []string
	rcode   map[string]uint8

	les     []float64                // by log id: a bucket's le, NaN none; filled when first asked
	layouts map[string]*bucketLayout // by bucket series, made when first asked

	// The logged series of the last poll's lastN ids, by position; posOK
	// is false when a classification may have changed them.
	pos   []logged
	lastN int
	posOK bool

	// restarted says the next poll is a new process's first (Restarted).
	restarted bool
}

// logged is a logged series' position in a poll's ids and its log id.
type logged struct{ k, x int32 }

const (
	lidNone    = -1
	lidPending = -2
)

// PubCells are the published cells a Log keeps per poll, besides the rate
// cells the findings keep (findings.RateCells): the figures they are
// compared with.
var PubCells = []string{
	engine.PrefixCacheHitRatio, engine.PerRequestDecodeTokensPerSecond,
	engine.TTFT + engine.SuffixP50, engine.TTFT + engine.SuffixP99, engine.TPOT + engine.SuffixMean,
	engine.ITL + engine.SuffixP50, engine.E2E + engine.SuffixP50, engine.Queue + engine.SuffixP50,
}

var pubAt = func() []int {
	out := make([]int, len(PubCells))
	for i, c := range PubCells {
		out[i] = slices.Index(engine.Canonical, c)
	}
	return out
}()

// chunkSize is the size of the increments' chunks, firstChunk the first's.
const (
	chunkSize  = 1 << 20
	firstChunk = 64 << 10
)

// NewLog returns an empty log with room for about polls polls (0 unknown).
func NewLog(polls int) *Log {
	return &Log{hint: polls, reasons: []string{""}, rcode: map[string]uint8{"": 0}, off: make([]int64, 0, polls),
		reset: make([]uint64, 0, (polls+63)/64), pubV: make([]float64, 0, polls*len(PubCells)),
		pubR: make([]uint8, 0, polls*len(PubCells))}
}

// Key registers series s under the main tracker's id.
func (l *Log) Key(id int32, s engine.Series) {
	for int(id) >= len(l.lid) {
		l.lid = append(l.lid, lidNone)
		l.pending = append(l.pending, engine.Series{})
	}
	if !counterLike(s) {
		return
	}
	if l.engine == "" {
		l.lid[id], l.pending[id] = lidPending, s
		l.posOK = false
		return
	}
	l.classify(id, s)
}

// counterLike reports whether s is a counter or a part of a histogram or
// summary that counts: the series an increase is taken of.
func counterLike(s engine.Series) bool {
	// A creation time is a stamp, not a count.
	if strings.HasSuffix(s.Name, "_created") {
		return false
	}
	switch s.Type {
	case "counter":
		return true
	case "histogram":
		return strings.HasSuffix(s.Name, "_bucket") || strings.HasSuffix(s.Name, "_count") || strings.HasSuffix(s.Name, "_sum")
	case "summary":
		return strings.HasSuffix(s.Name, "_count") || strings.HasSuffix(s.Name, "_sum")
	case "untyped", "unknown", "":
		return strings.HasSuffix(s.Name, "_total")
	}
	return false
}

// classify logs s when its engine's reader reads its family (every counter
// for the generic reader) or it counts engine steps.
func (l *Log) classify(id int32, s engine.Series) {
	l.lid[id] = lidNone
	l.posOK = false
	if l.engine != engine.Generic && !feeds(l.engine, s.Family) && !findings.StepCounters[s.Name] {
		return
	}
	l.lid[id] = int32(len(l.Series))
	l.Series = append(l.Series, s)
	l.prev = append(l.prev, math.NaN()) // no reading yet
}

var (
	feedsMu  sync.Mutex
	feedsMap = map[string]map[string]bool{}
)

// feeds reports whether engine id's reader reads family into a cell.
func feeds(id, family string) bool {
	feedsMu.Lock()
	defer feedsMu.Unlock()
	m, ok := feedsMap[id]
	if !ok {
		m = map[string]bool{}
		fams, _ := engine.Catalog(id)
		for _, k := range fams {
			if k.Feeds != "" {
				m[k.Family] = true
			}
		}
		feedsMap[id] = m
	}
	return m[family]
}

// Restarted says the next poll is a new process's first (the main
// tracker found restart evidence): every counter counts from 0 at it, not
// only those that fell — a new process whose counters passed the old ones
// before its first poll holds all it did since it started.
func (l *Log) Restarted() { l.restarted = true }

// Poll logs one poll: the samples vals[i] of tracker ids ids[i], the
// published cells, and the engine the main tracker reads it as ("" or
// generic until it knows). Its times are the findings' (findings.Poll).
//
// changed says whether ids may differ from the last poll's beyond their
// length (false when the caller knows they are the same series in the
// same order).
func (l *Log) Poll(ids []int32, vals []float64, cells engine.Cells, eng string, changed bool) {
	if l.engine == "" && eng != "" && eng != engine.Generic {
		l.engine = eng
		for id, x := range l.lid {
			if x == lidPending {
				l.classify(int32(id), l.pending[id])
			}
		}
		l.pending = nil
	}
	i := len(l.off)
	if i >= l.faulted && i < l.hint {
		l.fault(i)
	}
	if i/64 >= len(l.reset) {
		l.reset = append(l.reset, 0)
	}
	pos := l.positions(ids, changed)
	// The poll is written straight into the last chunk, which must have
	// room for its longest encoding.
	need := len(pos) * maxEntry
	k := len(l.chunks) - 1
	if k < 0 || cap(l.chunks[k])-len(l.chunks[k]) < need {
		l.chunks = append(l.chunks, make([]byte, 0, max(l.chunkSize(i), need)))
		k++
		l.cfaulted = 0
	}
	c := l.chunks[k]
	if len(c)+need > l.cfaulted && i < l.hint {
		l.cfaulted = len(c) + need + prefault.Step
		prefault.Range(c, len(c), l.cfaulted)
	}
	n, fell := encode(c[:cap(c)], len(c), pos, vals[:len(ids)], l.prev, l.restarted)
	if l.restarted {
		fell, l.restarted = true, false
	}
	l.off = append(l.off, int64(k)<<32|int64(len(c)))
	l.chunks[k] = c[:n]
	if fell {
		l.reset[i/64] |= 1 << (i % 64)
	}
	l.pub(cells)
}

// fault faults in the offsets' and published cells' pages of the polls
// from i on, a step of them (up to the hint).
func (l *Log) fault(i int) {
	l.faulted = min(l.hint, i+prefault.Elems[float64]())
	n := len(PubCells)
	prefault.Range(l.off, i, l.faulted)
	prefault.Range(l.pubV, i*n, l.faulted*n)
	prefault.Range(l.pubR, i*n, l.faulted*n)
}

// chunkSize is the size of the chunk that follows the last when poll i
// does not fit in it, at most chunkSize. An hour's log of a target fills a
// fraction of a megabyte, and fresh memory faulted in is dear: when the
// polls to come are known (NewLog's hint), the chunk is what they take at
// the bytes per poll so far, and a tenth more (most logs end in their
// second chunk); else chunks double from firstChunk.
func (l *Log) chunkSize(i int) int {
	k := len(l.chunks) - 1
	if k < 0 {
		return firstChunk
	}
	// Past the hint, or nothing logged yet: doubling it is.
	left := l.hint - i
	if left <= 0 || i == 0 {
		return min(chunkSize, 2*cap(l.chunks[k]))
	}
	used := 0
	for _, c := range l.chunks {
		used += len(c)
	}
	return min(chunkSize, max(firstChunk, used/i*left*11/10))
}

// positions are the series logged among ids: their positions and log
// ids. A target prints its series in the same order every poll: the last
// poll's answer stands while its ids are unchanged and as many.
func (l *Log) positions(ids []int32, changed bool) []logged {
	if l.posOK && !changed && len(ids) == l.lastN {
		return l.pos
	}
	l.lastN = len(ids)
	l.pos = l.pos[:0]
	for k, id := range ids {
		// Not logged (or not classified yet: the engine is still unknown).
		if int(id) < len(l.lid) && l.lid[id] >= 0 {
			l.pos = append(l.pos, logged{int32(k), l.lid[id]})
		}
	}
	l.posOK = true
	return l.pos
}

// maxEntry is the longest entry: a run break, an id step and an
// increment written as 1 and its 8 bytes.
const maxEntry = 1 + binary.MaxVarintLen64 + 9

// encode writes the increments of the logged series at pos, read from
// vals and against prev (which it updates), into dst from offset n; dst
// has room for maxEntry bytes a series. It returns the offset after them
// and whether a series fell. Across a restart (fromZero) every series
// counts from 0.
func encode(dst []byte, n int, pos []logged, vals, prev []float64, fromZero bool) (int, bool) {
	// Across a restart every series counts from 0: once in a process's
	// life, by the general loop.
	if fromZero {
		return encodeAll(dst, n, pos, vals, prev, fromZero)
	}
	fell := false
	// lastInc is NaN after a run break: no increment equals it.
	last, lastInc := int32(-1), math.NaN()
	for _, at := range pos {
		x, v := at.x, vals[at.k]
		p := prev[x]
		// An idle series (most, each poll) adds nothing and leaves prev as
		// it is.
		if v == p {
			continue
		}
		// A value that is not a number is no reading.
		if v-v != 0 { // NaN or ±Inf
			continue
		}
		prev[x] = v
		// v ≠ p, both finite: the rise is above 0, unless p is NaN (no
		// reading before: v is the baseline) or v fell (a reset: the
		// counter counts from 0 again).
		inc := v - p
		if !(inc > 0) {
			if p != p {
				continue
			}
			inc, fell = v, true
			if inc == 0 {
				continue
			}
		}
		if x <= last {
			dst[n] = 0 // run break
			n++
			last, lastInc = -1, math.NaN()
		}
		d := uint64(x-last) << 1
		same := inc == lastInc
		if same {
			d |= 1
		}
		for ; d >= 0x80; d >>= 7 {
			dst[n] = byte(d) | 0x80
			n++
		}
		dst[n] = byte(d)
		n++
		last, lastInc = x, inc
		if same {
			continue
		}
		if inc != math.Trunc(inc) || inc >= 1<<52 {
			dst[n] = 1
			binary.LittleEndian.PutUint64(dst[n+1:], math.Float64bits(inc))
			n += 9
			continue
		}
		for d = uint64(inc) << 1; d >= 0x80; d >>= 7 {
			dst[n] = byte(d) | 0x80
			n++
		}
		dst[n] = byte(d)
		n++
	}
	return n, fell
}

// encodeAll is encode by the general loop, fromZero or not.
func encodeAll(dst []byte, n int, pos []logged, vals, prev []float64, fromZero bool) (int, bool) {
	fell := false
	last, lastInc := int32(-1), 0.0
	for _, at := range pos {
		x, v := at.x, vals[at.k]
		p := prev[x]
		// An idle series (most, each poll) adds nothing and leaves prev as
		// it is; across a restart it counts from 0.
		if v == p && !fromZero {
			continue
		}
		// A value that is not a number is no reading.
		if v-v != 0 { // NaN or ±Inf
			continue
		}
		prev[x] = v
		var inc float64
		switch {
		case math.IsNaN(p):
			// No reading before: the first is the baseline.
			continue
		case fromZero:
			inc = v
		case v >= p:
			inc = v - p
		default:
			// A fall is a reset: the counter counts from 0 again.
			inc, fell = v, true
		}
		if inc == 0 {
			continue
		}
		// Entries go in rising log id (a poll lists a series once; a
		// repeat or a series out of order starts a new run from its id).
		if x <= last {
			dst[n] = 0 // run break
			n++
			last = -1
		}
		// An entry is (id step)<<1, with the low bit set when its increment
		// is the entry's before: a histogram's upper buckets rise alike.
		// (The varints are written in line: a call would cost the loop
		// its registers.)
		d := uint64(x-last) << 1
		same := inc == lastInc && last >= 0
		if same {
			d |= 1
		}
		for ; d >= 0x80; d >>= 7 {
			dst[n] = byte(d) | 0x80
			n++
		}
		dst[n] = byte(d)
		n++
		last, lastInc = x, inc
		if same {
			continue
		}
		// An increment is a whole number below 2^52 as a varint of it
		// shifted left once; anything else 1 and its 8 bytes.
		if inc != math.Trunc(inc) || inc >= 1<<52 {
			dst[n] = 1
			binary.LittleEndian.PutUint64(dst[n+1:], math.Float64bits(inc))
			n += 9
			continue
		}
		for d = uint64(inc) << 1; d >= 0x80; d >>= 7 {
			dst[n] = byte(d) | 0x80
			n++
		}
		dst[n] = byte(d)
		n++
	}
	return n, fell
}

// pub keeps the poll's PubCells.
func (l *Log) pub(cells engine.Cells) {
	for _, at := range pubAt {
		if at < 0 || at >= len(cells) {
			l.pubV, l.pubR = append(l.pubV, math.NaN()), append(l.pubR, l.code(rate.ReasonAbsent))
			continue
		}
		c := &cells[at].Cell
		if c.Value.Valid {
			l.pubV, l.pubR = append(l.pubV, c.Value.V), append(l.pubR, 0)
			continue
		}
		l.pubV, l.pubR = append(l.pubV, math.NaN()), append(l.pubR, l.code(c.Reason))
	}
}

func (l *Log) code(reason string) uint8 {
	// A handful of reasons ever: a scan is cheaper than hashing.
	for c, r := range l.reasons[:min(len(l.reasons), 16)] {
		if r == reason {
			return uint8(c)
		}
	}
	if c, ok := l.rcode[reason]; ok {
		return c
	}
	// More distinct reasons than a byte holds: the last code stands for the rest.
	if len(l.reasons) == 255 {
		return 254
	}
	c := uint8(len(l.reasons))
	l.reasons = append(l.reasons, reason)
	l.rcode[reason] = c
	return c
}

// Len is the number of polls logged.
func (l *Log) Len() int { return len(l.off) }

// Reset reports whether a logged series fell at poll i.
func (l *Log) Reset(i int) bool { return l.reset[i/64]&(1<<(i%64)) != 0 }

// publishedCode returns poll i's value of PubCells[k], or the code of its
// reason (Reason turns it into text); code 0 is a value.
func (l *Log) publishedCode(i, k int) (float64, uint8) {
	j := i*len(PubCells) + k
	return l.pubV[j], l.pubR[j]
}

// Reason is the reason of a code publishedCode returned.
func (l *Log) Reason(code uint8) string { return l.reasons[code] }

// Engine is the engine the log classified its series under ("" none).
func (l *Log) Engine() string { return l.engine }

// add adds poll i's increments to acc (by log id).
func (l *Log) add(i int, acc []float64) {
	k, from := l.off[i]>>32, int(uint32(l.off[i]))
	c := l.chunks[k]
	end := len(c)
	if i+1 < len(l.off) && l.off[i+1]>>32 == k {
		end = int(uint32(l.off[i+1]))
	}
	b := c[from:end]
	last, inc := int32(-1), 0.0
	for j := 0; j < len(b); {
		// Most varints are one byte: read in line, the rest by uvarint.
		d := uint64(b[j])
		if j++; d >= 0x80 {
			d, j = uvarint(b, j-1)
		}
		if d == 0 {
			last = -1
			continue
		}
		x := last + int32(d>>1)
		last = x
		if d&1 == 0 {
			t := uint64(b[j])
			if j++; t >= 0x80 {
				t, j = uvarint(b, j-1)
			}
			inc = float64(t >> 1)
			if t == 1 {
				inc = math.Float64frombits(binary.LittleEndian.Uint64(b[j:]))
				j += 8
			}
		}
		acc[x] += inc
	}
}

// uvarint reads the varint at b[j:] and returns it and the offset after it.
func uvarint(b []byte, j int) (uint64, int) {
	v, n := binary.Uvarint(b[j:])
	return v, j + n
}

// le is the le bound of logged series x; NaN when it has none.
func (l *Log) le(x int) float64 {
	if len(l.les) != len(l.Series) {
		for y := len(l.les); y < len(l.Series); y++ {
			le, ok := bucketLe(l.Series[y].Labels)
			if !ok || !strings.HasSuffix(l.Series[y].Name, "_bucket") {
				le = math.NaN()
			}
			l.les = append(l.les, le)
		}
	}
	return l.les[x]
}

// bucketLe reads the le label of a bucket series' label set (expo.Label:
// by a scan when the labels are plain, decoded whole otherwise).
func bucketLe(labels string) (float64, bool) {
	v, _, err := expo.Label(labels, "le")
	if err != nil {
		return 0, false
	}
	le, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(le) {
		return 0, false
	}
	return le, true
}
