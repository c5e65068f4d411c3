package rate

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reasons a cell's Value is null.
const (
	ReasonAbsent     = "absent"       // no label set of the series in this poll
	ReasonNoBaseline = "no_baseline"  // the key's first sample: nothing to diff against
	ReasonOrder      = "order"        // the poll is not later than the previous one
	ReasonReset      = "reset"        // the counter decreased, or _created / process start changed
	ReasonCeiling    = "ceiling"      // the window is longer than CeilingFactor × span
	ReasonFloor      = "floor"        // the window is shorter than MinWindow
	ReasonStale      = "stale"        // a sample's timing uncertainty is too large a part of the window
	ReasonJump       = "jump"         // held by the jump gate until another base confirms it
	ReasonEmpty      = "empty"        // no new observations (histogram) or no denominator events (ratio)
	ReasonBuckets    = "buckets"      // a histogram without a +Inf bucket and a finite one
	ReasonEdges      = "bucket_edges" // label sets with different bucket bounds: a seam no quantile crosses
	ReasonOverflow   = "overflow"     // the arithmetic left float64's range (a counter near 1e308): no number
)

// Severities of [KVSeverity].
const (
	SeverityOK   = "ok"
	SeverityWarn = "warn"
	SeverityFail = "fail"
)

// Num is a number that may be missing, as a value: a Cell holding two of
// them costs no allocation. Its JSON form is the number, or null when it is
// missing; with the omitzero option a missing Num is left out.
type Num struct {
	V     float64
	Valid bool
}

// Some returns the present number v.
func Some(v float64) Num { return Num{V: v, Valid: true} }

// IsZero reports whether n is missing (it makes omitzero leave it out).
func (n Num) IsZero() bool { return !n.Valid }

// Ptr returns a pointer to a copy of the number, or nil when it is missing.
func (n Num) Ptr() *float64 {
	if !n.Valid {
		return nil
	}
	v := n.V
	return &v
}

// String returns the number in %g form, or "null".
func (n Num) String() string {
	if !n.Valid {
		return "null"
	}
	return strconv.FormatFloat(n.V, 'g', -1, 64)
}

// MarshalJSON encodes the number, or null when it is missing.
func (n Num) MarshalJSON() ([]byte, error) {
	// JSON has no NaN or infinity: such a number is as good as missing.
	if !n.Valid || math.IsNaN(n.V) || math.IsInf(n.V, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, n.V, 'g', -1, 64), nil
}

// UnmarshalJSON decodes a number or null.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num{}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("rate: %q is not a number or null", b)
	}
	*n = Some(v)
	return nil
}

// Cell is one published number with its provenance. Value is null exactly
// when Reason is set.
type Cell struct {
	Value    Num      `json:"value"`              // always present: a number or null
	Source   string   `json:"source"`             // the series, computed:Δ<series>/Δt, or the formula
	Derived  bool     `json:"derived"`            // computed rather than read
	Window   Num      `json:"window,omitzero"`    // seconds the value was computed over
	Reason   string   `json:"reason,omitempty"`   // why Value is null; one of the Reason constants
	Severity string   `json:"severity,omitempty"` // a verdict where one is defined
	Notes    []string `json:"notes,omitempty"`    // about label sets: "<reason> <labels>"
	// Bucket is, for a quantile read from histogram buckets, the bucket it
	// fell in and its flags; absent otherwise.
	Bucket Bucket `json:"bucket,omitzero"`
}

// Hist is a histogram over the window of the poll just observed. Count is the
// number of new observations (a measured 0 when there were none); Mean and
// the quantiles are then null with reason empty.
type Hist struct {
	Count Cell `json:"count"`
	Mean  Cell `json:"mean"`
	P50   Cell `json:"p50"`
	P95   Cell `json:"p95"`
	P99   Cell `json:"p99"`
}

// KVSeverity classifies a KV-cache usage ratio (0..1) on a percent scale: ok
// below 75 %, warn from 75 %, fail from 90 %. It returns "" for NaN or an
// infinity: no number, no verdict.
func KVSeverity(ratio float64) string {
	// Not a number: no verdict.
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return ""
	}
	// 0.29*100 is 28.999999999999996: classify the percent rounded to 1e-9.
	pct := math.Round(ratio*100*1e9) / 1e9
	switch {
	case pct >= 90:
		return SeverityFail
	case pct >= 75:
		return SeverityWarn
	}
	return SeverityOK
}

