// Package expo turns one Prometheus text-exposition body into flat samples.
//
// It is the single parsing path of llmrec: the recorder calls it on every
// scrape, and recovery calls it again on journalled bodies, so a capture's
// samples are always a pure function of its bytes. A body that does not parse
// yields no samples and an error that says why; the caller keeps the body.
package expo

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one line of an exposition, flattened: histogram buckets, sums and
// counts and summary quantiles become samples of their own, named as they are
// on the wire (foo_bucket, foo_sum, foo_count).
//
// The struct tags are the Parquet columns of a capture's samples (see
// docs/capture-format.md); the capture writer compresses them.
type Sample struct {
	Family string  `parquet:"family,dict"` // metric family name as declared by TYPE (or the sample name when untyped)
	Type   string  `parquet:"type,dict"`   // counter, gauge, histogram, summary, gaugehistogram or untyped
	Help   string  `parquet:"help,dict"`
	Name   string  `parquet:"name,dict"`   // the sample's own name
	Labels string  `parquet:"labels,dict"` // label set as a JSON object with sorted keys, "{}" when empty
	Value  float64 `parquet:"value,split"`
	// TimestampMs is the explicit exposition timestamp in milliseconds, or nil.
	TimestampMs *int64 `parquet:"timestamp_ms,optional"`
}

// ErrNotExposition is returned for bodies that are clearly another format.
var ErrNotExposition = errors.New("not Prometheus text exposition")

// Parse parses body as Prometheus text exposition format 0.0.4. contentType
// is the response's Content-Type and only used to name a wrong format. Any
// parse error is a failed parse: the result is then nil, because expfmt's
// partial result can hold a bogus family.
func Parse(body []byte, contentType string) ([]Sample, error) {
	return (*Interner)(nil).Parse(body, contentType)
}

// Interner carries what one target's pages share from one scrape to the
// next: their strings (names, help texts, label sets), which the next page
// reuses instead of allocating each anew, and the series of the last page
// that parsed. Reused strings are the same memory from one scrape to the
// next, so later comparisons (a page's series against the last page's, the
// writer's dictionaries) settle in one step. It is not safe for concurrent
// use: one per target endpoint. The zero value is ready; a nil *Interner
// interns nothing.
type Interner struct {
	// Shapes, when set, are the page shapes shared with other targets'
	// Interners (see shapes.go): a page this Interner has no map for is
	// read against them before it is parsed in full.
	Shapes *Shapes

	m    map[string]string
	last []Sample // the last page's samples; read, never written

	// The last page and the map of its values (see reuse.go); at is empty
	// when the next page is parsed in full. spare is at's other buffer.
	prev      []byte
	at, spare []valueAt
	reused    int // pages parsed by their values alone (for the tests)
	shaped    int // of them, read against a shared shape (for the tests)
}

// maxInterned bounds an Interner: a target whose label values never repeat
// (a request id in a label) would otherwise grow it without end. Past it,
// the table starts again empty. A variable for the tests.
var maxInterned = 1 << 16

// Parse is the package's Parse, with the samples' strings taken from in.
func (in *Interner) Parse(body []byte, contentType string) ([]Sample, error) {
	if err := sniff(body, contentType); err != nil {
		return nil, err
	}
	if in != nil && len(in.at) > 0 {
		if out, ok := in.reuse(body); ok {
			in.last = out
			in.reused++
			return out, nil
		}
	}
	if in != nil && in.Shapes != nil {
		if out, ok := in.reuseShape(body); ok {
			in.last = out
			in.reused++
			in.shaped++
			return out, nil
		}
	}
	out, err := in.parseFull(body)
	if in == nil {
		return out, err
	}
	if err != nil {
		in.forget()
		return nil, err
	}
	// A target's first page, and a page with the series of the page
	// before, are mapped: a page that keeps its shape is read by its
	// values next time; one whose series change at every page is not
	// mapped again and again.
	if first := in.last == nil; first || in.sameSeries(out) {
		in.remember(body, out)
		// A first page no kept shape fits (they were tried) is kept for
		// the other targets' first pages; a target whose page changes its
		// bytes at every scrape does not churn them.
		if first {
			in.Shapes.keep(in.prev, in.at, out)
		}
	} else {
		in.forget()
	}
	in.last = out
	return out, nil
}

