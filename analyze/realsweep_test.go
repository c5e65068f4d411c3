package analyze

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/sweep"
	"github.com/llmrec/llmrec/internal/sharedtest"
)

// realSweep analyses the a-baseline run with its phases.csv and, when
// withClient, its requests.csv (the client's own record), with SLOs.
func realSweep(t *testing.T, withClient bool, slos string) *Result {
	t.Helper()
	dir := filepath.Join(realRuns, "a-baseline")
	sharedtest.Need(t, filepath.Join(dir, "requests.csv"), "real run a-baseline's client record")
	ps, err := phases.ReadFile(filepath.Join(dir, "phases.csv"))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Dirs: []string{filepath.Join(dir, "rec")}, Phases: ps, SkipPolls: true}
	if withClient {
		cr, err := client.ReadFile(filepath.Join(dir, "requests.csv"), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opt.Clients = []*client.Run{cr}
	}
	if slos != "" {
		if opt.SLOs, err = sweep.ParseSLOs(slos); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Analyze(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	if len(res.Sweep.Curves) != 1 {
		t.Fatalf("want one curve (one target), got %d: %s", len(res.Sweep.Curves), res.Sweep.Reason)
	}
	return res
}

func levelOrder(c *sweep.Curve) []string {
	var out []string
	for _, p := range c.Points {
		out = append(out, p.Phase)
	}
	return out
}

// With the client's record, the levels are ordered by the client's in
// flight and the knee is between 4 and 8 clients: llama-server has 4
// slots, the other 4 requests waited in its HTTP threads, unseen.
func TestRealSweepClientNamesKnee(t *testing.T) {
	res := realSweep(t, true, "")
	c := &res.Sweep.Curves[0]
	if got := strings.Join(levelOrder(c), " "); got != "load-1client load-4clients load-8clients" {
		t.Fatalf("levels in order %q, want by the client's in flight", got)
	}
	top := c.Points[2]
	if !top.Offered.Value.Valid || top.Offered.Value.V < 7 || !strings.Contains(top.Offered.Source, "client") {
		t.Errorf("load-8clients offered %+v, want the client's ~8 in flight", top.Offered)
	}
	if c.Knee.Last != "load-4clients" || c.Knee.First != "load-8clients" {
		t.Fatalf("knee %q → %q, want load-4clients → load-8clients: %s", c.Knee.Last, c.Knee.First, c.Knee.Text)
	}
	kinds := map[string]bool{}
	for _, e := range c.Knee.Evidence {
		kinds[e.Kind] = true
	}
	if !kinds[sweep.EvHiddenQueue] || !kinds[sweep.EvBelowOffered] {
		t.Errorf("knee evidence %+v, want hidden queue and achieved below offered", c.Knee.Evidence)
	}
}

// The SLO is judged from the client's own latencies where the engine
// publishes no histogram (llama.cpp): the client's TTFT p99 stays under
// a threshold between the levels' p99s at 4 clients and not at 8.
func TestRealSweepClientSLO(t *testing.T) {
	res := realSweep(t, true, "ttft_p99=200ms")
	c := &res.Sweep.Curves[0]
	verdicts := map[string]string{}
	for _, p := range c.Points {
		if len(p.SLOs) != 1 || p.Goodput == nil {
			t.Fatalf("%s: SLOs %+v goodput %v", p.Phase, p.SLOs, p.Goodput)
		}
		verdicts[p.Phase] = p.SLOs[0].Verdict
		if p.Goodput.Good > p.Goodput.Requests || p.Goodput.Requests == 0 {
			t.Errorf("%s: goodput %d of %d", p.Phase, p.Goodput.Good, p.Goodput.Requests)
		}
	}
	if verdicts["load-4clients"] != sweep.Pass || verdicts["load-8clients"] != sweep.Fail {
		t.Errorf("verdicts %v, want load-4clients pass and load-8clients fail (client TTFT p99)", verdicts)
	}
}

// Without the client's record the engine shows no queue (llama.cpp's
// requests_deferred stays 0: the requests beyond its 4 slots wait in its
// HTTP threads), so no knee is named; but running held the slots (the
// recorded /slots), so the sweep does not claim the capacity is above
// the highest level, and says why it cannot see further.
func TestRealSweepEngineAloneAtSlots(t *testing.T) {
	res := realSweep(t, false, "")
	c := &res.Sweep.Curves[0]
	if !c.Slots.Valid || c.Slots.V != 4 || c.SlotsSource == "" {
		t.Fatalf("slots %v from %q, want 4 (llama-server --parallel 4, /slots recorded)", c.Slots, c.SlotsSource)
	}
	for _, p := range c.Points {
		if p.Waiting.Value.Valid && p.Waiting.Value.V != 0 {
			t.Errorf("%s: waiting %v: requests_deferred was 0 at every poll", p.Phase, p.Waiting.Value.V)
		}
	}
	if strings.Contains(c.Knee.Text, "above the highest level (") {
		t.Errorf("knee claims capacity above the highest level: %s", c.Knee.Text)
	}
	if !slices.Contains(c.Knee.AtSlots, "load-4clients") || !slices.Contains(c.Knee.AtSlots, "load-8clients") || slices.Contains(c.Knee.AtSlots, "load-1client") {
		t.Errorf("levels at the slots %v, want load-4clients and load-8clients", c.Knee.AtSlots)
	}
	if !strings.Contains(c.Knee.Text, "no queue") || !strings.Contains(c.Knee.Text, "offered load is unknown above the slots") {
		t.Errorf("knee does not say the engine shows no queue: %s", c.Knee.Text)
	}
}
