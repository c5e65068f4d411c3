package sim

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/goldentest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// realCaptures is the folder of real captures, shared beside the repository.
const realCaptures = "../../../shared/captures/real"

func parseBody(t testing.TB, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("body does not parse: %v", err)
	}
	return fams
}

func readCapture(t *testing.T, name string) map[string]*dto.MetricFamily {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(realCaptures, name))
	if os.IsNotExist(err) {
		t.Skipf("real capture %s not found (the shared folder sits beside the repository): %v", name, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	return parseBody(t, data)
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// metric finds the one series of family name with the given labels.
func metric(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mf := fams[name]
	if mf == nil {
		t.Fatalf("no family %s", name)
	}
	var found *dto.Metric
	for _, m := range mf.GetMetric() {
		if hasLabels(m, labels) {
			if found != nil {
				t.Fatalf("%s%v: more than one series", name, labels)
			}
			found = m
		}
	}
	if found == nil {
		t.Fatalf("%s%v: no series", name, labels)
	}
	return found
}

// val is the value of a counter, gauge or untyped series.
func val(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := metric(t, fams, name, labels)
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

func buildOne(t testing.TB, toml string) *Engine {
	t.Helper()
	sc, err := ParseScenario([]byte(toml), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	es, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return es[0]
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// The vLLM body has every family of the real vLLM V1 capture, with the same
// type and the same histogram bucket bounds, and about its size.
func TestVLLMFamiliesMatchRealCapture(t *testing.T) {
	real := readCapture(t, "vllm-v1-armandossrecife-vllm-server-api-chat.txt")
	e := DefaultEngines(t)[0]
	body := e.Render(10 * time.Second)
	got := parseBody(t, body)
	for name, rf := range real {
		gf := got[name]
		if gf == nil {
			t.Errorf("family %s of the real capture is missing", name)
			continue
		}
		if gf.GetType() != rf.GetType() {
			t.Errorf("family %s: type %v, real %v", name, gf.GetType(), rf.GetType())
		}
		if rf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		if rb, gb := bounds(rf), bounds(gf); !slices.Equal(rb, gb) {
			t.Errorf("family %s: bucket bounds %v, real %v", name, gb, rb)
		}
	}
	for _, name := range []string{"vllm:num_requests_waiting_by_reason", "vllm:cache_config_info"} {
		if got[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	cc := metric(t, got, "vllm:cache_config_info", map[string]string{"engine": "0"})
	if !hasLabels(cc, map[string]string{"block_size": "16", "num_gpu_blocks": "20000", "enable_prefix_caching": "True"}) {
		t.Errorf("cache_config_info labels: %v", cc.GetLabel())
	}
	if n := len(body); n < 40_000 || n > 56_000 {
		t.Errorf("vLLM body is %d bytes, want about 45 KB like the real capture", n)
	}
	if !bytes.Contains(body, []byte(`vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} `)) {
		t.Error("label order differs from prometheus_client's (engine, model_name)")
	}
}

func bounds(mf *dto.MetricFamily) []float64 {
	var out []float64
	for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			out = append(out, b.GetUpperBound())
		}
	}
	return out
}

func DefaultEngines(t testing.TB) []*Engine {
	t.Helper()
	es, err := DefaultScenario().Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// The llama.cpp body has the families and types of the mainline capture and
// every family of the other mainline build.
func TestLlamaCppFamiliesMatchRealCapture(t *testing.T) {
	real := readCapture(t, "llamacpp-cpu-tiny-midload.txt")
	got := parseBody(t, DefaultEngines(t)[1].Render(12*time.Second))
	if len(got) != len(real) {
		t.Errorf("%d families, real capture has %d", len(got), len(real))
	}
	for name, rf := range real {
		if gf := got[name]; gf == nil || gf.GetType() != rf.GetType() {
			t.Errorf("family %s: got %v, real type %v", name, gf, rf.GetType())
		}
	}
	other := readCapture(t, "llamacpp-jorupp-terra-invicta-assistant-20260530.txt")
	for name := range other {
		if got[name] == nil {
			t.Errorf("family %s of the jorupp capture is missing", name)
		}
	}
}

const handScenario = `
start = 2026-03-01T12:00:00Z
[[engine]]
name = "v"
format = "vllm"
model = "m"
  [[engine.phase]]
  at = "10s"
  decode_tps = 100.0
  prompt_tps = 400.0
  cached_fraction = 0.25
  running = 4
  output_len = 50
  length_fraction = 0.5
  [[engine.phase]]
  at = "30s"
  idle = true
  [[engine.phase]]
  at = "40s"
  decode_tps = 10.0
  prompt_tps = 20.0
  output_len = 5
  [[engine.event]]
  at = "35s"
  kind = "restart"
  [[engine.event]]
  at = "45s"
  kind = "label_join"
  label = "1"
  carry = "1m"
  [[engine.event]]
  at = "50s"
  kind = "restart"
`

// Counters are integrals of the phase rates: idle until 10 s, then 100
// generated and 400 prompt tokens a second, a quarter cached, a request per
// 50 generated tokens, half of them capped by length.
func TestCountersAreIntegrals(t *testing.T) {
	e := buildOne(t, handScenario)
	l0 := map[string]string{"engine": "0"}
	for _, c := range []struct {
		at                      float64
		gen, prompt, hits, reqs float64
	}{
		{5, 0, 0, 0, 0},
		{10, 0, 0, 0, 0},
		{10.333, 33, 133, 33, 0},
		{20, 1000, 4000, 1000, 20},
		{25.25, 1525, 6100, 1525, 30},
		{30, 2000, 8000, 2000, 40},
		{34.9, 2000, 8000, 2000, 40},
	} {
		at := sec(c.at)
		tr := e.Truth(at)
		got := tr.Sets[0].Counters
		if got.GenerationTokens != c.gen || got.PromptTokens != c.prompt || got.CachedPromptTokens != c.hits || got.Requests != c.reqs {
			t.Errorf("at %v: truth %+v, want gen %v prompt %v hits %v requests %v", at, got, c.gen, c.prompt, c.hits, c.reqs)
		}
		fams := parseBody(t, e.Render(at))
		for name, want := range map[string]float64{
			"vllm:generation_tokens_total":        c.gen,
			"vllm:prompt_tokens_total":            c.prompt,
			"vllm:prefix_cache_queries_total":     c.prompt,
			"vllm:gpu_prefix_cache_hits_total":    c.hits,
			"vllm:prefix_cache_hits_total":        c.hits,
			"vllm:gpu_prefix_cache_queries_total": c.prompt,
		} {
			if v := val(t, fams, name, l0); v != want {
				t.Errorf("at %v: %s = %v, want %v", at, name, v, want)
			}
		}
		stop := val(t, fams, "vllm:request_success_total", map[string]string{"engine": "0", "finished_reason": "stop"})
		length := val(t, fams, "vllm:request_success_total", map[string]string{"engine": "0", "finished_reason": "length"})
		if stop+length != c.reqs || length != math.Floor(c.reqs/2) {
			t.Errorf("at %v: stop %v length %v, want %v requests, half length", at, stop, length, c.reqs)
		}
		tpot := metric(t, fams, "vllm:time_per_output_token_seconds", l0).GetHistogram()
		if float64(tpot.GetSampleCount()) != c.gen-c.reqs {
			t.Errorf("at %v: TPOT count %d, want generated - requests = %v", at, tpot.GetSampleCount(), c.gen-c.reqs)
		}
		it := metric(t, fams, "vllm:iteration_tokens_total", l0).GetHistogram()
		if it.GetSampleSum() != c.gen+c.prompt {
			t.Errorf("at %v: iteration_tokens_total_sum %v, want %v", at, it.GetSampleSum(), c.gen+c.prompt)
		}
		if tr.Phase != map[bool]int{true: -1, false: 0}[c.at < 10]+map[bool]int{true: 1, false: 0}[c.at >= 30] {
			t.Errorf("at %v: phase %d", at, tr.Phase)
		}
	}
	if r := e.Truth(15 * time.Second).Rates; r.GenerationTokens != 100 || r.PromptTokens != 400 || r.CachedPromptTokens != 100 || r.Requests != 2 || r.Running != 4 {
		t.Errorf("rates at 15s: %+v", r)
	}
}

// A restart resets every counter to 0 and moves process_start_time_seconds
// and the _created values to the restart.
func TestRestartResets(t *testing.T) {
	e := buildOne(t, handScenario)
	l0 := map[string]string{"engine": "0"}
	start := float64(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix())
	before := parseBody(t, e.Render(34*time.Second))
	after := parseBody(t, e.Render(36*time.Second))
	if v := val(t, before, "process_start_time_seconds", nil); v != start-75 {
		t.Errorf("process start before restart = %v, want %v", v, start-75)
	}
	if v := val(t, after, "process_start_time_seconds", nil); v != start+35 {
		t.Errorf("process start after restart = %v, want %v", v, start+35)
	}
	for _, name := range []string{"vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:prefix_cache_hits_total"} {
		if v := val(t, after, name, l0); v != 0 {
			t.Errorf("%s after restart = %v, want 0", name, v)
		}
	}
	if h := metric(t, after, "vllm:e2e_request_latency_seconds", l0).GetHistogram(); h.GetSampleCount() != 0 || h.GetSampleSum() != 0 {
		t.Errorf("e2e histogram after restart: %v", h)
	}
	c0 := val(t, before, "vllm:generation_tokens_created", l0)
	c1 := val(t, after, "vllm:generation_tokens_created", l0)
	if c0 >= start || c1 < start+35 || c1 > start+35.01 {
		t.Errorf("_created %v before, %v after restart at %v", c0, c1, start+35)
	}
	// Load resumes at 40 s: 10 tokens/s.
	if v := e.Truth(42 * time.Second).Sets[0].Counters.GenerationTokens; v != 20 {
		t.Errorf("generated 2 s after load resumed: %v, want 20", v)
	}
}

// A label join exports a second label set whose counters start from the
// carried history (here 1 minute at 10 tokens/s), beside the first set.
func TestLabelJoin(t *testing.T) {
	e := buildOne(t, handScenario)
	if tr := e.Truth(44 * time.Second); len(tr.Sets) != 1 {
		t.Fatalf("before the join: %d label sets", len(tr.Sets))
	}
	tr := e.Truth(47 * time.Second)
	if len(tr.Sets) != 2 || tr.Sets[1].Label != "1" {
		t.Fatalf("after the join: %+v", tr.Sets)
	}
	if g0, g1 := tr.Sets[0].Counters.GenerationTokens, tr.Sets[1].Counters.GenerationTokens; g0 != 70 || g1 != 620 {
		t.Errorf("generated: set 0 %v (want 70), set 1 %v (want 600 carried + 20)", g0, g1)
	}
	fams := parseBody(t, e.Render(47*time.Second))
	if v := val(t, fams, "vllm:generation_tokens_total", map[string]string{"engine": "1"}); v != 620 {
		t.Errorf("engine=1 generation_tokens_total = %v, want 620", v)
	}
	metric(t, fams, "vllm:cache_config_info", map[string]string{"engine": "1"})
	metric(t, fams, "vllm:time_to_first_token_seconds", map[string]string{"engine": "1"})
	start := float64(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix())
	if c := val(t, fams, "vllm:generation_tokens_created", map[string]string{"engine": "1"}); math.Abs(c-(start+45-60)) > 0.01 {
		t.Errorf("engine=1 _created = %v, want the start of the carried history %v", c, start-15)
	}
	// The restart at 50 s resets both sets.
	tr = e.Truth(51 * time.Second)
	if len(tr.Sets) != 2 || tr.Sets[0].Counters.GenerationTokens != 10 || tr.Sets[1].Counters.GenerationTokens != 10 {
		t.Errorf("after the restart: %+v", tr.Sets)
	}
}

// llama.cpp counts only evaluated prompt tokens and adds generated tokens
// when requests finish.
func TestLlamaCppCounters(t *testing.T) {
	e := buildOne(t, strings.ReplaceAll(strings.Split(handScenario, "[[engine.event]]")[0], `"vllm"`, `"llamacpp"`))
	for _, c := range []struct {
		at                     float64
		predicted, prompt, dec float64
	}{
		{10.3, 0, 90, 7},      // 30 generated, no request finished; 120 prompt, 30 cached
		{10.6, 50, 180, 15},   // the first request (50 tokens) finished
		{20, 1000, 3000, 250}, // steps = 100/4 per second
	} {
		fams := parseBody(t, e.Render(sec(c.at)))
		if v := val(t, fams, "llamacpp:tokens_predicted_total", nil); v != c.predicted {
			t.Errorf("at %vs: tokens_predicted_total = %v, want %v", c.at, v, c.predicted)
		}
		if v := val(t, fams, "llamacpp:prompt_tokens_total", nil); v != c.prompt {
			t.Errorf("at %vs: prompt_tokens_total = %v, want %v", c.at, v, c.prompt)
		}
		if v := val(t, fams, "llamacpp:n_decode_total", nil); v != c.dec {
			t.Errorf("at %vs: n_decode_total = %v, want %v", c.at, v, c.dec)
		}
		if v := val(t, fams, "llamacpp:requests_processing", nil); v != 4 {
			t.Errorf("at %vs: requests_processing = %v", c.at, v)
		}
	}
	body := string(e.Render(20 * time.Second))
	if !strings.Contains(body, "\nllamacpp:tokens_predicted_total 1000\n") || strings.Contains(body, "{") {
		t.Errorf("llama.cpp formatting (integers, no labels):\n%s", body)
	}
	fams := parseBody(t, []byte(body))
	// Since-start averages: 1000 tokens over 20 requests of 50 tokens at
	// 25 tokens/s each.
	if v := val(t, fams, "llamacpp:predicted_tokens_seconds", nil); v != 25 {
		t.Errorf("predicted_tokens_seconds = %v, want 25", v)
	}
	if v := val(t, fams, "llamacpp:n_busy_slots_per_decode", nil); v != 4 {
		t.Errorf("n_busy_slots_per_decode = %v, want 4", v)
	}
}

// Over a whole scenario, sampled every 100 ms: histograms are consistent
// (_count = +Inf bucket, buckets nondecreasing in le), and no counter,
// bucket, _count or _sum ever decreases except across a restart.
func TestInvariantsOverTime(t *testing.T) {
	scs := map[string]*Scenario{"default": DefaultScenario(), "long": LongScenario(4, 10*time.Minute, 3)}
	for name, sc := range scs {
		t.Run(name, func(t *testing.T) {
			es, err := sc.Build(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			step := sc.Duration / 200
			for _, e := range es {
				prev := map[string]float64{}
				prevStart := math.NaN()
				for at := time.Duration(0); at <= sc.Duration; at += step {
					fams := parseBody(t, e.Render(at))
					cur := flatten(t, fams, at)
					ps := cur["process_start_time_seconds{}"]
					if e.Format() == FormatLlamaCpp {
						ps = float64(e.Truth(at).ProcessStart)
					}
					if ps == prevStart {
						for k, v := range cur {
							if p, ok := prev[k]; ok && v < p && monotonic(k) {
								t.Errorf("%s at %v: %s went down from %v to %v", e.Name(), at, k, p, v)
							}
						}
					}
					prev, prevStart = cur, ps
					if e.Format() == FormatVLLM {
						checkVLLMIdentities(t, e, at, fams)
					}
				}
			}
		})
	}
}

// monotonic tells which flattened series may never decrease.
func monotonic(k string) bool {
	if strings.HasPrefix(k, "llamacpp:") {
		return strings.Contains(k, "_total") && !strings.Contains(k, "n_tokens_max")
	}
	return strings.Contains(k, "_total") || strings.Contains(k, "_bucket") || strings.HasSuffix(k, "_count") ||
		strings.HasSuffix(k, "_sum") || strings.Contains(k, "_count{") || strings.Contains(k, "_sum{")
}

// flatten lists every sample of the body by a series key, checking the
// histogram invariants on the way.
func flatten(t *testing.T, fams map[string]*dto.MetricFamily, at time.Duration) map[string]float64 {
	out := map[string]float64{}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_SUMMARY:
				out[name+"_count"+key[len(name):]] = float64(m.GetSummary().GetSampleCount())
				out[name+"_sum"+key[len(name):]] = m.GetSummary().GetSampleSum()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[name+"_count"+key[len(name):]] = float64(h.GetSampleCount())
				out[name+"_sum"+key[len(name):]] = h.GetSampleSum()
				last, inf := uint64(0), false
				for i, b := range h.GetBucket() {
					if b.GetCumulativeCount() < last {
						t.Errorf("at %v: %s: bucket le=%v below the one before", at, key, b.GetUpperBound())
					}
					last = b.GetCumulativeCount()
					out[name+"_bucket"+key[len(name):]+"#"+string(rune('a'+i))] = float64(last)
					inf = math.IsInf(b.GetUpperBound(), 1)
				}
				if !inf || last != h.GetSampleCount() {
					t.Errorf("at %v: %s: +Inf bucket %d, _count %d", at, key, last, h.GetSampleCount())
				}
			}
		}
	}
	return out
}

// checkVLLMIdentities checks the identities a real vLLM keeps between its
// series, per label set.
func checkVLLMIdentities(t *testing.T, e *Engine, at time.Duration, fams map[string]*dto.MetricFamily) {
	tr := e.Truth(at)
	for _, set := range tr.Sets {
		l := map[string]string{"engine": set.Label}
		gen := val(t, fams, "vllm:generation_tokens_total", l)
		prompt := val(t, fams, "vllm:prompt_tokens_total", l)
		var reqs float64
		for _, r := range []string{"stop", "length", "abort"} {
			reqs += val(t, fams, "vllm:request_success_total", map[string]string{"engine": set.Label, "finished_reason": r})
		}
		if gen != set.Counters.GenerationTokens || prompt != set.Counters.PromptTokens || reqs != set.Counters.Requests {
			t.Errorf("%s at %v: body gen %v prompt %v requests %v, truth %+v", e.Name(), at, gen, prompt, reqs, set.Counters)
		}
		if q := val(t, fams, "vllm:prefix_cache_queries_total", l); q != prompt {
			t.Errorf("%s at %v: prefix_cache_queries %v != prompt tokens %v", e.Name(), at, q, prompt)
		}
		if c := metric(t, fams, "vllm:time_per_output_token_seconds", l).GetHistogram().GetSampleCount(); float64(c) != gen-reqs {
			t.Errorf("%s at %v: TPOT count %d != generated %v - requests %v", e.Name(), at, c, gen, reqs)
		}
		if s := metric(t, fams, "vllm:iteration_tokens_total", l).GetHistogram().GetSampleSum(); s != gen+prompt {
			t.Errorf("%s at %v: iteration_tokens_total_sum %v != %v", e.Name(), at, s, gen+prompt)
		}
		if c := metric(t, fams, "vllm:time_to_first_token_seconds", l).GetHistogram().GetSampleCount(); float64(c) != reqs {
			t.Errorf("%s at %v: TTFT count %d != requests %v", e.Name(), at, c, reqs)
		}
		w := val(t, fams, "vllm:num_requests_waiting", l)
		wc := val(t, fams, "vllm:num_requests_waiting_by_reason", map[string]string{"engine": set.Label, "reason": "capacity"})
		wd := val(t, fams, "vllm:num_requests_waiting_by_reason", map[string]string{"engine": set.Label, "reason": "deferred"})
		if w != wc+wd {
			t.Errorf("%s at %v: waiting %v != capacity %v + deferred %v", e.Name(), at, w, wc, wd)
		}
	}
}

// Rendering is a pure function of the offset, safe for concurrent use, and
// AppendRender appends.
func TestRenderDeterministic(t *testing.T) {
	e := DefaultEngines(t)[0]
	want := e.Render(23456 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := e.Render(23456 * time.Millisecond); !bytes.Equal(got, want) {
					t.Error("Render differs between calls")
					return
				}
				e.Render(3 * time.Second)
			}
		})
	}
	wg.Wait()
	got := e.AppendRender([]byte("x"), 23456*time.Millisecond)
	if !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Error("AppendRender does not append the body")
	}
}

