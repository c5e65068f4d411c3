package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/rate"
)

// A decode-only tracker returns the decode cell alone, as the full one
// computes it; an engine without a decode counter says it does not export
// one; an empty poll is absent.
func TestDecodeOnly(t *testing.T) {
	for _, c := range []struct {
		hint, body string
		want       rate.Num
	}{
		{"vllm", "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\"} %d\n", rate.Some(50)},
		{"llamacpp", "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %d\n", rate.Some(50)},
		{"sglang", "# TYPE sglang:generation_tokens_total counter\nsglang:generation_tokens_total %d\n", rate.Some(50)},
		{"tgi", "# TYPE tgi_request_generated_tokens histogram\ntgi_request_generated_tokens_sum %d\ntgi_request_generated_tokens_count 1\n", rate.Some(50)},
		{"trtllm", "# TYPE nv_trt_llm_request_metrics gauge\nnv_trt_llm_request_metrics{request_type=\"max\"} %d\n", rate.Num{}},
	} {
		full, only := NewTracker(c.hint, rate.Config{Span: 2}), NewTracker(c.hint, rate.Config{Span: 2})
		only.DecodeOnly()
		var a, b Cells
		for i := range 3 {
			body := fmt.Sprintf(c.body, 100*i)
			a, b = feed(t, full, 1000+2*float64(i), body), feed(t, only, 1000+2*float64(i), body)
		}
		if len(b) != 1 || b[0].Name != DecodeTokensPerSecond || b[0].Cell.Value != c.want {
			t.Errorf("%s: decode-only cells %+v, want %v", c.hint, b, c.want)
		}
		if fc := cell(t, a, DecodeTokensPerSecond); fc.Value != b[0].Cell.Value || fc.Source != b[0].Cell.Source {
			t.Errorf("%s: full %+v, decode-only %+v", c.hint, fc, b[0].Cell)
		}
		if !c.want.Valid && b[0].Cell.Reason != ReasonNotExported {
			t.Errorf("%s: %+v", c.hint, b[0].Cell)
		}
	}
	only := NewTracker("vllm", rate.Config{})
	only.DecodeOnly()
	only.Begin(1000, 999.9)
	if cs := only.End(nil); len(cs) != 1 || cs[0].Cell.Reason != rate.ReasonAbsent {
		t.Errorf("empty poll %+v", cs)
	}
}

// Prefix caching is on when any engine's cache config says so; the KV
// capacity adds up over the engines.
func TestCacheConfigOverEngines(t *testing.T) {
	tr := NewTracker("", rate.Config{})
	cs := feed(t, tr, 1000, `# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",enable_prefix_caching="False",engine="0",num_gpu_blocks="100"} 1.0
vllm:cache_config_info{block_size="16",enable_prefix_caching="True",engine="1",num_gpu_blocks="100"} 1.0
vllm:cache_config_info{block_size="16",enable_prefix_caching="True",engine="2",num_gpu_blocks="100"} 1.0
`)
	if c := cell(t, cs, PrefixCachingEnabled); c.Value != rate.Some(1) {
		t.Errorf("prefix caching %+v", c)
	}
	if c := cell(t, cs, KVCacheCapacityTokens); c.Value != rate.Some(4800) {
		t.Errorf("capacity %+v", c)
	}
}

func TestSpecCounters(t *testing.T) {
	for id, want := range map[string]string{VLLM: "vllm:spec_decode_num_accepted_tokens_total",
		NIM: "spec_decode_num_accepted_tokens_total", LlamaCpp: lcAccepted[0]} {
		acc, dr, _ := SpecCounters(id)
		if len(acc) == 0 || acc[0] != want || len(dr) == 0 {
			t.Errorf("%s: %v %v", id, acc, dr)
		}
	}
	if a, d, r := SpecCounters(SGLang); a != nil || d != nil || r != nil {
		t.Error("SGLang has spec counters")
	}
	if _, _, r := SpecCounters(VLLMV0); !slices.Contains(r, "vllm:spec_decode_num_drafts_total") {
		t.Error("vLLM drafts")
	}
}

// The tests read under strictFeeds: a reader that reads a counter of a
// family its catalog says feeds no cell panics.
func init() { strictFeeds = true }

