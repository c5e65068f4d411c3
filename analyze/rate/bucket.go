package rate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BucketFlags say how far a quantile read from histogram buckets can be
// trusted; a set of Flag* bits. The JSON form is a list of their words.
type BucketFlags uint8

// Flags of a bucket quantile.
const (
	// FlagPastEdge: the rank fell in the overflow above the highest finite
	// bound; the value is that bound, a lower bound of the quantile
	// (printed ">edge", never as the value).
	FlagPastEdge BucketFlags = 1 << iota
	// FlagFirst: the rank fell in the first bucket; the value is
	// interpolated from 0 and says only ≤ its bound (printed "≤edge").
	FlagFirst
	// FlagCoarse: the bucket spans a factor of CoarseFactor or more.
	FlagCoarse
	// FlagFew: fewer than FewObservations observations lie above the
	// quantile (n·(1−q) < FewObservations).
	FlagFew
)

// CoarseFactor is the ratio of a bucket's bounds (hi/lo) from which it is
// coarse: a quantile inside can be anywhere in a factor of 2.
const CoarseFactor = 2

// FewObservations is the count above a quantile below which it is few.
const FewObservations = 5

var flagWords = [...]struct {
	f BucketFlags
	w string
}{{FlagPastEdge, ">edge"}, {FlagFirst, "≤edge"}, {FlagCoarse, "coarse"}, {FlagFew, "few"}}

// Words are the flags' words, in a fixed order.
func (f BucketFlags) Words() []string {
	out := []string{}
	for _, x := range flagWords {
		if f&x.f != 0 {
			out = append(out, x.w)
		}
	}
	return out
}

// MarshalJSON encodes the flags as a list of their words.
func (f BucketFlags) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, w := range f.Words() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, w)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON decodes a list of flag words.
func (f *BucketFlags) UnmarshalJSON(b []byte) error {
	var ws []string
	if err := json.Unmarshal(b, &ws); err != nil {
		return fmt.Errorf("rate: bucket flags: %w", err)
	}
	*f = 0
	for _, w := range ws {
		i := -1
		for k, x := range flagWords {
			if x.w == w {
				i = k
			}
		}
		if i < 0 {
			return fmt.Errorf("rate: %q is not a bucket flag", w)
		}
		*f |= flagWords[i].f
	}
	return nil
}

// Bucket is the histogram bucket (Lo, Hi] a quantile fell in, and its flags.
// Hi is null for the overflow above the highest finite bound; Lo is null
// below a first bound ≤ 0 (nothing bounds it), else 0 for the first bucket
// (histogram_quantile's assumption). The zero Bucket is no bucket.
type Bucket struct {
	Lo    Num         `json:"lo"`
	Hi    Num         `json:"hi"`
	Flags BucketFlags `json:"flags"`
}

// IsZero reports whether b is no bucket (omitzero leaves it out).
func (b Bucket) IsZero() bool { return !b.Lo.Valid && !b.Hi.Valid && b.Flags == 0 }

// Same reports whether a and b are one bucket: the same bounds.
func (b Bucket) Same(o Bucket) bool {
	return !b.IsZero() && b.Lo == o.Lo && b.Hi == o.Hi
}

// Contains reports whether v lies in (Lo, Hi]; a null bound is unbounded.
func (b Bucket) Contains(v float64) bool {
	return !b.IsZero() && (!b.Lo.Valid || v > b.Lo.V) && (!b.Hi.Valid || v <= b.Hi.V)
}

// Interval is the bucket as "(a, b]", each bound formatted by f.
func (b Bucket) Interval(f func(float64) string) string {
	lo, hi := "-Inf", "+Inf"
	if b.Lo.Valid {
		lo = f(b.Lo.V)
	}
	if b.Hi.Valid {
		hi = f(b.Hi.V)
	}
	return "(" + lo + ", " + hi + "]"
}

// Text is a quantile v of bucket b as a reader should see it, formatted by
// f: ">edge" past the highest finite bound, "≤edge" in the first bucket,
// else the interpolated value; then the other flags in brackets
// ("17.8 ms [coarse, few]"). A quantile without a bucket is f(v).
func (b Bucket) Text(v float64, f func(float64) string) string {
	var s string
	switch {
	case b.Flags&FlagPastEdge != 0 && b.Lo.Valid:
		s = ">" + f(b.Lo.V)
	case b.Flags&FlagFirst != 0 && b.Hi.Valid:
		s = "≤" + f(b.Hi.V)
	default:
		s = f(v)
	}
	if rest := (b.Flags &^ (FlagPastEdge | FlagFirst)).Words(); len(rest) > 0 {
		s += " [" + strings.Join(rest, ", ") + "]"
	}
	return s
}

// BucketQuantile is Prometheus' histogram_quantile of cumulative counts n at
// rising bounds les, the last +Inf, with at least one observation: linear
// interpolation within the bucket the rank falls in (0 as the lower bound of
// a first bucket with a positive bound), and that bucket with its flags.
// Past the highest finite bound the value is that bound (FlagPastEdge).
func BucketQuantile(q float64, les, n []float64) (float64, Bucket) {
	var b Bucket
	v, _ := bucketQuantileFrom(q, les, n, 0, &b)
	return v, b
}

// bucketQuantileFrom is BucketQuantile whose search for the rank's bucket
// starts at bucket k0, every count below which is under the rank: a
// caller taking rising quantiles of one histogram passes the bucket the
// last one fell in (HistogramCells). It writes the bucket into *b, field
// by field (a Bucket returned was built on the stack and read back in
// wider loads than it was stored with: a stalled copy), and returns the
// value and the bucket's index.
func bucketQuantileFrom(q float64, les, n []float64, k0 int, b *Bucket) (float64, int) {
	last := len(n) - 1
	total := n[last]
	rank := q * total
	k := k0
	for k < last && n[k] < rank {
		k++
	}
	var fl BucketFlags
	if total*(1-q) < FewObservations {
		fl |= FlagFew
	}
	// Past every finite bound: the last one is all that can be said.
	if k == last {
		lo := les[last-1]
		b.Lo, b.Hi, b.Flags = Some(lo), Num{}, fl|FlagPastEdge
		return lo, k
	}
	// A first bucket with a bound ≤ 0 has no lower bound to interpolate from.
	if k == 0 && les[0] <= 0 {
		b.Lo, b.Hi, b.Flags = Num{}, Some(les[0]), fl|FlagFirst
		return les[0], k
	}
	lo, c, r := 0.0, n[k], rank
	if k > 0 {
		lo, c, r = les[k-1], c-n[k-1], rank-n[k-1]
	} else {
		fl |= FlagFirst
	}
	if k > 0 && lo > 0 && les[k] >= CoarseFactor*lo {
		fl |= FlagCoarse
	}
	v := lo + (les[k]-lo)*(r/c)
	// An empty bucket holding the rank exactly (c = 0) sits at its bound.
	if c == 0 || math.IsNaN(v) {
		v = les[k]
	}
	b.Lo, b.Hi, b.Flags = Some(lo), Some(les[k]), fl
	return v, k
}
