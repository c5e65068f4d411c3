package diff

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/diff/stat"
	"github.com/llmrec/llmrec/record/sim"
)

// Ratios compare in points with a floor: max KV usage 2.4 % → 2.6 % is
// +8 % relative, significant, and was "worse" (failing CI on noise); in
// points it is +0.2, inside ±5: no change. 40 % → 50 % is worse, and a
// prefix-hit ratio falling 20 points is worse (higher is better).
func TestRatiosCompareInPoints(t *testing.T) {
	kv, _ := quantity("kv_max")
	hit, _ := quantity("prefix_hit")
	if kv.Points != DefaultPoints || hit.Points != DefaultPoints {
		t.Fatalf("kv_max %g, prefix_hit %g points, want %g", kv.Points, hit.Points, DefaultPoints)
	}
	at := func(v float64) []float64 {
		return []float64{v, v * 1.002, v * 0.998, v * 1.001, v * 0.999, v * 1.0005}
	}
	cases := []struct {
		name       string
		q          Quantity
		base, cand []float64
		want, why  string
	}{
		{"KV 2.4 % → 2.6 %", kv, at(0.024), at(0.026), Same, "+0.2 [+0.2, +0.2] points, p=0.00216: the interval reaches inside ±5 points"},
		{"KV 40 % → 50 %", kv, at(0.40), at(0.50), Worse, "+10.0 [+9.9, +10.1] points, p=0.00216: beyond ±5 points, lower is better"},
		{"prefix hits 50 % → 30 %", hit, at(0.5), at(0.3), Worse, "beyond ±5 points, higher is better"},
		{"prefix hits 30 % → 50 %", hit, at(0.3), at(0.5), Better, "beyond ±5 points"},
		{"KV 0 % → 3 %", kv, []float64{0, 0, 0, 0, 0, 0}, at(0.03), Same, "inside ±5 points"},
	}
	for _, c := range cases {
		r := stat.Compare(c.base, c.cand, 0.95)
		est, lo, hi := stat.Shift(c.base, c.cand, 0.95)
		got, why := pointsVerdict(r, est, lo, hi, c.q, Thresholds{Default: DefaultThreshold}.For(c.q), 0.05)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %s (%s), want %s with %q", c.name, got, why, c.want, c.why)
		}
	}
	// The relative rule called the first one worse: the floor is what
	// changed.
	r := stat.Compare(at(0.024), at(0.026), 0.95)
	if got, _ := verdict(r, kv, DefaultThreshold, 0.05, "", "blocks", false); got != Worse {
		t.Errorf("relative verdict of KV 2.4 %% → 2.6 %%: %s, want worse (the case the floor is for)", got)
	}
	// --threshold kv_max=2% sets the floor to 2 points.
	th := Thresholds{Default: DefaultThreshold}
	if err := th.Set("kv_max=2%"); err != nil || th.For(kv) != 0.02 || th.For(hit) != DefaultPoints {
		t.Errorf("--threshold kv_max=2%%: %v, kv %g, prefix %g", err, th.For(kv), th.For(hit))
	}
	if est, _, _ := stat.Shift([]float64{1, 2}, at(1), 0.95); est == est {
		t.Errorf("a shift of 2 values: %g, want NaN", est)
	}
}

// A phase too short for blocks gives insufficient rows that say the
// length it would need: 50 poll intervals at 1 s.
func TestInsufficientSaysLengthNeeded(t *testing.T) {
	t.Parallel()
	sc := scenario(engineFor(30*time.Second, "e", sim.Speed{}, "", 12))
	rep, err := Compare(side(t, sc, 1, nil), side(t, sc, 1, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, rep, "steady 1", "e", "decode")
	if r.Verdict != Insufficient || r.NeedSeconds != 50 || !strings.Contains(r.Why, "it needs at least 50 s between good polls") {
		t.Errorf("decode over a 30 s phase: %s, need %g s (%s); want insufficient, 50 s", r.Verdict, r.NeedSeconds, r.Why)
	}
}

// The client's cut of a marked phase (renamed "client: NAME", the same
// stretch) is compared but not charted twice; a client phase elsewhere is.
func TestClientRepeatsNotCharted(t *testing.T) {
	named := func(name string, client bool, b, c [2]float64) unit {
		return unit{Aligned: Aligned{Name: name, By: ByName, Target: "v", Baseline: b, Candidate: c}, client: client}
	}
	us := []unit{
		named("concurrency 2", false, [2]float64{100, 160}, [2]float64{200, 260}),
		named("client: concurrency 2", true, [2]float64{101, 160.5}, [2]float64{200.5, 259}),
		named("client: warmup", true, [2]float64{90, 100}, [2]float64{190, 200}),
	}
	markRepeats(us)
	if us[0].repeats || !us[1].repeats || us[2].repeats {
		t.Errorf("repeats %v %v %v, want only the client's concurrency 2", us[0].repeats, us[1].repeats, us[2].repeats)
	}
}