// parseFull parses body with expfmt and flattens its families.
func (in *Interner) parseFull(body []byte) ([]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	var r io.Reader = bytes.NewReader(body)
	// A last line without its newline is complete; expfmt alone calls it an
	// unexpected end of input.
	if len(body) > 0 && body[len(body)-1] != '\n' {
		r = io.MultiReader(r, strings.NewReader("\n"))
	}
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse exposition: %w", err)
	}
	names := make([]string, 0, len(fams))
	n := 0
	for name, f := range fams {
		names = append(names, name)
		n += countSamples(f)
	}
	slices.Sort(names)
	fl := flattener{out: make([]Sample, 0, n), in: in}
	for _, name := range names {
		fl.family(fams[name])
	}
	out := fl.out
	// The series of the last page that parsed, in the same order, hold no
	// duplicate.
	if !in.sameSeries(out) {
		if dup := firstDuplicate(out); dup != "" {
			return nil, fmt.Errorf("parse exposition: duplicate series %s", dup)
		}
	}
	return out, nil
}

// sameSeries reports whether ss are the series of the last page, in order.
func (in *Interner) sameSeries(ss []Sample) bool {
	if in == nil || len(ss) != len(in.last) {
		return false
	}
	for i := range ss {
		// Interned, equal strings are one pointer: no byte is read.
		if ss[i].Name != in.last[i].Name || ss[i].Labels != in.last[i].Labels {
			return false
		}
	}
	return true
}

// sniff names a body that is JSON or HTML instead of exposition text, so the
// error says what the target served rather than a line-1 syntax error.
func sniff(body []byte, contentType string) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	switch {
	case mt == "application/json" || (len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')):
		return fmt.Errorf("%w: body is JSON (content-type %q)", ErrNotExposition, contentType)
	case mt == "text/html" || bytes.HasPrefix(bytes.ToLower(trimmed[:min(len(trimmed), 15)]), []byte("<!doctype html")) ||
		bytes.HasPrefix(bytes.ToLower(trimmed[:min(len(trimmed), 5)]), []byte("<html")):
		return fmt.Errorf("%w: body is HTML (content-type %q)", ErrNotExposition, contentType)
	case !utf8.Valid(body):
		return fmt.Errorf("%w: body is not valid UTF-8", ErrNotExposition)
	}
	return nil
}

// countSamples is the number of samples flattener.family makes of f.
func countSamples(f *dto.MetricFamily) int {
	n := 0
	for _, m := range f.GetMetric() {
		switch f.GetType() {
		case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			n++
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			n += len(s.GetQuantile()) + btoi(s.SampleSum != nil) + btoi(s.SampleCount != nil)
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			n += len(h.GetBucket()) + btoi(h.SampleSum != nil) + btoi(h.SampleCountFloat != nil || h.SampleCount != nil)
		}
	}
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// typeNames are the Type column's values: dto's type names in lower case.
var typeNames = func() map[dto.MetricType]string {
	m := make(map[dto.MetricType]string, len(dto.MetricType_name))
	for v, n := range dto.MetricType_name {
		m[dto.MetricType(v)] = strings.ToLower(n)
	}
	return m
}()

func typeName(t dto.MetricType) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return strings.ToLower(t.String())
}

// flattener turns metric families into samples. A page is mostly histogram
// buckets, whose label sets differ from their metric's only by le, so it
// encodes a metric's labels once and splices each le value in, and it
// reuses its scratch space from one label set to the next: one allocation
// per label set, the string itself.
type flattener struct {
	out []Sample
	in  *Interner

	// Of the current metric:
	orig   []*dto.LabelPair
	base   []pair // orig sorted by name
	plain  string // base as JSON, "" until asked for
	extra  string // the label spliced in by withLabel ("le", "quantile")
	at     int    // where extra goes in base; -1: base has duplicate names or extra already
	prefix []byte // JSON of base[:at], from '{', with a trailing comma if any
	suffix []byte // JSON of base[at:], with a leading comma if any, to '}'
	buf    []byte
}

