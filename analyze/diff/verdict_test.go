package diff

import (
	"math"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/diff/stat"
	"github.com/llmrec/llmrec/analyze/rate"
)

// The verdict rule on results made by package stat from small samples.
func TestVerdictRule(t *testing.T) {
	decode, _ := quantity("decode")
	ttft, _ := quantity("ttft_p99")
	preempt, _ := quantity("preemptions")
	same := []float64{100, 101, 99, 100.5, 99.5, 100.2}
	scaled := func(f float64) []float64 {
		out := make([]float64, len(same))
		for i, x := range same {
			out[i] = x * f
		}
		return out
	}
	cases := []struct {
		name       string
		q          Quantity
		base, cand []float64
		blocking   string
		want, why  string
	}{
		{"10 % slower decode", decode, same, scaled(0.9), "", Worse, "beyond ±5%"},
		{"10 % faster decode", decode, same, scaled(1.1), "", Better, "higher is better"},
		{"10 % longer TTFT", ttft, same, scaled(1.1), "", Worse, "lower is better"},
		{"10 % shorter TTFT", ttft, same, scaled(0.9), "", Better, ""},
		{"2 % slower, inside 5 %", decode, same, scaled(0.98), "", Same, "reaches inside ±5%"},
		{"the same", decode, same, same, "", Same, "not significant"},
		{"across a version seam", decode, same, scaled(0.5), "version 1 → 2", Unlike, "not compared across version 1 → 2"},
		{"three values", decode, same[:3], scaled(0.5), "", Insufficient, "baseline has 3 values"},
		{"no preemptions on either side", preempt, []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, "", Same, "0 on both sides"},
		{"preemptions from none", preempt, []float64{0, 0, 0, 0, 0, 0}, []float64{1, 2, 1, 3, 2, 1}, "", Insufficient, "no relative size"},
	}
	for _, c := range cases {
		r := stat.Compare(c.base, c.cand, 0.95)
		got, why := verdict(r, c.q, 0.05, 0.05, c.blocking, "blocks", false)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %s (%s), want %s with %q", c.name, got, why, c.want, c.why)
		}
	}
	// Significant, and beyond the threshold: both are needed.
	r := stat.Compare(same, scaled(0.9), 0.95)
	if !r.Significant(0.05) || math.IsNaN(r.ChangeHi) {
		t.Fatalf("%+v", r)
	}
	if got, _ := verdict(r, decode, 0.12, 0.05, "", "blocks", false); got != Same {
		t.Errorf("10 %% under a 12 %% threshold: %s", got)
	}
	if got, _ := verdict(r, decode, 0.05, 1e-9, "", "blocks", false); got != Same {
		t.Errorf("10 %% at alpha 1e-9: %s", got)
	}
}

// A quantile row whose figures fell in one bucket on both sides is
// insufficient, naming the bucket and the mean row, whether the samples
// said ~ or worse; other buckets, or a row already unlike, keep their
// verdict.
func TestOneBucket(t *testing.T) {
	itl, _ := quantity("itl_p50")
	in := rate.Bucket{Lo: rate.Some(0.01), Hi: rate.Some(0.025), Flags: rate.FlagCoarse}
	other := rate.Bucket{Lo: rate.Some(0.025), Hi: rate.Some(0.05)}
	for _, c := range []struct {
		name   string
		v      string
		b, c   rate.Bucket
		want   string
		ok     bool
		substr string
	}{
		{"same bucket, no change", Same, in, in, Insufficient, true, "inside (10 ms, 25 ms]: both sides' ITL p50 fall in this one histogram bucket"},
		{"same bucket, worse", Worse, in, in, Insufficient, true, "cannot measure a change; the ITL mean row (Δsum/Δcount, exact) decides"},
		{"other buckets", Same, in, other, "", false, ""},
		{"no bucket", Same, rate.Bucket{}, rate.Bucket{}, "", false, ""},
		{"unlike", Unlike, in, in, "", false, ""},
	} {
		v, why, ok := oneBucket(c.v, itl, c.b, c.c)
		if ok != c.ok || v != c.want || !strings.Contains(why, c.substr) {
			t.Errorf("%s: %q %q %v, want %q containing %q", c.name, v, why, ok, c.want, c.substr)
		}
	}
}

// The seam line of incidents inside a compared phase says what they do to
// the figures: spells of refused windows are named for their gate and are
// no restart; a restart says its interval is left out.
func TestIncidentSeamWords(t *testing.T) {
	rep := &Report{}
	rep.incidentSeam(&Aligned{Name: "concurrency 2", Target: "vllm",
		BaselineIncidents: map[string]int{"refused:jump": 3}, CandidateIncidents: map[string]int{}})
	if len(rep.Seams) != 1 {
		t.Fatalf("seams %+v", rep.Seams)
	}
	d := rep.Seams[0].Detail
	if strings.Contains(d, "restart") || !strings.Contains(d, "3 spells of windows refused as jumps") ||
		!strings.Contains(d, "the phase figures difference the counters across them") {
		t.Errorf("refused windows: %q", d)
	}
	rep = &Report{}
	rep.incidentSeam(&Aligned{Name: "steady 1", Target: "llama",
		BaselineIncidents: map[string]int{"restart": 1, "gap": 2}, CandidateIncidents: nil})
	if d := rep.Seams[0].Detail; !strings.Contains(d, "baseline: 2 gaps, 1 restart; candidate: none") ||
		!strings.Contains(d, "counted across") || !strings.Contains(d, "the interval across a restart is left out") {
		t.Errorf("a restart and gaps: %q", d)
	}
}
