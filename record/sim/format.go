package sim

import (
	"math"
	"strconv"
	"strings"
)

// appendPy appends v the way prometheus_client (Python) prints a sample
// value or an le bound: Python's repr of the float ("246.0", "0.0001",
// "1e-05"), except that positive values with more than six digits before the
// point switch to an exponent the Go way ("1.7710424574207425e+09",
// "1.372014592e+010").
func appendPy(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == 0:
		if math.Signbit(v) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	// Fast path: integers below a million print as "123.0".
	if v == math.Trunc(v) && v < 1e6 && v > -1e6 {
		b = strconv.AppendInt(b, int64(v), 10)
		return append(b, ".0"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], v, 'e', -1, 64) // [-]d[.ddd]e±XX, shortest digits
	neg := e[0] == '-'
	m := e
	if neg {
		m = e[1:]
	}
	k := 0
	for m[k] != 'e' {
		k++
	}
	exp := 0
	for _, c := range m[k+2:] {
		exp = exp*10 + int(c-'0')
	}
	if m[k+1] == '-' {
		exp = -exp
	}
	decpt := exp + 1 // digits before the decimal point in fixed notation
	if decpt <= -4 || decpt > 16 {
		// Python's repr uses exponent notation here, spelled like Go's.
		return append(b, e...)
	}
	if !neg && decpt > 6 {
		// prometheus_client's floatToGoString.
		b = append(b, m[0])
		if k > 1 {
			b = append(b, m[1:k]...) // ".ddd"
		}
		b = append(b, "e+0"...)
		return strconv.AppendInt(b, int64(decpt-1), 10)
	}
	start := len(b)
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

// appendG6 appends v like a C++ ostream with the default precision of 6,
// which is how llama.cpp prints its floating-point metrics.
func appendG6(b []byte, v float64) []byte {
	if math.IsNaN(v) {
		return append(b, "nan"...)
	}
	if math.IsInf(v, 0) {
		if v > 0 {
			return append(b, "inf"...)
		}
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', 6, 64)
}

// escapeLabel escapes a label value for the text format.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return r.Replace(s)
}

// fmtKind selects how a template slot prints its value.
type fmtKind uint8

const (
	fmtPy  fmtKind = iota // Python float (vLLM)
	fmtInt                // integer (llama.cpp counters)
	fmtG6                 // six significant digits (llama.cpp floats)
)

// slot is one value in a template: the static text before it ends at end,
// and the value is vals[idx] + add of the label set set (-1: the process).
type slot struct {
	end  int32
	kind fmtKind
	set  int8
	idx  int16
	add  float64
}

// template is an exposition body with holes: static text and value slots.
// Built once per engine and label-set count, it renders by copying the
// static runs and formatting the values in between.
type template struct {
	static []byte
	slots  []slot
}

// tmplBuilder accumulates a template.
type tmplBuilder struct{ t template }

func (b *tmplBuilder) text(parts ...string) {
	for _, p := range parts {
		b.t.static = append(b.t.static, p...)
	}
}

func (b *tmplBuilder) value(kind fmtKind, set, idx int, add float64) {
	b.t.slots = append(b.t.slots, slot{end: int32(len(b.t.static)), kind: kind, set: int8(set), idx: int16(idx), add: add})
}

// render appends the body to dst with the values of st.
func (t *template) render(dst []byte, st *renderState) []byte {
	prev := int32(0)
	for i := range t.slots {
		s := &t.slots[i]
		dst = append(dst, t.static[prev:s.end]...)
		prev = s.end
		var v float64
		if s.set < 0 {
			v = st.agg[s.idx]
		} else {
			v = st.sets[s.set].v[s.idx]
		}
		v += s.add
		switch s.kind {
		case fmtPy:
			dst = appendPy(dst, v)
		case fmtInt:
			dst = strconv.AppendInt(dst, int64(math.Floor(v)), 10)
		default:
			dst = appendG6(dst, v)
		}
	}
	return append(dst, t.static[prev:]...)
}