// KVCell returns the cell of a KV-cache usage gauge read from series source:
// the ratio as read (not derived) with its KVSeverity. A missing ratio is
// null with reason absent and gets no verdict.
func KVCell(source string, ratio Num) Cell {
	c := Cell{Value: ratio, Source: source}
	// No number, no verdict.
	if sev := KVSeverity(ratio.V); ratio.Valid && sev != "" {
		c.Severity = sev
		return c
	}
	c.Value, c.Reason = Num{}, ReasonAbsent
	return c
}

// Labels returns the canonical form of a label set given as name, value
// pairs: sorted by name, values escaped as in the Prometheus text format,
// `{a="x",b="y"}`; "" for no pairs. It panics if pairs has odd length.
func Labels(pairs ...string) string {
	if len(pairs)%2 != 0 {
		panic("rate.Labels: odd number of arguments")
	}
	// No labels is the empty string, so an unlabelled series has one key.
	if len(pairs) == 0 {
		return ""
	}
	idx := make([]int, len(pairs)/2)
	for i := range idx {
		idx[i] = 2 * i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(pairs[a], pairs[b]) })
	var sb strings.Builder
	sb.WriteByte('{')
	for n, i := range idx {
		if n > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(pairs[i])
		sb.WriteString(`="`)
		sb.WriteString(labelEscaper.Replace(pairs[i+1]))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

// Long label values are clipped where a label set is written as text for
// a reader: a 100 KB model_name served by a broken or hostile engine would
// otherwise be copied into every note and incident that names its set.
const (
	clipSet   = 256 // a set this long or shorter is written whole
	clipValue = 64  // longer values are cut to clipKeep bytes and described
	clipKeep  = 40
)

// ClipLabels returns a canonical label set for display: values longer than
// 64 bytes keep their first 40 bytes, then "…" and the value's length and
// FNV-1a digest, so two long values that differ stay apart. A set of at
// most 256 bytes, or one that is not well formed, is returned as it is.
func ClipLabels(labels string) string {
	// Short sets are the rule: nothing to clip.
	if len(labels) <= clipSet {
		return labels
	}
	var pairs []string
	if !eachLabel(labels, func(name, value string) bool {
		if len(value) > clipValue {
			h := fnv.New32a()
			h.Write([]byte(value))
			cut := clipKeep
			for cut > 0 && !utf8.RuneStart(value[cut]) {
				cut--
			}
			value = fmt.Sprintf("%s…(%d bytes, fnv %08x)", value[:cut], len(value), h.Sum32())
		}
		pairs = append(pairs, name, value)
		return true
	}) {
		return labels
	}
	return Labels(pairs...)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// eachLabel calls fn with every name and unescaped value of a canonical label
// set until fn returns false. It reports whether the set was well formed.
func eachLabel(labels string, fn func(name, value string) bool) bool {
	// No labels is a well-formed empty set.
	if labels == "" {
		return true
	}
	if len(labels) < 2 || labels[0] != '{' || labels[len(labels)-1] != '}' {
		return false
	}
	s := labels[1 : len(labels)-1]
	for s != "" {
		eq := strings.Index(s, `="`)
		if eq <= 0 {
			return false
		}
		name := s[:eq]
		s = s[eq+2:]
		value, end := unescaped(s)
		if end < 0 {
			return false
		}
		if !fn(name, value) {
			return true
		}
		s = s[end+1:]
		if s == "" {
			break
		}
		if s[0] != ',' || len(s) == 1 {
			return false
		}
		s = s[1:]
	}
	return true
}

// unescaped returns the label value s starts with, unescaped, and the
// index of its closing quote in s (-1: none).
func unescaped(s string) (string, int) {
	// Nothing escaped before the closing quote: the set's own bytes.
	if q := strings.IndexAny(s, `"\`); q >= 0 && s[q] == '"' {
		return s[:q], q
	}
	var value strings.Builder
	escaped := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			if c == 'n' {
				c = '\n'
			}
			value.WriteByte(c)
			escaped = false
			continue
		case c == '\\':
			escaped = true
			continue
		case c == '"':
			return value.String(), i
		}
		value.WriteByte(c)
	}
	return "", -1
}

// labelValue returns the value of one label of a canonical label set.
func labelValue(labels, name string) (value string, ok bool) {
	eachLabel(labels, func(n, v string) bool {
		if n == name {
			value, ok = v, true
			return false
		}
		return true
	})
	return value, ok
}