func (fl *flattener) family(f *dto.MetricFamily) {
	fam := fl.in.string(f.GetName())
	typ := typeName(f.GetType())
	help := fl.in.string(f.GetHelp())
	var bucket, sum, count string
	switch f.GetType() {
	case dto.MetricType_SUMMARY:
		sum, count = fl.suffixed(fam, "_sum"), fl.suffixed(fam, "_count")
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		bucket, sum, count = fl.suffixed(fam, "_bucket"), fl.suffixed(fam, "_sum"), fl.suffixed(fam, "_count")
	}
	for _, m := range f.GetMetric() {
		fl.setMetric(m.GetLabel())
		ts := timestamp(m)
		add := func(name string, labels string, v float64) {
			fl.out = append(fl.out, Sample{Family: fam, Type: typ, Help: help, Name: name, Labels: labels, Value: v, TimestampMs: ts})
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			add(fam, fl.labels(), m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(fam, fl.labels(), m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			add(fam, fl.labels(), m.GetUntyped().GetValue())
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				add(fam, fl.withLabel("quantile", q.GetQuantile()), q.GetValue())
			}
			// A _sum or _count line the body did not carry is absent, not 0.
			if s.SampleSum != nil {
				add(sum, fl.labels(), s.GetSampleSum())
			}
			if s.SampleCount != nil {
				add(count, fl.labels(), float64(s.GetSampleCount()))
			}
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				v := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					v = b.GetCumulativeCountFloat()
				}
				add(bucket, fl.withLabel("le", b.GetUpperBound()), v)
			}
			if h.SampleSum != nil {
				add(sum, fl.labels(), h.GetSampleSum())
			}
			switch {
			case h.SampleCountFloat != nil:
				add(count, fl.labels(), h.GetSampleCountFloat())
			case h.SampleCount != nil:
				add(count, fl.labels(), float64(h.GetSampleCount()))
			}
		}
	}
}

func (fl *flattener) setMetric(ls []*dto.LabelPair) {
	fl.orig = ls
	fl.base = fl.base[:0]
	for _, l := range ls {
		fl.base = append(fl.base, pair{l.GetName(), l.GetValue()})
	}
	if !slices.IsSortedFunc(fl.base, comparePairs) {
		slices.SortFunc(fl.base, comparePairs)
	}
	fl.plain, fl.extra = "", ""
}

// labels is the metric's own label set as JSON.
func (fl *flattener) labels() string {
	if fl.plain == "" {
		if len(fl.base) == 0 {
			return "{}"
		}
		fl.buf = appendLabels(fl.buf[:0], fl.base)
		fl.plain = fl.in.bytes(fl.buf)
	}
	return fl.plain
}

// withLabel is the metric's label set plus k="v" as JSON, v formatted as
// formatFloat does.
func (fl *flattener) withLabel(k string, v float64) string {
	if k != fl.extra {
		fl.splitAt(k)
	}
	if fl.at < 0 {
		// Not seen from expfmt: the general path.
		return encodeLabels(with(labelPairs(fl.orig), k, formatFloat(v)))
	}
	b := append(fl.buf[:0], fl.prefix...)
	b = appendJSONString(b, k)
	b = append(b, ':', '"')
	b = appendFloat(b, v) // digits, '.', 'e', '+', '-', Inf, NaN: nothing to escape
	b = append(b, '"')
	b = append(b, fl.suffix...)
	fl.buf = b
	return fl.in.bytes(b)
}

// suffixed is name+suffix.
func (fl *flattener) suffixed(name, suffix string) string {
	fl.buf = append(append(fl.buf[:0], name...), suffix...)
	return fl.in.bytes(fl.buf)
}

