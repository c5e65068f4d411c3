package expo

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A target's successive pages differ in a few numbers: the same lines, the
// same names, labels, comments and spacing, other values. The Interner keeps
// a map of its last page (where each sample line's value is, and which
// sample it became); a page whose bytes outside those values are the last
// page's is parsed by reading its values alone, and its samples are the last
// page's with the new values. expfmt and the flattening never run for it.
//
// The result is what the full parse gives, because outside the values the
// parser sees the same bytes, and a value decides nothing but itself (see
// valueKind); every case the map cannot vouch for (a value that does not
// parse, a line with a timestamp, a negative histogram count) goes to the
// full parse, errors included. The map is made from a page whose series
// were the page before's (a target whose page keeps its shape) and checked
// against that page's samples line by line: a line the map cannot place
// leaves the target on the full parse.

// valueKind is how a line's value becomes its sample's value, as expfmt and
// the flattening make it.
type valueKind uint8

const (
	// kindFloat: counters, gauges, untyped, quantiles and sums: the value.
	kindFloat valueKind = iota
	// kindHistCount: a histogram bucket or count, an integer: the value,
	// -0 read as 0; any other value is left to the full parse (see
	// readValue).
	kindHistCount
	// kindSummaryCount: a summary's count is stored as an unsigned
	// integer: float64(uint64(v)).
	kindSummaryCount
)

// valueAt is one sample line of the last page: its value at body[start:end]
// (end at the line's newline or the body's end), and the sample it became.
type valueAt struct {
	start, end int
	sample     int
	kind       valueKind
}

// reuse parses body as the last page with new values, or reports false.
func (in *Interner) reuse(body []byte) ([]Sample, bool) {
	return in.reuseFrom(in.prev, in.at, in.last, body)
}

// reuseShape parses body as one of the shapes' pages with new values, or
// reports false.
func (in *Interner) reuseShape(body []byte) ([]Sample, bool) {
	for _, s := range in.Shapes.load() {
		if out, ok := in.reuseFrom(s.page, s.at, s.last, body); ok {
			return out, true
		}
	}
	return nil, false
}

// reuseFrom parses body as the page old, whose map is at and samples last,
// with new values, or reports false. On success body and its map become
// the Interner's (old, at and last are only read).
func (in *Interner) reuseFrom(old []byte, at []valueAt, last []Sample, body []byte) ([]Sample, bool) {
	out := make([]Sample, len(last))
	copy(out, last)
	next := in.spare[:0]
	po, pn := 0, 0
	for _, e := range at {
		// The bytes up to this value are the last page's.
		n := e.start - po
		if pn+n > len(body) || !bytes.Equal(old[po:e.start], body[pn:pn+n]) {
			return nil, false
		}
		pn += n
		end := len(body)
		if i := bytes.IndexByte(body[pn:], '\n'); i >= 0 {
			end = pn + i
		}
		// A value whose bytes are the last page's is its sample's value
		// there (read from them, or from the same bytes before): most of
		// a page's values do not move from one scrape to the next.
		if tok := body[pn:end]; !bytes.Equal(tok, old[e.start:e.end]) {
			v, ok := readValue(tok, e.kind)
			if !ok {
				return nil, false
			}
			out[e.sample].Value = v
		}
		next = append(next, valueAt{start: pn, end: end, sample: e.sample, kind: e.kind})
		po, pn = e.end, end
	}
	if !bytes.Equal(old[po:], body[pn:]) {
		in.spare = next[:0] // what it grew to
		return nil, false
	}
	in.spare, in.at = in.at[:0], next
	in.prev = append(in.prev[:0], body...)
	return out, true
}

// readValue is a line's value as its sample's, or false where expfmt would
// refuse it, or where it is not a value alone (a timestamp follows).
func readValue(tok []byte, kind valueKind) (float64, bool) {
	if len(tok) == 0 || bytes.ContainsAny(tok, "pP_ \t") {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(tok), 64) // no allocation: the conversion stays on the stack
	if err != nil {
		return 0, false
	}
	switch kind {
	case kindHistCount:
		// expfmt keeps an integral count as an integer (so -0 is 0); any
		// other makes the whole histogram float, which can add a _count
		// sample the page has no line for, or is an error (negative): the
		// full parse says which.
		u := uint64(v)
		if v != float64(u) {
			return 0, false
		}
		v = float64(u)
	case kindSummaryCount:
		v = float64(uint64(v))
	}
	return v, true
}

// kindOf is how a sample's value was made from its line.
func kindOf(s *Sample) valueKind {
	switch s.Type {
	case "histogram", "gaugehistogram":
		if s.Name == s.Family+"_bucket" || s.Name == s.Family+"_count" {
			return kindHistCount
		}
	case "summary":
		if s.Name == s.Family+"_count" {
			return kindSummaryCount
		}
	}
	return kindFloat
}

// remember keeps body and the map of its sample lines onto out, the
// samples the full parse made of it; where a line cannot be placed, no map.
func (in *Interner) remember(body []byte, out []Sample) {
	in.at = in.at[:0]
	at, ok := mapLines(body, out, in.at)
	if !ok {
		in.prev = in.prev[:0]
		return
	}
	in.at = at
	in.prev = append(in.prev[:0], body...)
}

