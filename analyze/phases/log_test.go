package phases

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/record/expo"
)

// The log's increments, summed over any run of polls, are the counters'
// rise (a fall counted from 0, and marked), whole or fractional, across
// the megabyte chunks they are kept in, repeats included, and a reading
// that is not a number skipped; series its engine does not read
// into a cell are not kept.
func TestLogSums(t *testing.T) {
	l := NewLog(0)
	series := []engine.Series{
		{Family: "vllm:generation_tokens_total", Type: "counter", Name: "vllm:generation_tokens_total", Labels: `{"engine":"0"}`},
		{Family: "vllm:generation_tokens_total", Type: "counter", Name: "vllm:generation_tokens_total", Labels: `{"engine":"1"}`},
		{Family: "vllm:e2e_request_latency_seconds", Type: "histogram", Name: "vllm:e2e_request_latency_seconds_sum"},
		{Family: "vllm:num_requests_running", Type: "gauge", Name: "vllm:num_requests_running"},
		{Family: "vllm:iteration_tokens_total", Type: "histogram", Name: "vllm:iteration_tokens_total_count"},
	}
	ids := []int32{0, 1, 2, 3, 4}
	for i, s := range series {
		l.Key(ids[i], s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 200_000
	vals := make([]float64, len(ids))
	var want [][3]float64 // per poll: the rises of the three kept series
	resets := map[int]bool{}
	carry := 0.0 // a rise held back by a reading that was not a number
	for i := range n {
		var rise [3]float64
		var fell [3]bool
		for k := range 3 {
			old := vals[k]
			switch r := rng.Float64(); {
			case r < 0.0005 && i > 0:
				vals[k] = float64(rng.IntN(5)) // a restart
				rise[k], resets[i], fell[k] = vals[k], true, true
			case k == 1 && r < 0.5:
				// The same rise as the series before: written as a repeat.
				vals[k] += rise[0]
				rise[k] = vals[k] - old
			case k == 2:
				vals[k] += rng.Float64() * 1e3
				rise[k] = vals[k] - old
			default:
				vals[k] += float64(rng.IntN(1 << (rng.IntN(40))))
				rise[k] = vals[k] - old
			}
		}
		vals[3], vals[4] = rng.Float64(), float64(i)
		if i == 0 {
			rise = [3]float64{}
		}
		in := vals
		if i > 0 && rng.Float64() < 0.001 && !resets[i] {
			// A reading that is not a number is none: its rise comes with
			// the next reading.
			in = append([]float64{}, vals...)
			in[0] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)]
			carry = rise[0]
			rise[0] = 0
		} else if carry != 0 {
			// A fall counts from 0: what the skipped reading held back is lost.
			if !fell[0] {
				rise[0] += carry
			}
			carry = 0
		}
		want = append(want, rise)
		l.Poll(ids, in, nil, engine.VLLM, false)
	}
	if len(l.Series) != 3 || len(l.chunks) < 2 {
		t.Fatalf("%d series kept (want 3), %d chunks (want more than one)", len(l.Series), len(l.chunks))
	}
	for range 200 {
		a := rng.IntN(n)
		b := a + rng.IntN(n-a)
		acc := make([]float64, 3)
		var exp [3]float64
		for i := a + 1; i <= b; i++ {
			l.add(i, acc)
			for k := range 3 {
				exp[k] += want[i][k]
			}
		}
		for k := range 3 {
			if math.Abs(acc[k]-exp[k]) > 1e-9*math.Abs(exp[k]) {
				t.Fatalf("polls %d..%d series %d: %v, want %v", a, b, k, acc[k], exp[k])
			}
		}
	}
	for i := range n {
		if l.Reset(i) != resets[i] {
			t.Fatalf("poll %d: reset %v, want %v", i, l.Reset(i), resets[i])
		}
	}
}

