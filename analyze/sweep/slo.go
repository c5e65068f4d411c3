package sweep

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SLO is one service-level objective: a quantile of a latency under a
// threshold ("ttft_p99=500ms": 99 % of times to first token at or under
// 500 ms).
type SLO struct {
	Name      string  `json:"name"`      // as given: "ttft_p99"
	Metric    string  `json:"metric"`    // ttft, itl, e2e
	Quantile  float64 `json:"quantile"`  // 0.99
	Threshold float64 `json:"threshold"` // seconds
}

// Metrics are the latencies an SLO may name, each with the engine's
// histogram it is read from (engine cell base names).
var Metrics = map[string]string{
	"ttft": "time_to_first_token_seconds",
	"itl":  "inter_token_latency_seconds",
	"e2e":  "e2e_request_latency_seconds",
}

// ParseSLOs reads "ttft_p99=500ms,itl_p99=50ms": each a metric of
// Metrics, a quantile p1..p99.9, and a positive duration.
func ParseSLOs(s string) ([]SLO, error) {
	var out []SLO
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		o, err := ParseSLO(part)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, errors.New("no SLO given (want e.g. ttft_p99=500ms)")
	}
	return out, nil
}

// ParseSLO reads one "METRIC_pNN=DURATION".
func ParseSLO(s string) (SLO, error) {
	name, val, ok := strings.Cut(s, "=")
	if !ok {
		return SLO{}, fmt.Errorf("%q: want METRIC_pNN=DURATION, e.g. ttft_p99=500ms", s)
	}
	name = strings.TrimSpace(name)
	metric, q, ok := strings.Cut(name, "_p")
	if _, known := Metrics[metric]; !ok || !known {
		return SLO{}, fmt.Errorf("%q: the metric is one of ttft, itl, e2e with a quantile, e.g. ttft_p99", name)
	}
	pct, err := strconv.ParseFloat(q, 64)
	if err != nil || pct <= 0 || pct >= 100 {
		return SLO{}, fmt.Errorf("%q: the quantile is p1 .. p99.9", name)
	}
	d, err := time.ParseDuration(strings.TrimSpace(val))
	if err != nil || d <= 0 {
		return SLO{}, fmt.Errorf("%q: %q is not a positive duration like 500ms", name, val)
	}
	return SLO{Name: name, Metric: metric, Quantile: pct / 100, Threshold: d.Seconds()}, nil
}
