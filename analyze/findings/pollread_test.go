package findings

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// TestPollListRead checks that Read gives each field bit for bit as Get
// decodes it, for fields asked in any order and together.
func TestPollListRead(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var l PollList
	for i := range 2*pollChunk + 5 {
		p := randomPoll(r, 1000+float64(i)*0.5, 1)
		l.Append(&p)
	}
	fields := []Field{FieldDeferred, FieldRate(0), FieldInterval, FieldRunning, FieldWaiting, FieldKV, FieldCapacity,
		FieldTokensTotal, FieldSteps, FieldRate(NRates - 1), FieldRate(Decode), FieldTotal(0), FieldTotal(NRates - 1)}
	got := make([]rate.Num, len(fields))
	var p Poll
	for i := range l.Len() {
		l.Get(i, &p)
		want := []rate.Num{p.Deferred, p.Rates[0].V, p.Interval.V, p.Running, p.Waiting, p.KV, p.Capacity,
			p.TokensTotal, p.Steps, p.Rates[NRates-1].V, p.Rates[Decode].V, p.Totals[0], p.Totals[NRates-1]}
		l.Read(i, fields, got)
		for j := range fields {
			if got[j].Valid != want[j].Valid || math.Float64bits(got[j].V) != math.Float64bits(want[j].V) {
				t.Fatalf("poll %d field %d: Read %+v, Get %+v", i, fields[j], got[j], want[j])
			}
		}
	}
}