// bytes is b as a string: the table's, when it has one.
func (in *Interner) bytes(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok { // looked up in place: no allocation
		return s
	}
	return in.add(string(b))
}

// string is s, or the table's equal string.
func (in *Interner) string(s string) string {
	if in == nil {
		return s
	}
	if t, ok := in.m[s]; ok {
		return t
	}
	// s is expfmt's: a clone, so the table keeps none of its page alive.
	return in.add(strings.Clone(s))
}

func (in *Interner) add(s string) string {
	if in.m == nil || len(in.m) >= maxInterned {
		in.m = make(map[string]string, 1024)
	}
	in.m[s] = s
	return s
}

// splitAt finds where k goes in the sorted base and encodes the JSON on
// either side of it.
func (fl *flattener) splitAt(k string) {
	fl.extra = k
	fl.at = -1
	for i := 1; i < len(fl.base); i++ {
		if fl.base[i-1].k == fl.base[i].k {
			return
		}
	}
	at, found := slices.BinarySearchFunc(fl.base, k, func(p pair, k string) int { return strings.Compare(p.k, k) })
	if found {
		return
	}
	fl.at = at
	fl.prefix = append(fl.prefix[:0], '{')
	for _, p := range fl.base[:at] {
		fl.prefix = appendPair(fl.prefix, p)
		fl.prefix = append(fl.prefix, ',')
	}
	fl.suffix = fl.suffix[:0]
	for _, p := range fl.base[at:] {
		fl.suffix = append(fl.suffix, ',')
		fl.suffix = appendPair(fl.suffix, p)
	}
	fl.suffix = append(fl.suffix, '}')
}

func timestamp(m *dto.Metric) *int64 {
	if m.TimestampMs == nil {
		return nil
	}
	v := m.GetTimestampMs()
	return &v
}

type pair struct{ k, v string }

func labelPairs(ls []*dto.LabelPair) []pair {
	out := make([]pair, len(ls))
	for i, l := range ls {
		out[i] = pair{l.GetName(), l.GetValue()}
	}
	return out
}

func with(base []pair, k, v string) []pair {
	out := make([]pair, len(base), len(base)+1)
	copy(out, base)
	return append(out, pair{k, v})
}

// formatFloat renders le and quantile values the way Prometheus does, so
// "0.1", "+Inf" and "1e-05" read as they would in a PromQL result.
func formatFloat(f float64) string { return string(appendFloat(nil, f)) }

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// EncodeLabels renders a label set as a JSON object with sorted keys; the
// empty set is "{}". The encoding is canonical: equal sets give equal strings.
func EncodeLabels(m map[string]string) string {
	ps := make([]pair, 0, len(m))
	for k, v := range m {
		ps = append(ps, pair{k, v})
	}
	return encodeLabels(ps)
}

func encodeLabels(ps []pair) string {
	if len(ps) == 0 {
		return "{}"
	}
	if !slices.IsSortedFunc(ps, comparePairs) {
		slices.SortFunc(ps, comparePairs)
	}
	n := 2
	for _, p := range ps {
		n += len(p.k) + len(p.v) + 6
	}
	return string(appendLabels(make([]byte, 0, n), ps))
}

// appendLabels appends ps, sorted, as a JSON object.
func appendLabels(b []byte, ps []pair) []byte {
	if len(ps) == 0 {
		return append(b, "{}"...)
	}
	b = append(b, '{')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPair(b, p)
	}
	return append(b, '}')
}

func appendPair(b []byte, p pair) []byte {
	b = appendJSONString(b, p.k)
	b = append(b, ':')
	return appendJSONString(b, p.v)
}

