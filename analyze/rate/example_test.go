package rate_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
)

// One estimator per target and span: observe each poll, then read its cells.
// The stalled reply at 1015.25 is followed by the poll loop's 0.22 s catch-up,
// which the floor refuses instead of printing 713 tokens / 0.22 s.
func Example() {
	e := rate.New(rate.Config{Span: 10})
	key := rate.Key{Series: "llamacpp:tokens_predicted_total"}
	for _, s := range []struct{ t, v float64 }{{1000, 0}, {1015.25, 114}, {1015.47, 827}, {1017.47, 933}} {
		e.Observe(rate.Poll{T: s.t, Samples: []rate.Sample{{Key: key, Value: s.v}}})
		c := e.Rate(key.Series, nil)
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%.2f %s %s", s.t, c.Value, c.Reason)))
	}
	b, _ := json.Marshal(e.Rate(key.Series, nil))
	fmt.Println(string(b))
	// Output:
	// 1000.00 null no_baseline
	// 1015.25 7.475409836065574
	// 1015.47 null floor
	// 1017.47 53
	// {"value":53,"source":"computed:Δllamacpp:tokens_predicted_total/Δt","derived":true,"window":2}
}

// Label sets are keyed separately: a joining set lends nothing, and a match
// function picks sets by their canonical labels.
func ExampleEstimator_Rate() {
	e := rate.New(rate.Config{Span: 10})
	e0 := rate.Key{Series: "vllm:generation_tokens_total", Labels: rate.Labels("engine", "0")}
	e1 := rate.Key{Series: "vllm:generation_tokens_total", Labels: rate.Labels("engine", "1")}
	e.Observe(rate.Poll{T: 0, Samples: []rate.Sample{{Key: e0, Value: 100}}})
	e.Observe(rate.Poll{T: 10, Samples: []rate.Sample{{Key: e0, Value: 300}, {Key: e1, Value: 500000}}})
	c := e.Rate("vllm:generation_tokens_total", nil)
	fmt.Println(c.Value, c.Window, c.Notes)
	only1 := e.Rate("vllm:generation_tokens_total", func(l string) bool { return l == e1.Labels })
	fmt.Println(only1.Value, only1.Reason)
	// Output:
	// 20 10 [no_baseline {engine="1"}]
	// null no_baseline
}

func ExampleKVSeverity() {
	for _, r := range []float64{0.74, 0.75, 0.9} {
		fmt.Println(r, rate.KVSeverity(r))
	}
	// Output:
	// 0.74 ok
	// 0.75 warn
	// 0.9 fail
}
