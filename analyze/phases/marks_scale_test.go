package phases

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// FromMarks cuts the phases the rule says (its doc comment), checked
// against the rule written out as it reads, a scan for each open phase at
// each start, over random marks with distinct times.
func TestFromMarksAsTheRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		n := 1 + rng.IntN(30)
		var ms []capture.Mark
		for i := range n {
			ms = append(ms, capture.Mark{TNs: int64(1+i) * 1e9, Name: string(rune('a' + rng.IntN(4))), End: rng.IntN(3) == 0})
		}
		rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		got, gotBad := FromMarks(ms, 100)
		want, wantBad := marksByRule(ms, 100)
		if fmt.Sprint(spans(got)) != fmt.Sprint(spans(want)) || len(gotBad) != len(wantBad) {
			t.Fatalf("round %d: %v, bad %d; the rule: %v, bad %d", round, spans(got), len(gotBad), spans(want), len(wantBad))
		}
	}
}

// 20,000 marks of phases each ended by its own end mark after all have
// started (every start scanned every open phase, each scan every mark)
// pair in well under the 10 s allowed here (the rule's scans took 88 s at
// 5,000 through diff).
func TestFromMarksScales(t *testing.T) {
	const n = 10000
	var ms []capture.Mark
	for i := range n {
		ms = append(ms, capture.Mark{TNs: int64(1+i) * 1e6, Name: fmt.Sprint("p", i)})
	}
	for i := range n {
		ms = append(ms, capture.Mark{TNs: int64(1+n+i) * 1e6, Name: fmt.Sprint("p", i), End: true})
	}
	start := time.Now()
	ps, bad := FromMarks(ms, 1e3)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%d marks took %v", len(ms), d)
	}
	if len(ps) != n || len(bad) != 0 || ps[0].End != float64(n+1)/1e3 {
		t.Errorf("%d phases (first %+v), bad %v", len(ps), ps[0], bad)
	}
}

func spans(ps []Phase) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %g-%g", p.Name, p.Start, p.End))
	}
	return out
}

// marksByRule is the rule as FromMarks's doc comment states it, one scan
// at a time: a start ends each open phase whose next mark of its own name
// is not an end mark.
func marksByRule(marks []capture.Mark, end float64) (out []Phase, bad []string) {
	ms := slices.Clone(marks)
	slices.SortStableFunc(ms, func(a, b capture.Mark) int { return cmp.Compare(a.TNs, b.TNs) })
	open := map[string]int{}
	endsLater := func(name string, t int64) bool {
		for _, m := range ms {
			if m.TNs > t && m.Name == name {
				return m.End
			}
		}
		return false
	}
	for _, m := range ms {
		t := float64(m.TNs) / 1e9
		if m.End {
			i, ok := open[m.Name]
			if !ok {
				bad = append(bad, m.Name)
				continue
			}
			out[i].End = t
			delete(open, m.Name)
			continue
		}
		for name, i := range open {
			if name == m.Name || !endsLater(name, m.TNs) {
				out[i].End = t
				delete(open, name)
			}
		}
		open[m.Name] = len(out)
		out = append(out, Phase{Name: m.Name, Start: t, End: math.Inf(1)})
	}
	for _, i := range open {
		out[i].End = end
	}
	return slices.DeleteFunc(out, func(p Phase) bool { return !(p.End > p.Start) }), bad
}