func comparePairs(a, b pair) int { return strings.Compare(a.k, b.k) }

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. s is valid UTF-8 (the parser
// validated it); <, > and & are escaped so the text is inert inside HTML.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// DecodeLabels parses the JSON object written by EncodeLabels.
func DecodeLabels(s string) (map[string]string, error) {
	m := map[string]string{}
	if s == "{}" || s == "" {
		return m, nil
	}
	// The common object: what encoding/json makes of it, without it.
	if plainLabels(s, m) {
		return m, nil
	}
	clear(m)
	if err := jsonUnmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode labels %q: %w", s, err)
	}
	return m, nil
}

// plainLabels puts the pairs of s into m when s is plain (EachPlainLabel),
// and says whether it was: then m is what encoding/json decodes (a
// repeated name keeps its last value). Anything else is encoding/json's
// to decode (m may hold some pairs).
func plainLabels(s string, m map[string]string) bool {
	return EachPlainLabel(s, func(k, v string) bool { m[k] = v; return true })
}

// PlainLabel returns label name's value in labels, an object
// EncodeLabels writes, as DecodeLabels maps it (the last of repeated
// keys), and whether the object holds it, without decoding the object.
// plain is false, and the caller must decode (DecodeLabels), unless the
// object is plain (EachPlainLabel): a series' labels are, and a decode is
// dear.
func PlainLabel(labels, name string) (value string, found, plain bool) {
	// No labels: an empty set.
	if labels == "" || labels == "{}" {
		return "", false, true
	}
	plain = EachPlainLabel(labels, func(k, v string) bool {
		if k == name {
			value, found = v, true
		}
		return true
	})
	if !plain {
		return "", false, false
	}
	return value, found, true
}

// Label returns label name's value in labels, an object EncodeLabels
// writes, as DecodeLabels maps it, and whether the object holds it: read
// by a scan when the object is plain (PlainLabel), else decoded whole.
func Label(labels, name string) (value string, found bool, err error) {
	if v, found, plain := PlainLabel(labels, name); plain {
		return v, found, nil
	}
	m, err := DecodeLabels(labels)
	if err != nil {
		return "", false, err
	}
	value, found = m[name]
	return value, found, nil
}

// EachPlainLabel calls fn with each pair of s, in order, when s is a
// non-empty object of strings of printable ASCII without escapes and
// without whitespace ({"a":"x","b":"y"}, most label sets, whose strings
// are their text as written), and says whether it was; fn returning false
// stops the walk, and then it says false too. On false fn may have been
// called for some pairs.
func EachPlainLabel(s string, fn func(k, v string) bool) bool {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return false
	}
	s = s[1 : len(s)-1]
	for {
		k, rest, ok := plainString(s)
		if !ok || rest == "" || rest[0] != ':' {
			return false
		}
		v, rest, ok := plainString(rest[1:])
		if !ok {
			return false
		}
		if !fn(k, v) {
			return false
		}
		if rest == "" {
			return true
		}
		if rest[0] != ',' {
			return false
		}
		s = rest[1:]
	}
}

// plainString is the JSON string at the start of s when it holds only
// printable ASCII other than a backslash; it returns the rest of s.
func plainString(s string) (str, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return "", s, false
		}
	}
	return "", s, false
}

// firstDuplicate names the first sample that repeats the name and labels of
// an earlier one, or returns "". Pages have none: their hashes, sorted,
// show it without a map; only hashes that collide call for comparing
// strings.
func firstDuplicate(ss []Sample) string {
	hs := make([]uint64, len(ss))
	for i := range ss {
		hs[i] = maphash.String(dupSeed, ss[i].Name)*31 ^ maphash.String(dupSeed, ss[i].Labels)
	}
	slices.Sort(hs)
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			return firstDuplicateExact(ss)
		}
	}
	return ""
}

var dupSeed = maphash.MakeSeed()

func firstDuplicateExact(ss []Sample) string {
	seen := make(map[[2]string]struct{}, len(ss))
	for _, s := range ss {
		k := [2]string{s.Name, s.Labels}
		if _, ok := seen[k]; ok {
			return s.Name + s.Labels
		}
		seen[k] = struct{}{}
	}
	return ""
}