// The family order follows a real vLLM server: process series first, a
// _created family right after its counter or histogram.
func TestVLLMFamilyOrder(t *testing.T) {
	body := string(DefaultEngines(t)[0].Render(12 * time.Second))
	var order []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			order = append(order, strings.Fields(name)[0])
		}
	}
	idx := func(n string) int { return slices.Index(order, n) }
	if order[0] != "python_gc_objects_collected_total" {
		t.Errorf("first family %s, want python_gc_objects_collected_total", order[0])
	}
	for _, pair := range [][2]string{
		{"vllm:prompt_tokens_total", "vllm:prompt_tokens_created"},
		{"vllm:request_success_total", "vllm:request_success_created"},
		{"vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_created"},
		{"http_requests_total", "http_requests_created"},
	} {
		if i, j := idx(pair[0]), idx(pair[1]); i < 0 || j != i+1 {
			t.Errorf("%s (at %d) should come right before %s (at %d)", pair[0], i, pair[1], j)
		}
	}
	if i, j := idx("vllm:cache_config_info"), idx("http_requests_total"); i < 0 || j < i {
		t.Errorf("vllm:cache_config_info (at %d) should come before the http_ families (at %d)", i, j)
	}
}

func TestInterTokenLatencyOption(t *testing.T) {
	e := buildOne(t, strings.Replace(handScenario, `model = "m"`, "model = \"m\"\ninter_token_latency = true", 1))
	fams := parseBody(t, e.Render(20*time.Second))
	l0 := map[string]string{"engine": "0"}
	itl := metric(t, fams, "vllm:inter_token_latency_seconds", l0).GetHistogram()
	tpot := metric(t, fams, "vllm:time_per_output_token_seconds", l0).GetHistogram()
	if itl.GetSampleCount() != tpot.GetSampleCount() || itl.GetSampleCount() == 0 {
		t.Errorf("ITL count %d, TPOT count %d", itl.GetSampleCount(), tpot.GetSampleCount())
	}
	if c := metric(t, fams, "vllm:request_time_per_output_token_seconds", l0).GetHistogram().GetSampleCount(); c != 20 {
		t.Errorf("request_time_per_output_token_seconds count %d, want 20 requests", c)
	}
}

