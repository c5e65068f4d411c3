package phases

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// BenchmarkLogPollDay logs a day of one vLLM target's polls at 2 s
// (43,200): four latency histograms of 20 buckets and five counters, a
// few requests finishing each poll (the buckets at and above theirs rise
// together), and a gauge the log does not keep. It reports the bytes the
// log's chunks hold per poll.
func BenchmarkLogPollDay(b *testing.B) {
	const polls = 43200
	var series []engine.Series
	type hist struct{ first, n int }
	var hists []hist
	for _, f := range []string{"vllm:e2e_request_latency_seconds", "vllm:time_to_first_token_seconds",
		"vllm:time_per_output_token_seconds", "vllm:request_queue_time_seconds"} {
		h := hist{first: len(series), n: 20}
		for j := range h.n {
			series = append(series, engine.Series{Family: f, Type: "histogram", Name: f + "_bucket",
				Labels: fmt.Sprintf(`{"le":"%g"}`, 0.01*float64(int(1)<<j))})
		}
		series = append(series, engine.Series{Family: f, Type: "histogram", Name: f + "_count", Labels: "{}"},
			engine.Series{Family: f, Type: "histogram", Name: f + "_sum", Labels: "{}"})
		hists = append(hists, h)
	}
	counters := len(series)
	for _, f := range []string{"vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:request_success_total",
		"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"} {
		series = append(series, engine.Series{Family: f, Type: "counter", Name: f, Labels: "{}"})
	}
	series = append(series, engine.Series{Family: "vllm:num_requests_running", Type: "gauge",
		Name: "vllm:num_requests_running", Labels: "{}"})
	ids := make([]int32, len(series))
	for i := range ids {
		ids[i] = int32(i)
	}
	// The polls' readings, made once.
	r := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, polls*len(series))
	cur := make([]float64, len(series))
	for i := range polls {
		for _, h := range hists {
			for range r.IntN(4) {
				j := r.IntN(h.n)
				for k := j; k < h.n; k++ {
					cur[h.first+k]++
				}
				cur[h.first+h.n]++
				cur[h.first+h.n+1] += 0.01 * float64(int(1)<<j) * r.Float64()
			}
		}
		for k := counters; k < len(series)-1; k++ {
			cur[k] += float64(r.IntN(3000))
		}
		cur[len(series)-1] = float64(r.IntN(64))
		copy(vals[i*len(series):], cur)
	}
	cells := make(engine.Cells, len(engine.Canonical))
	for i := range cells {
		cells[i].Cell.Cell = rate.Cell{Value: rate.Some(float64(i))}
	}
	b.ReportAllocs()
	var l *Log
	for b.Loop() {
		l = NewLog(polls)
		for i, s := range series {
			l.Key(ids[i], s)
		}
		for i := range polls {
			l.Poll(ids, vals[i*len(series):(i+1)*len(series)], cells, "vllm", false)
		}
	}
	held := 0
	for _, c := range l.chunks {
		held += cap(c)
	}
	b.ReportMetric(float64(held)/polls, "chunk-B/poll")
	b.ReportMetric(float64(len(l.Series)), "logged")
}
