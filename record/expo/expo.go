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
// docs/capture-format.md).
type Sample struct {
	Family string  `parquet:"family,dict,zstd"` // metric family name as declared by TYPE (or the sample name when untyped)
	Type   string  `parquet:"type,dict,zstd"`   // counter, gauge, histogram, summary, gaugehistogram or untyped
	Help   string  `parquet:"help,dict,zstd"`
	Name   string  `parquet:"name,dict,zstd"`   // the sample's own name
	Labels string  `parquet:"labels,dict,zstd"` // label set as a JSON object with sorted keys, "{}" when empty
	Value  float64 `parquet:"value,split,zstd"`
	// TimestampMs is the explicit exposition timestamp in milliseconds, or nil.
	TimestampMs *int64 `parquet:"timestamp_ms,optional,zstd"`
}

// ErrNotExposition is returned for bodies that are clearly another format.
var ErrNotExposition = errors.New("not Prometheus text exposition")

// Parse parses body as Prometheus text exposition format 0.0.4. contentType
// is the response's Content-Type and only used to name a wrong format. Any
// parse error is a failed parse: the result is then nil, because expfmt's
// partial result can hold a bogus family.
func Parse(body []byte, contentType string) ([]Sample, error) {
	if err := sniff(body, contentType); err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	var in io.Reader = bytes.NewReader(body)
	// A last line without its newline is complete; expfmt alone calls it an
	// unexpected end of input.
	if len(body) > 0 && body[len(body)-1] != '\n' {
		in = io.MultiReader(in, strings.NewReader("\n"))
	}
	fams, err := p.TextToMetricFamilies(in)
	if err != nil {
		return nil, fmt.Errorf("parse exposition: %w", err)
	}
	names := make([]string, 0, len(fams))
	n := 0
	for name, f := range fams {
		names = append(names, name)
		n += len(f.GetMetric())
	}
	slices.Sort(names)
	out := make([]Sample, 0, n*2)
	for _, name := range names {
		out = appendFamily(out, fams[name])
	}
	if dup := firstDuplicate(out); dup != "" {
		return nil, fmt.Errorf("parse exposition: duplicate series %s", dup)
	}
	return out, nil
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

func appendFamily(out []Sample, f *dto.MetricFamily) []Sample {
	fam := f.GetName()
	typ := strings.ToLower(f.GetType().String())
	help := f.GetHelp()
	for _, m := range f.GetMetric() {
		base := labelPairs(m.GetLabel())
		ts := timestamp(m)
		add := func(name string, labels string, v float64) {
			out = append(out, Sample{Family: fam, Type: typ, Help: help, Name: name, Labels: labels, Value: v, TimestampMs: ts})
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			add(fam, encodeLabels(base), m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(fam, encodeLabels(base), m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			add(fam, encodeLabels(base), m.GetUntyped().GetValue())
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				add(fam, encodeLabels(with(base, "quantile", formatFloat(q.GetQuantile()))), q.GetValue())
			}
			// A _sum or _count line the body did not carry is absent, not 0.
			if s.SampleSum != nil {
				add(fam+"_sum", encodeLabels(base), s.GetSampleSum())
			}
			if s.SampleCount != nil {
				add(fam+"_count", encodeLabels(base), float64(s.GetSampleCount()))
			}
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				v := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					v = b.GetCumulativeCountFloat()
				}
				add(fam+"_bucket", encodeLabels(with(base, "le", formatFloat(b.GetUpperBound()))), v)
			}
			if h.SampleSum != nil {
				add(fam+"_sum", encodeLabels(base), h.GetSampleSum())
			}
			switch {
			case h.SampleCountFloat != nil:
				add(fam+"_count", encodeLabels(base), h.GetSampleCountFloat())
			case h.SampleCount != nil:
				add(fam+"_count", encodeLabels(base), float64(h.GetSampleCount()))
			}
		}
	}
	return out
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
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
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
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, p.k)
		b = append(b, ':')
		b = appendJSONString(b, p.v)
	}
	b = append(b, '}')
	return string(b)
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
	if err := jsonUnmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode labels %q: %w", s, err)
	}
	return m, nil
}

func firstDuplicate(ss []Sample) string {
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
