package analyze

import (
	"math"
	"testing"

	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/sweep"
)

// With named phases over two engines the sweep has a curve per target
// and one for the fleet: at each level the fleet's decode is the sum of
// the targets', its quantiles are null (they do not add), and an SLO is
// judged from the targets' buckets added up (here vLLM's alone: the
// llama.cpp engine publishes no TTFT histogram), so its share is the
// vLLM target's.
func TestSweepFleetCurve(t *testing.T) {
	first, err := Analyze(Options{Dirs: []string{findingsDir + "/run"}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	var named []phases.Phase
	for _, m := range first.Output.Phases {
		if m.Kind == phases.KindSteady && m.Target == "vllm-0" {
			named = append(named, phases.Phase{Name: "level " + m.Name, Kind: phases.KindNamed, Source: phases.SourceFile, Start: m.Start, End: m.End})
		}
	}
	if len(named) < 2 {
		t.Fatalf("%d steady phases on vllm-0", len(named))
	}
	slo, err := sweep.ParseSLO("ttft_p99=500ms")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{findingsDir + "/run"}, SkipPolls: true, Phases: named, SLOs: []sweep.SLO{slo}})
	if err != nil {
		t.Fatal(err)
	}
	s := &res.Sweep
	if s.Basis != "named" || len(s.Curves) != 3 || s.Curves[2].Target != "" {
		t.Fatalf("basis %s, %d curves: want named, llamacpp-0, vllm-0 and the fleet", s.Basis, len(s.Curves))
	}
	byPhase := func(c *sweep.Curve) map[string]*sweep.Point {
		m := map[string]*sweep.Point{}
		for i := range c.Points {
			m[c.Points[i].Phase] = &c.Points[i]
		}
		return m
	}
	llama, vllm, fleet := byPhase(&s.Curves[0]), byPhase(&s.Curves[1]), byPhase(&s.Curves[2])
	if len(fleet) != len(named) {
		t.Fatalf("fleet has %d levels, want %d", len(fleet), len(named))
	}
	for name, f := range fleet {
		v, l := vllm[name], llama[name]
		if v == nil {
			t.Fatalf("%s: not on vllm-0's curve", name)
		}
		want := v.Decode.Value.V
		if l != nil && l.Decode.Value.Valid {
			want += l.Decode.Value.V
		}
		if !f.Decode.Value.Valid || math.Abs(f.Decode.Value.V-want) > 1e-6*want {
			t.Errorf("%s: fleet decode %v, want the targets' sum %v", name, f.Decode.Value, want)
		}
		if f.TTFTp99.Value.Valid || f.TTFTp99.Reason == "" {
			t.Errorf("%s: fleet TTFT p99 %+v: want null with a reason", name, f.TTFTp99)
		}
		if a, b := f.SLOs[0], v.SLOs[0]; a.Lo != b.Lo || a.Hi != b.Hi || a.Verdict != b.Verdict {
			t.Errorf("%s: fleet %+v, vllm-0 %+v: want the same share", name, a, b)
		}
	}
}
