package findings

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/llmrec/llmrec/analyze/rate"
)

// A Field is one number of a poll as PollList.Read reads it: its index in
// a record (numsOf's order).
type Field uint8

// The poll's gauges as fields.
const (
	FieldRunning Field = 3*NRates + 2 + iota
	FieldWaiting
	FieldKV
	FieldTokensTotal
	FieldCapacity
	FieldDeferred
)

// FieldSteps is the poll's Steps.
const FieldSteps Field = 3*NRates + 2 + 9

// FieldInterval is the poll's Interval.V.
const FieldInterval Field = 2 * NRates

// FieldRate is the poll's Rates[k].V.
func FieldRate(k int) Field { return Field(k) }

// FieldTotal is the poll's Totals[k].
func FieldTotal(k int) Field { return Field(2*NRates + 2 + k) }

// Read sets dst[j] to poll i's number fs[j] (as Get would set it), the
// record's head read once for all of them; dst holds at least len(fs).
func (l *PollList) Read(i int, fs []Field, dst []rate.Num) {
	valid, same, stored, b := l.head(i)
	base := l.bases[i/pollChunk]
	for j, f := range fs {
		x := rate.Num{Valid: valid&(1<<f) != 0}
		switch {
		case same&(1<<f) != 0:
			x.V = base[f].V
		case stored&(1<<f) != 0:
			k := bits.OnesCount32(stored & (1<<f - 1))
			x.V = math.Float64frombits(binary.LittleEndian.Uint64(b[8*k:]))
		}
		dst[j] = x
	}
}
