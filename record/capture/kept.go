package capture

import "unsafe"

// The rows of sealed segments are kept in memory until compaction merges
// them, so that it need not decode the files again (see Writer.seal). They
// are kept packed: a sample's strings become indexes into one table per
// compaction group. A scrape's label sets, names and help texts are those of
// the scrape before, so the table holds each once, not once a scrape, and
// packed samples hold no pointers for the garbage collector to scan in the
// ten minutes they wait.

// keptGroup is the packed rows of the segments of one compaction group, or
// the packed samples of an open group's closed minutes (Writer.nextMinute).
type keptGroup struct {
	segs  [][]keptRow // segs[i]: the rows of the group's i-th sealed segment; nil: not kept
	strs  []string
	index map[string]uint32
	bytes int64          // estimated heap held, for the budget
	prev  []packedSample // the samples of the row packed last
	// the string of each field packed last, and its index
	last   [5]string
	lastID [5]uint32
	seen   [5]bool
}

// keptRow is a row without its samples, and its samples packed.
type keptRow struct {
	row        Scrape // Samples nil
	samples    []packedSample
	nilSamples bool // row.Samples was nil, not empty
}

type packedSample struct {
	family, typ, help, name, labels uint32
	hasTS                           bool
	ts                              int64
	value                           float64
}

// packedBytes is the heap n packed samples take.
func packedBytes(n int) int64 { return int64(n) * int64(unsafe.Sizeof(packedSample{})) }

// add packs rows and appends them as the group's next segment, or appends
// nil (not kept) when they would take the group past budget bytes.
func (g *keptGroup) add(rows []Scrape, budget int64) {
	var n int64
	for i := range rows {
		n += int64(unsafe.Sizeof(keptRow{})) + int64(cap(rows[i].Body)) + packedBytes(len(rows[i].Samples))
	}
	if g.bytes+n > budget {
		g.segs = append(g.segs, nil)
		return
	}
	seg := make([]keptRow, len(rows))
	for i := range rows {
		k := &seg[i]
		k.row = rows[i]
		k.row.Samples = nil
		k.nilSamples = rows[i].Samples == nil
		if k.nilSamples {
			continue
		}
		var strs int64
		k.samples, strs = g.pack(rows[i].Samples)
		n += strs
	}
	g.segs = append(g.segs, seg)
	g.bytes += n
}

// pack packs ss into the group's table, and returns the bytes its new
// strings take.
func (g *keptGroup) pack(ss []Sample) ([]packedSample, int64) {
	if g.index == nil {
		g.index = map[string]uint32{}
	}
	var n int64
	id := func(field int, s string) uint32 {
		// Most samples share their family, type, help and name with the
		// sample before: the same string, which compares in one step.
		if g.seen[field] && s == g.last[field] {
			return g.lastID[field]
		}
		i, ok := g.index[s]
		if !ok {
			i = uint32(len(g.strs))
			g.strs = append(g.strs, s)
			g.index[s] = i
			n += int64(len(s)) + 48 // the string, its slice element and map entry
		}
		g.last[field], g.lastID[field], g.seen[field] = s, i, true
		return i
	}
	out := make([]packedSample, len(ss))
	for j, s := range ss {
		p := &out[j]
		// A target prints its series in the same order scrape after
		// scrape: the sample at j is most often the last row's at j
		// (the same memory, when the parser interned them).
		if q := at(g.prev, j); q != nil && g.strs[q.labels] == s.Labels && g.strs[q.name] == s.Name &&
			g.strs[q.family] == s.Family && g.strs[q.help] == s.Help && g.strs[q.typ] == s.Type {
			p.family, p.typ, p.help, p.name, p.labels = q.family, q.typ, q.help, q.name, q.labels
		} else {
			p.family, p.typ, p.help, p.name = id(0, s.Family), id(1, s.Type), id(2, s.Help), id(3, s.Name)
			p.labels = id(4, s.Labels)
		}
		p.value = s.Value
		if s.TimestampMs != nil {
			p.hasTS, p.ts = true, *s.TimestampMs
		}
	}
	g.prev = out
	return out, n
}

// at is &ps[j], or nil past its end.
func at(ps []packedSample, j int) *packedSample {
	if j < len(ps) {
		return &ps[j]
	}
	return nil
}

// unpack rebuilds the row k into dst, its samples in dst.Samples' space.
func (g *keptGroup) unpack(k *keptRow, dst *Scrape) {
	buf := dst.Samples[:0]
	*dst = k.row
	if k.nilSamples {
		return
	}
	dst.Samples = g.samples(buf, k.samples)
}

// samples appends the samples ps packs to buf.
func (g *keptGroup) samples(buf []Sample, ps []packedSample) []Sample {
	for i := range ps {
		p := &ps[i]
		s := Sample{Family: g.strs[p.family], Type: g.strs[p.typ], Help: g.strs[p.help], Name: g.strs[p.name],
			Labels: g.strs[p.labels], Value: p.value}
		if p.hasTS {
			s.TimestampMs = &p.ts
		}
		buf = append(buf, s)
	}
	return buf
}