// forget drops the map: the next page is parsed in full.
func (in *Interner) forget() {
	in.at = in.at[:0]
	in.prev = in.prev[:0]
}

// mapLines finds, for every sample line of body, the sample of out it
// became (by its name and label set, encoded as the flattening does) and
// checks that its value reads as the sample's. Every sample must come from
// exactly one line, and none may carry a timestamp.
func mapLines(body []byte, out []Sample, at []valueAt) ([]valueAt, bool) {
	index := make(map[string]int, len(out))
	var key []byte
	for i := range out {
		if out[i].TimestampMs != nil {
			return nil, false
		}
		key = append(append(append(key[:0], out[i].Name...), 0), out[i].Labels...)
		index[string(key)] = i
	}
	if len(index) != len(out) {
		return nil, false
	}
	used := make([]bool, len(out))
	var fam, typ string
	var ps []pair
	for pos := 0; pos < len(body); {
		end := len(body)
		if i := bytes.IndexByte(body[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		line := body[pos:end]
		lineStart := pos
		pos = end + 1
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] == '#' {
			// Only well-spaced TYPE lines are read: another spelling leaves
			// fam unchanged, and the lines after it then fail to match.
			if f := strings.Fields(string(trimmed)); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
				fam, typ = f[2], f[3]
			}
			continue
		}
		name, labels, valStart, ok := splitLine(trimmed, ps[:0])
		if !ok {
			return nil, false
		}
		ps = labels
		special := ""
		switch {
		case (typ == "histogram" || typ == "gaugehistogram") && name == fam+"_bucket":
			special = "le"
		case typ == "summary" && name == fam:
			special = "quantile"
		}
		if special != "" {
			k := slices.IndexFunc(ps, func(p pair) bool { return p.k == special })
			if k < 0 {
				return nil, false
			}
			f, err := strconv.ParseFloat(ps[k].v, 64)
			if err != nil || math.IsNaN(f) {
				return nil, false
			}
			ps[k].v = formatFloat(f)
		}
		if !slices.IsSortedFunc(ps, comparePairs) {
			slices.SortFunc(ps, comparePairs)
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].k == ps[i-1].k {
				return nil, false
			}
		}
		key = append(append(key[:0], name...), 0)
		key = appendLabels(key, ps)
		i, found := index[string(key)]
		if !found || used[i] {
			return nil, false
		}
		used[i] = true
		start := lineStart + (len(line) - len(trimmed)) + valStart
		kind := kindOf(&out[i])
		v, ok := readValue(body[start:end], kind)
		if !ok || math.Float64bits(v) != math.Float64bits(out[i].Value) && !(math.IsNaN(v) && math.IsNaN(out[i].Value)) {
			return nil, false
		}
		at = append(at, valueAt{start: start, end: end, sample: i, kind: kind})
	}
	if len(at) != len(out) {
		return nil, false
	}
	return at, true
}

// splitLine reads a sample line `name{k="v",...} value` (blanks allowed
// where expfmt allows them): its name, its labels (values unescaped) and
// where its value starts. Anything else (a quoted name, a timestamp, an
// unknown escape) is not read: false.
func splitLine(line []byte, ps []pair) (string, []pair, int, bool) {
	i := 0
	for i < len(line) && isNameByte(line[i], i == 0, true) {
		i++
	}
	if i == 0 {
		return "", nil, 0, false
	}
	name := string(line[:i])
	if j := skipBlank(line, i); j < len(line) && line[j] == '{' {
		i = j + 1
		for {
			i = skipBlank(line, i)
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			j := i
			for j < len(line) && isNameByte(line[j], j == i, false) {
				j++
			}
			if j == i {
				return "", nil, 0, false
			}
			k := string(line[i:j])
			i = skipBlank(line, j)
			if i >= len(line) || line[i] != '=' {
				return "", nil, 0, false
			}
			i = skipBlank(line, i+1)
			if i >= len(line) || line[i] != '"' {
				return "", nil, 0, false
			}
			var v []byte
			for i++; ; i++ {
				if i >= len(line) {
					return "", nil, 0, false
				}
				c := line[i]
				if c == '"' {
					break
				}
				if c == '\\' {
					i++
					if i >= len(line) {
						return "", nil, 0, false
					}
					switch line[i] {
					case '\\', '"':
						c = line[i]
					case 'n':
						c = '\n'
					default:
						return "", nil, 0, false
					}
				}
				v = append(v, c)
			}
			i++
			ps = append(ps, pair{k, string(v)})
			i = skipBlank(line, i)
			if i < len(line) && line[i] == ',' {
				i++
				continue
			}
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			return "", nil, 0, false
		}
	}
	start := skipBlank(line, i)
	if start == i || start >= len(line) {
		return "", nil, 0, false // no blank before the value, or no value
	}
	return name, ps, start, true
}

func skipBlank(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// isNameByte: [a-zA-Z_:][a-zA-Z0-9_:]* for metric names, without ':' for
// label names.
func isNameByte(c byte, first, metric bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case c == ':':
		return metric
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}
