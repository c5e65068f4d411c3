package client

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/llmrec/llmrec/record/goldentest"
)

// The client's view of shared real runs, as the integrator will take it:
// each file's metadata, its phases and how they were cut, each phase's
// figures with their formulas, and its summaries. go test -update
// rewrites the golden; read its diff.
func TestFiguresGolden(t *testing.T) {
	type view struct {
		Meta      Meta      `json:"meta"`
		Requests  int       `json:"requests"`
		How       string    `json:"phases_from"`
		Figures   []Figures `json:"figures"`
		Summaries []Summary `json:"summaries"`
	}
	var out []view
	for _, rel := range []string{
		"aiperf/examples-artifacts-run1/profile_export.jsonl",
		"aiperf/plot-fixture-qwen_concurrency4/profile_export.jsonl",
		"guidellm/tests-unit-entrypoints-assets/benchmarks_stripped.json",
		"llmperf/yi-1.5-34b-4xa10g-vllm-concurrency8/01-ai-Yi-1-5-34B-Chat_550_150_summary.json",
	} {
		run := read(t, rel, Options{})
		run.Meta.File = rel // not the machine's path
		ps, how := Phases(run)
		out = append(out, view{Meta: run.Meta, Requests: len(run.Requests), How: how, Figures: Measure(run, ps), Summaries: run.Summaries})
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, filepath.Join("testdata", "figures.golden.json"), append(b, '\n'))
}
