package findings

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	"github.com/llmrec/llmrec/analyze/rate"
)

// randomPoll is a poll whose every field is set or left at random: null
// numbers with and without bits, NaN payloads, reasons, notes.
func randomPoll(r *rand.Rand, t float64, nspans int) Poll {
	num := func() rate.Num {
		switch r.IntN(5) {
		case 0:
			return rate.Num{}
		case 1:
			return rate.Num{V: r.Float64()} // null with a value left in it
		case 2:
			return rate.Some(math.Float64frombits(0x7ff8000000000001 + r.Uint64N(1000))) // NaN payloads
		}
		return rate.Some(r.NormFloat64() * 1e6)
	}
	reasons := []string{"", "", rate.ReasonJump, rate.ReasonNoBaseline, rate.ReasonReset, "stale"}
	val := func() Value { return Value{V: num(), Window: num(), Reason: reasons[r.IntN(len(reasons))]} }
	p := Poll{T: t, Start: t - r.Float64(), Row: r.IntN(1 << 20), Interval: val(),
		Running: num(), Waiting: num(), KV: num(), TokensTotal: num(), Capacity: num(), Deferred: num(),
		KVCapacity: num(), PrefixCaching: num(), ProcessStart: num(), Steps: num(), Energy: num(), Power: num()}
	for k := range NRates {
		p.Rates[k], p.Totals[k] = val(), num()
	}
	if r.IntN(10) == 0 {
		p.Restart = "counter fell"
		p.Row = -1
	}
	if r.IntN(10) == 0 {
		p.DecodeNotes = []string{"no_baseline {a}", "absent {b}"}
	}
	for range nspans {
		p.Spans = append(p.Spans, num())
	}
	return p
}

// TestPollListRoundTrip checks that every field of every poll reads back
// as it was added, bit for bit, and that Tail and Search agree with the
// polls as a slice.
func TestPollListRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []Poll
	var l PollList
	for i := range 3*pollChunk + 7 {
		p := randomPoll(r, 1000+float64(i)*0.5, 2)
		want = append(want, p)
		l.Append(&p)
	}
	if l.Len() != len(want) {
		t.Fatalf("Len %d, want %d", l.Len(), len(want))
	}
	same := func(a, b Poll) bool {
		// Bits, not ==: NaN payloads must survive.
		ab := func(p Poll) []uint64 {
			xs := numsOf(&p)
			out := []uint64{math.Float64bits(p.T), math.Float64bits(p.Start)}
			for _, x := range xs {
				out = append(out, math.Float64bits(x.V))
				if x.Valid {
					out = append(out, 1)
				} else {
					out = append(out, 0)
				}
			}
			for _, x := range p.Spans {
				out = append(out, math.Float64bits(x.V))
			}
			return out
		}
		return reflect.DeepEqual(ab(a), ab(b)) && a.Row == b.Row && textsOf(&a) == textsOf(&b) &&
			reflect.DeepEqual(a.DecodeNotes, b.DecodeNotes) && len(a.Spans) == len(b.Spans)
	}
	for i := range want {
		if got := *l.At(i); !same(got, want[i]) {
			t.Fatalf("poll %d: got %+v, want %+v", i, got, want[i])
		}
		for k := range NRates {
			if got := l.Total(i, k); math.Float64bits(got.V) != math.Float64bits(want[i].Totals[k].V) || got.Valid != want[i].Totals[k].Valid {
				t.Fatalf("poll %d: Total(%d) %v, want %v", i, k, got, want[i].Totals[k])
			}
		}
		if st := l.Steps(i); math.Float64bits(st.V) != math.Float64bits(want[i].Steps.V) || st.Valid != want[i].Steps.Valid {
			t.Fatalf("poll %d: Steps %v, want %v", i, st, want[i].Steps)
		}
		w := &want[i]
		readers := []struct{ got, want rate.Num }{{l.IntervalV(i), w.Interval.V}, {l.Running(i), w.Running},
			{l.Waiting(i), w.Waiting}, {l.TokensTotal(i), w.TokensTotal}, {l.KV(i), w.KV}, {l.ProcessStart(i), w.ProcessStart}, {l.Capacity(i), w.Capacity},
			{l.Deferred(i), w.Deferred}, {l.KVCapacity(i), w.KVCapacity}, {l.PrefixCaching(i), w.PrefixCaching},
			{l.Energy(i), w.Energy}, {l.Power(i), w.Power}}
		for j := range len(w.Spans) + 1 {
			// One past the spans reads null.
			sp := rate.Num{}
			if j < len(w.Spans) {
				sp = w.Spans[j]
			}
			readers = append(readers, struct{ got, want rate.Num }{l.Span(i, j), sp})
		}
		for k := range NRates {
			readers = append(readers, struct{ got, want rate.Num }{l.Rate(i, k), w.Rates[k].V})
			if got := l.Reasons(i)[k]; got != w.Rates[k].Reason {
				t.Fatalf("poll %d: Reasons[%d] %q, want %q", i, k, got, w.Rates[k].Reason)
			}
		}
		if !reflect.DeepEqual(l.Notes(i), w.DecodeNotes) {
			t.Fatalf("poll %d: Notes %q, want %q", i, l.Notes(i), w.DecodeNotes)
		}
		if l.Row(i) != w.Row {
			t.Fatalf("poll %d: Row %d, want %d", i, l.Row(i), w.Row)
		}
		for _, c := range readers {
			if math.Float64bits(c.got.V) != math.Float64bits(c.want.V) || c.got.Valid != c.want.Valid {
				t.Fatalf("poll %d: %v, want %v", i, c.got, c.want)
			}
		}
		if l.Restarted(i) != (want[i].Restart != "") {
			t.Fatalf("poll %d: Restarted %v, want %q", i, l.Restarted(i), want[i].Restart)
		}
		if l.T(i) != want[i].T || l.Start(i) != want[i].Start {
			t.Fatalf("poll %d: times %v %v", i, l.T(i), l.Start(i))
		}
	}
	tail := l.Tail(pollChunk+3, 5)
	for i := range tail.Len() {
		w := want[pollChunk+3+i]
		w.Row -= 5
		if !same(*tail.At(i), w) {
			t.Fatalf("tail poll %d differs", i)
		}
	}
	for _, x := range []float64{0, 1000, 1000.25, 1000.5, 2000, 1e9} {
		n := 0
		for n < len(want) && want[n].T < x {
			n++
		}
		if got := l.Search(x); got != n {
			t.Errorf("Search(%v) = %d, want %d", x, got, n)
		}
	}
}

