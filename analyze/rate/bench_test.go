package rate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// benchTarget is a vLLM-like target with 8 engines: 4 counters and 3
// histograms of 12 buckets each per engine, 368 samples a poll.
func benchTarget() Poll {
	var p Poll
	for e := range 8 {
		engine := fmt.Sprint(e)
		for _, c := range []string{"vllm:generation_tokens_total", "vllm:prompt_tokens_total",
			"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"} {
			p.Samples = append(p.Samples, Sample{Key: Key{c, Labels("engine", engine, "model_name", "m")}})
		}
		for _, h := range []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
			"vllm:e2e_request_latency_seconds"} {
			for _, le := range []string{"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "1", "+Inf"} {
				p.Samples = append(p.Samples, Sample{Key: Key{h + "_bucket", Labels("engine", engine, "le", le, "model_name", "m")}})
			}
			p.Samples = append(p.Samples, Sample{Key: Key{h + "_count", Labels("engine", engine, "model_name", "m")}},
				Sample{Key: Key{h + "_sum", Labels("engine", engine, "model_name", "m")}})
		}
	}
	return p
}

// advance moves the poll to step i: 2 s cadence, every counter growing at
// its own steady rate (cumulative buckets grow with their bound).
func advance(p *Poll, i int) {
	p.T = 1e9 + 2*float64(i)
	p.Start = p.T - 0.01
	for j := range p.Samples {
		p.Samples[j].Value = float64(i) * float64(1+j%17)
	}
}

func benchReplay(b *testing.B, query bool) {
	e := New(Config{Span: 10})
	p := benchTarget()
	// The buckets are registered as a replay's tracker does: SetBucket.
	for _, s := range p.Samples {
		if id := e.Register(s.Key); strings.HasSuffix(s.Key.Series, "_bucket") {
			e.SetBucket(id)
		}
	}
	for i := range 16 { // warm: every key seen, histories at their steady length
		advance(&p, i)
		e.Observe(p)
	}
	i := 16
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		advance(&p, i)
		e.Observe(p)
		if query {
			e.Rate("vllm:generation_tokens_total", nil)
			e.Rate("vllm:prompt_tokens_total", nil)
			e.Ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", nil)
			e.Histogram("vllm:time_to_first_token_seconds", nil)
		}
		i++
	}
	b.ReportMetric(float64(b.N*len(p.Samples))/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkObserve is the replay hot path: one poll of 368 samples.
func BenchmarkObserve(b *testing.B) { benchReplay(b, false) }

// BenchmarkObserveQuery adds what a poll's analysis asks for: two rates, a
// ratio and a histogram.
func BenchmarkObserveQuery(b *testing.B) { benchReplay(b, true) }

// BenchmarkObserveUnordered is the worst case of the key lookup: samples in
// a different order every poll and keys that are equal strings but not the
// same ones, so every sample costs a map lookup.
func BenchmarkObserveUnordered(b *testing.B) {
	e := New(Config{Span: 10})
	p := benchTarget()
	var polls [2]Poll
	for c := range polls {
		polls[c].Samples = slices.Clone(p.Samples)
		for j := range polls[c].Samples {
			k := &polls[c].Samples[j].Key
			k.Series, k.Labels = strings.Clone(k.Series), strings.Clone(k.Labels)
		}
		rand.New(rand.NewPCG(uint64(c), 1)).Shuffle(len(p.Samples), func(i, j int) {
			polls[c].Samples[i], polls[c].Samples[j] = polls[c].Samples[j], polls[c].Samples[i]
		})
	}
	for i := range 16 {
		advance(&polls[i%2], i)
		e.Observe(polls[i%2])
	}
	i := 16
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		advance(&polls[i%2], i)
		e.Observe(polls[i%2])
		i++
	}
	b.ReportMetric(float64(b.N*len(p.Samples))/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkObserveCold is the replay's path, Poll.Readings of registered
// keys, with the estimator's state out of the cache, as in a replay, where
// a target's whole analysis runs between two of its polls: 64 targets,
// about 5 MiB of key states and histories, observed in turn.
func BenchmarkObserveCold(b *testing.B) {
	const targets = 64
	es := make([]*Estimator, targets)
	p := benchTarget()
	var r Poll
	for t := range es {
		es[t] = New(Config{Span: 10})
		r.Readings = r.Readings[:0]
		for _, s := range p.Samples {
			id := es[t].RegisterNew(s.Key)
			if strings.HasSuffix(s.Key.Series, "_bucket") {
				es[t].SetBucket(id)
			}
			r.Readings = append(r.Readings, Reading{ID: id})
		}
	}
	// advance's values and times, moved into the readings.
	step := func(i int) {
		advance(&p, i)
		r.T, r.Start = p.T, p.Start
		for j := range r.Readings {
			r.Readings[j].Value = p.Samples[j].Value
		}
	}
	for i := range 16 {
		step(i)
		for _, e := range es {
			e.Observe(r)
		}
	}
	i, t := 16, 0
	step(i)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		es[t].Observe(r)
		if t++; t == targets {
			t, i = 0, i+1
			step(i)
		}
	}
	b.ReportMetric(float64(b.N*len(r.Readings))/b.Elapsed().Seconds(), "samples/s")
}