// Once the engine is decided, only the counters of families its reader
// reads are fed to the estimator; before, every counter is.
func TestFeedsOnlyReadFamilies(t *testing.T) {
	body := func(gen, n float64) string {
		return "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total " + fmtG(gen) + "\n" +
			"# TYPE vllm:request_params_n histogram\n" +
			"vllm:request_params_n_bucket{le=\"1\"} " + fmtG(n) + "\nvllm:request_params_n_bucket{le=\"+Inf\"} " + fmtG(n) + "\n" +
			"vllm:request_params_n_count " + fmtG(n) + "\nvllm:request_params_n_sum " + fmtG(n) + "\n"
	}
	tr := NewTracker("", rate.Config{})
	feed(t, tr, 100, body(0, 0))
	cs := feed(t, tr, 102, body(100, 4))
	want(t, cs, DecodeTokensPerSecond, 50, "")
	if id, _ := tr.Engine(); id != VLLM {
		t.Fatalf("engine %s", id)
	}
	for i := range tr.keys {
		ks := &tr.keys[i]
		if fed := tr.vals[i].est >= 0; fed != (ks.Family == "vllm:generation_tokens_total") || !ks.counter {
			t.Errorf("%s%s: counter %v, fed %v", ks.Name, ks.rkey.Labels, ks.counter, fed)
		}
	}
	// A reader reading the histogram would read it without history.
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "vllm:request_params_n_count") {
			t.Errorf("recovered %v", r)
		}
	}()
	q := &query{t: tr, est: tr.est}
	q.fed("vllm:generation_tokens_total", "vllm:request_params_n_count")
}

// Without strictFeeds the check costs nothing and says nothing.
func TestFedUnchecked(t *testing.T) {
	strictFeeds = false
	defer func() { strictFeeds = true }()
	tr := NewTracker("vllm", rate.Config{})
	q := &query{t: tr, est: tr.est}
	q.fed("anything")
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// A series the reader asked for while it was absent is found once it
// appears: the memo of last poll's lookups keeps no stale "none".
func TestSeriesAppearsAfterAskedFor(t *testing.T) {
	old := "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.5\n" +
		"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 1\n"
	both := old + "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.25\n"
	tr := NewTracker("vllm", rate.Config{})
	for i, c := range []struct {
		body, source string
		v            float64
	}{{old, "vllm:gpu_cache_usage_perc", 0.5}, {old, "vllm:gpu_cache_usage_perc", 0.5},
		{both, "vllm:kv_cache_usage_perc", 0.25}, {old, "vllm:gpu_cache_usage_perc", 0.5}} {
		cs := feed(t, tr, 100+2*float64(i), c.body)
		if kv := want(t, cs, KVCacheUsageRatio, c.v, ""); kv.Source != c.source {
			t.Errorf("poll %d: kv from %s, want %s", i, kv.Source, c.source)
		}
	}
}

// A histogram two cells read (vLLM's pre-0.11 time_per_output_token_seconds,
// as ITL and as TPOT) is computed once a poll: both cells carry the
// estimator's answer for that poll, never the poll before's.
func TestSharedHistogramEachPoll(t *testing.T) {
	const body = `# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.01"} %d
vllm:time_per_output_token_seconds_bucket{le="0.1"} %d
vllm:time_per_output_token_seconds_bucket{le="+Inf"} %d
vllm:time_per_output_token_seconds_count %d
vllm:time_per_output_token_seconds_sum %g
`
	tr := NewTracker(VLLM, rate.Config{Span: 10})
	// The same series, fed alone to an estimator of the same span.
	ref := rate.New(rate.Config{Span: 10})
	var last rate.Num
	for i, n := range []int{0, 10, 40, 40, 100} {
		T := 1000 + 2*float64(i)
		cs := feed(t, tr, T, fmt.Sprintf(body, n/4, n/2, n, n, 0.05*float64(n)))
		var p rate.Poll
		p.T, p.Start = T, T-0.01
		for _, s := range []struct {
			name, labels string
			v            float64
		}{{"_bucket", rate.Labels("le", "0.01"), float64(n / 4)}, {"_bucket", rate.Labels("le", "0.1"), float64(n / 2)},
			{"_bucket", rate.Labels("le", "+Inf"), float64(n)}, {"_count", "", float64(n)}, {"_sum", "", 0.05 * float64(n)}} {
			p.Samples = append(p.Samples, rate.Sample{Key: rate.Key{Series: "vllm:time_per_output_token_seconds" + s.name, Labels: s.labels}, Value: s.v})
		}
		ref.Observe(p)
		h := ref.Histogram("vllm:time_per_output_token_seconds", nil)
		for k, c := range []rate.Cell{h.Count, h.Mean, h.P50, h.P95, h.P99} {
			for _, base := range []string{ITL, TPOT} {
				got := cell(t, cs, HistCells(base)[k])
				if got.Value != c.Value || got.Window != c.Window || got.Reason != c.Reason || got.Source != c.Source {
					t.Errorf("poll %d %s: %+v, want %+v", i, HistCells(base)[k], got.Cell, c)
				}
			}
		}
		if i == 2 && cell(t, cs, ITL+SuffixCount).Value == last {
			t.Errorf("poll %d: ITL count %v did not move from the poll before", i, last)
		}
		last = cell(t, cs, ITL+SuffixCount).Value
	}
}