func TestBehaviourAt(t *testing.T) {
	e := DefaultEngines(t)[0]
	for _, c := range []struct {
		at   time.Duration
		want Behaviour
	}{
		{time.Second, Behaviour{}},
		{5500 * time.Millisecond, Behaviour{Kind: EventStale, Until: 7 * time.Second, Delay: 500 * time.Millisecond}},
		{13 * time.Second, Behaviour{Kind: EventHang, Until: 14500 * time.Millisecond}},
		{14500 * time.Millisecond, Behaviour{}},
		{20 * time.Second, Behaviour{Kind: EventStatus, Until: 21 * time.Second, Code: 503}},
		{26 * time.Second, Behaviour{Kind: EventSlow, Until: 27 * time.Second, Delay: time.Second}},
	} {
		if got := e.BehaviourAt(c.at); got != c.want {
			t.Errorf("BehaviourAt(%v) = %+v, want %+v", c.at, got, c.want)
		}
	}
}

// The bodies of the default scenario at 25 s (vLLM after its label join)
// are pinned by golden files; run with -update after an intended change.
func TestGoldenBodies(t *testing.T) {
	for _, e := range DefaultEngines(t) {
		path := filepath.Join("testdata", "default-"+e.Name()+"-25s.txt")
		goldentest.Check(t, path, e.Render(25*time.Second))
	}
}

// A label set joining leaves the other sets' _created values as they were:
// a changed _created means a restart to every reader.
func TestLabelJoinKeepsCreated(t *testing.T) {
	sc, err := ParseScenario([]byte(`
[[engine]]
name = "v"
format = "vllm"
  [[engine.phase]]
  at = "0s"
  decode_tps = 100.0
  running = 1
  [[engine.event]]
  at = "10s"
  kind = "label_join"
  label = "1"
`), "join.toml")
	if err != nil {
		t.Fatal(err)
	}
	engines, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	created := func(at time.Duration) map[string]string {
		out := map[string]string{}
		for _, line := range strings.Split(string(engines[0].Render(at)), "\n") {
			name, val, _ := strings.Cut(line, " ")
			if strings.Contains(name, "_created") && !strings.Contains(name, `engine="1"`) {
				out[name] = val
			}
		}
		return out
	}
	before, after := created(9*time.Second), created(11*time.Second)
	if len(before) == 0 {
		t.Fatal("no _created series")
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s before the join, %s after", k, v, after[k])
		}
	}
}