// A log told how many polls to expect allocates about what they take: its
// chunks after the first are sized from the bytes per poll so far, not
// doubled, and every poll's increments read back whole.
func TestLogChunksFromHint(t *testing.T) {
	const polls, buckets = 1800, 40
	l := NewLog(polls)
	ids := make([]int32, buckets)
	for k := range ids {
		ids[k] = int32(k)
		l.Key(ids[k], engine.Series{Family: "vllm:e2e_request_latency_seconds", Type: "histogram",
			Name: "vllm:e2e_request_latency_seconds_bucket", Labels: fmt.Sprintf(`{"le":"%d"}`, k)})
	}
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, buckets)
	sum := make([]float64, buckets)
	for i := range polls {
		for k := range vals {
			rise := float64(rng.IntN(300))
			vals[k] += rise
			if i > 0 {
				sum[k] += rise
			}
		}
		l.Poll(ids, vals, nil, engine.VLLM, false)
	}
	used, held := 0, 0
	for _, c := range l.chunks {
		used, held = used+len(c), held+cap(c)
	}
	if len(l.chunks) < 2 || held > used*12/10+firstChunk/10 {
		t.Fatalf("%d chunks hold %d bytes for %d used (want more than one chunk, at most a fifth more)", len(l.chunks), held, used)
	}
	acc := make([]float64, buckets)
	for i := range polls {
		l.add(i, acc)
	}
	for k := range acc {
		if acc[k] != sum[k] {
			t.Fatalf("series %d: %v, want %v", k, acc[k], sum[k])
		}
	}
}

// TestBucketLeAsLeOf: the scan reads what the decode reads, plain labels
// or not.
func TestBucketLeAsLeOf(t *testing.T) {
	for _, labels := range []string{"", "{}", `{"le":"0.5"}`, `{"engine":"0","le":"+Inf"}`, `{"le":"NaN"}`,
		`{"le":"x"}`, `{"a":"1"}`, `{"le":"1","le":"2"}`, `{"le":"0.\u0035"}`, `{"le": "3"}`, `{"le":4}`} {
		got, gok := bucketLe(labels)
		want, wok := leOf(labels)
		if got != want || gok != wok {
			t.Errorf("%q: %v %v, leOf %v %v", labels, got, gok, want, wok)
		}
	}
}

// leOf reads the le label of a bucket series' label set by decoding the
// object whole: bucketLe's reference.
func leOf(labels string) (float64, bool) {
	m, err := expo.DecodeLabels(labels)
	if err != nil {
		return 0, false
	}
	le, err := strconv.ParseFloat(m["le"], 64)
	if err != nil || math.IsNaN(le) {
		return 0, false
	}
	return le, true
}

// encode's loop without a restart writes what the general loop writes,
// byte for byte, and leaves prev the same: on readings that rise, stay,
// fall (to 0, to below 0), start (no reading before), are not numbers or
// are infinite, are ±0, whole, fractional or past 2^52, at positions in
// and out of order (run breaks) with repeated increments.
func TestEncodeAsGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pick := func(p float64) float64 {
		switch r := rng.IntN(20); r {
		case 0:
			return math.NaN()
		case 1:
			return math.Inf(1 - 2*rng.IntN(2))
		case 2:
			return p // idle
		case 3:
			return math.Copysign(0, float64(1-2*rng.IntN(2)))
		case 4:
			return -float64(rng.IntN(5)) // a fall below 0
		case 5:
			return p + rng.Float64()
		case 6:
			return p + float64(uint64(1)<<(52+rng.IntN(3)))
		case 7:
			return float64(rng.IntN(3)) // a fall, maybe to the same rise
		default:
			return p + float64(rng.IntN(4))
		}
	}
	const nx = 24
	for round := range 20000 {
		pos := make([]logged, rng.IntN(40))
		vals := make([]float64, len(pos))
		prevA := make([]float64, nx)
		for x := range prevA {
			switch rng.IntN(4) {
			case 0:
				prevA[x] = math.NaN()
			default:
				prevA[x] = float64(rng.IntN(8))
			}
		}
		x := int32(0)
		for k := range pos {
			// Mostly rising ids, sometimes back (a run break).
			if rng.IntN(8) == 0 {
				x = int32(rng.IntN(nx))
			} else {
				x = min(x+int32(rng.IntN(3)), nx-1)
			}
			pos[k] = logged{int32(k), x}
			vals[k] = pick(prevA[x])
		}
		prevB := append([]float64{}, prevA...)
		a, b := make([]byte, len(pos)*maxEntry), make([]byte, len(pos)*maxEntry)
		na, fa := encode(a, 0, pos, vals, prevA, false)
		nb, fb := encodeAll(b, 0, pos, vals, prevB, false)
		if na != nb || fa != fb || string(a[:na]) != string(b[:nb]) {
			t.Fatalf("round %d: encode %d bytes fell %v %x, general %d fell %v %x", round, na, fa, a[:na], nb, fb, b[:nb])
		}
		for x := range prevA {
			if math.Float64bits(prevA[x]) != math.Float64bits(prevB[x]) {
				t.Fatalf("round %d: prev[%d] %v, general %v", round, x, prevA[x], prevB[x])
			}
		}
	}
}
