package analyze

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/record/sim"
)

// twoEngines is a recording of engines a and b, each at 5 requests/s (8
// running, 200 output tokens, TTFT 100 ms) from 10 s to 70 s.
func twoEngines(t *testing.T) string {
	t.Helper()
	es := func(name string) sim.EngineSpec {
		return sim.EngineSpec{Name: name, Format: sim.FormatVLLM, Phases: []sim.Phase{
			{At: 0, Idle: true},
			{At: time.Duration(clientLoadAt * float64(time.Second)), DecodeTPS: 1000, PromptTPS: 2000, Running: 8, OutputLen: 200,
				TTFT: 100 * time.Millisecond, KVUsage: -1},
			{At: time.Duration(clientLoadEnd * float64(time.Second)), Idle: true},
		}}
	}
	sc := &sim.Scenario{Name: "two", Start: sim.DefaultStart, Duration: 90 * time.Second, Engines: []sim.EngineSpec{es("a"), es("b")}}
	dir := t.TempDir()
	generateIn(t, sc, dir, sim.GenerateOptions{Interval: time.Second})
	return dir
}

// twoClient is the client of twoEngines: requests alternate between the
// engines (column named col: "" none), those to b waiting queueB seconds
// before the engine saw them.
func twoClient(t *testing.T, col func(i int) string, queueB float64) *client.Run {
	t.Helper()
	t0 := float64(sim.DefaultStart.UnixNano())/1e9 + clientLoadAt
	n := int((clientLoadEnd - clientLoadAt - 1.6) * 10)
	logn := func(mean, sigma float64, i, k int) float64 {
		p := (float64((i*k)%n) + 0.5) / float64(n)
		return mean * math.Exp(sigma*math.Sqrt2*math.Erfinv(2*p-1)-sigma*sigma/2)
	}
	var b strings.Builder
	for i := range n {
		q := 0.0
		if i%2 == 1 {
			q = queueB
		}
		ttft := logn(0.1, 0.5, i, 7) + q
		e2e := max(logn(1.6, 0.35, i, 11)+q, ttft+0.2)
		start := t0 + float64(i)/10
		target := ""
		if col != nil {
			target = col(i)
		}
		fmt.Fprintf(&b, `{"start":%.6f,"end":%.6f,"ttft_s":%.6f,"input_tokens":400,"output_tokens":200,"phase":"profiling"%s}`+"\n", start, start+e2e, ttft, target)
	}
	return readClientText(t, "client.jsonl", b.String())
}

func sideOf(f *clientcmp.File, target string) *clientcmp.Side {
	for i := range f.Sides {
		if f.Sides[i].Target == target {
			return &f.Sides[i]
		}
	}
	return nil
}

func rowOf(s *clientcmp.Side, q string) *clientcmp.Row {
	for i := range s.Rows {
		if s.Rows[i].Quantity == q {
			return &s.Rows[i]
		}
	}
	return nil
}

// Several engines behind one client: where the records name the engine
// each request went to (a target column, by name or by URL), each engine
// is compared on its own requests, quantiles included, and the queue
// before b is found on b alone; where they do not, the fleet's quantiles
// stay not comparable, saying why in plain words.
func TestClientPerEngine(t *testing.T) {
	dir := twoEngines(t)
	probe, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, tg := range probe.Inputs[0].Recordings[0].Targets {
		u := strings.TrimSuffix(tg.URL, "/metrics")
		if tg.Name == "a" {
			urls = append([]string{u}, urls...)
		} else {
			urls = append(urls, u)
		}
	}
	probe.Close()
	if len(urls) != 2 || hostPortOf(urls[0]) == hostPortOf(urls[1]) {
		t.Fatalf("the engines' URLs %q", urls)
	}
	for _, c := range []struct {
		name string
		col  func(i int) string
	}{
		{"by name", func(i int) string { return fmt.Sprintf(`,"target":%q`, string(rune('a'+i%2))) }},
		{"by url", func(i int) string { return fmt.Sprintf(`,"url":%q`, urls[i%2]+"/v1/completions") }},
		{"none", nil},
	} {
		res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true, Clients: []*client.Run{twoClient(t, c.col, 0.4)}})
		if err != nil {
			t.Fatal(err)
		}
		f := &res.Client.Files[0]
		fleet := sideOf(f, "")
		if fleet == nil || len(fleet.Targets) != 2 {
			t.Fatalf("%s: sides %+v", c.name, f.Sides)
		}
		r := rowOf(fleet, "ttft_p50_s")
		if c.col == nil {
			if r.Agreement != clientcmp.NotComparable || !strings.Contains(r.Why, "do not name the engine each request went to") || len(f.Sides) != 1 {
				t.Errorf("%s: fleet TTFT %s (%s), %d sides", c.name, r.Agreement, r.Why, len(f.Sides))
			}
			res.Close()
			continue
		}
		if r.Agreement != clientcmp.NotComparable || !strings.Contains(r.Why, "compared per engine") {
			t.Errorf("%s: fleet TTFT %s (%s)", c.name, r.Agreement, r.Why)
		}
		a, b := sideOf(f, "a"), sideOf(f, "b")
		if a == nil || b == nil {
			t.Fatalf("%s: no per-engine sides: %+v", c.name, f.Sides)
		}
		for _, q := range []string{"ttft_p50_s", "e2e_p50_s", client.FRequestsPS, client.FOutputTokensPS} {
			if r := rowOf(a, q); r.Agreement != clientcmp.Agree {
				t.Errorf("%s: a's %s: %s (%s)", c.name, q, r.Agreement, r.Why)
			}
		}
		if r := rowOf(b, "ttft_p50_s"); r.Agreement != clientcmp.Disagree {
			t.Errorf("%s: b's TTFT p50: %s (%s)", c.name, r.Agreement, r.Why)
		}
		var seams []string
		for _, fd := range res.Client.Findings {
			seams = append(seams, fd.Seam+"@"+fd.Phase+":"+strings.Join(fd.Quantities, ","))
		}
		if len(seams) != 1 || !strings.HasPrefix(seams[0], clientcmp.SeamQueueBeforeEngine+"@profiling:ttft_mean_s,ttft_p50_s") || res.Client.Findings[0].Target != "b" {
			t.Errorf("%s: findings %q", c.name, seams)
		}
		res.Close()
	}
}

func hostPortOf(u string) string {
	_, hp, _ := strings.Cut(u, "://")
	hp, _, _ = strings.Cut(hp, "/")
	return hp
}