// BenchmarkPollListDay packs a day of one target's polls at 2 s (43,200)
// whose every rate, window, counter and gauge moves at every poll, as a
// busy engine's do, and reports the bytes kept per poll (a Poll is
// kept-B/poll's anchor: what a []Poll held).
func BenchmarkPollListDay(b *testing.B) {
	ps := busyDay()
	const n = 43200
	b.ReportAllocs()
	var l PollList
	for b.Loop() {
		l = PollList{}
		l.Grow(n)
		for i := range ps {
			l.Append(&ps[i])
		}
	}
	b.ReportMetric(float64(l.Bytes())/n, "kept-B/poll")
	b.ReportMetric(float64(unsafe.Sizeof(Poll{})+2*16), "Poll-B")
}

// BenchmarkPollListNum reads every number of BenchmarkPollListDay's day
// one at a time, as the tail's figures read them (Rate, Total, Waiting, …),
// and reports the time a read takes.
func BenchmarkPollListNum(b *testing.B) {
	ps := busyDay()
	l := PollsOf(ps[:]...)
	b.ReportAllocs()
	var sum float64
	for b.Loop() {
		for i := range l.Len() {
			for k := range nNums {
				if x := l.num(i, k); x.Valid {
					sum += x.V
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(l.Len()*nNums), "ns/num")
	if sum == 0 {
		b.Fatal("no numbers read")
	}
}

// busyDay is a day of one target's polls at 2 s (43,200) whose every rate,
// window, counter and gauge moves at every poll, as a busy engine's do.
func busyDay() *[43200]Poll {
	const n = 43200
	r := rand.New(rand.NewPCG(3, 4))
	ps := new([n]Poll)
	for i := range ps {
		p := &ps[i]
		p.T, p.Start, p.Row = 1e9+2*float64(i), 1e9+2*float64(i)-0.003, i
		for k := range NRates {
			p.Rates[k] = Value{V: rate.Some(r.Float64() * 1000), Window: rate.Some(2 + r.Float64()*1e-3)}
			p.Totals[k] = rate.Some(float64(i) * 1000)
		}
		p.Totals[PromptComputed] = rate.Num{}
		p.Interval = p.Rates[Decode]
		p.Spans = []rate.Num{rate.Some(r.Float64()), rate.Some(r.Float64())}
		p.Running, p.Waiting, p.KV, p.TokensTotal = rate.Some(float64(r.IntN(64))), rate.Some(float64(r.IntN(64))), rate.Some(r.Float64()), rate.Some(float64(i)*2000)
		p.KVCapacity, p.PrefixCaching, p.ProcessStart = rate.Some(1e6), rate.Some(1), rate.Some(1e9)
	}
	return ps
}

// A list sized by Grow allocates, after its first chunk, about what its
// records take (not up to twice, as doubling does), and reads back every
// poll whether the hint was right, short or long.
func TestPollListChunksByHint(t *testing.T) {
	for _, c := range []struct{ hint, n int }{{1300, 1300}, {400, 1300}, {5000, 1300}} {
		r := rand.New(rand.NewPCG(7, uint64(c.hint)))
		var l PollList
		l.Grow(c.hint)
		want := make([]Poll, c.n)
		for i := range want {
			want[i] = randomPoll(r, 1000+float64(i)*2, 2)
			l.Append(&want[i])
		}
		for i := range want {
			got := l.At(i)
			if numBits(got) != numBits(&want[i]) || textsOf(got) != textsOf(&want[i]) || got.Row != want[i].Row || got.T != want[i].T {
				t.Fatalf("hint %d: poll %d reads back %+v, want %+v", c.hint, i, *got, want[i])
			}
		}
		used, held := 0, 0
		for _, ch := range l.chunks {
			used, held = used+len(ch), held+cap(ch)
		}
		if c.hint == c.n && held > used*12/10+firstPollChunk+maxRecord {
			t.Errorf("hint %d: chunks hold %d bytes for %d of records", c.hint, held, used)
		}
		t.Logf("hint %d, %d polls: %d chunks hold %d bytes for %d of records", c.hint, c.n, len(l.chunks), held, used)
	}
}

// numBits are p's numbers as bits (NaN payloads compared too) and validity.
func numBits(p *Poll) (out [nNums][2]uint64) {
	for k, x := range numsOf(p) {
		out[k] = [2]uint64{math.Float64bits(x.V), uint64(boolInt(x.Valid))}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
