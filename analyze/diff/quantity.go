package diff

import (
	"fmt"
	"github.com/llmrec/llmrec/internal/suggest"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Quantity is one compared number of a phase: a phase figure (package
// phases) and which way is better.
type Quantity struct {
	// Key names the quantity in flags and TOML (--threshold ttft_p99=10%,
	// --fail-on decode) and in the JSON.
	Key string `json:"key"`
	// Figure is the phase figure's name (package phases).
	Figure string `json:"figure"`
	// Cell is the per-poll cell drawn beside it on the page; "" none.
	Cell  string `json:"-"`
	Label string `json:"label"`
	Unit  string `json:"unit"`
	// Better is "higher" or "lower".
	Better string `json:"better"`
	// Tokens is true for quantities counted in tokens: a tokenizer seam
	// makes them unlike.
	Tokens bool `json:"-"`
	// Points, for a ratio, is its noise floor in absolute points of the
	// 0–1 scale (0.05: 5 points): the ratio is compared by the shift of
	// its values (candidate − baseline) and a verdict needs the shift's
	// whole interval beyond ±Points, not a relative change (KV usage
	// 2.4 % → 2.6 % is +8 % but 0.2 points). 0: compared relatively.
	Points float64 `json:"points,omitempty"`
}

// DefaultPoints is the noise floor of the ratios: 5 points.
const DefaultPoints = 0.05

// Directions of Quantity.Better.
const (
	Higher = "higher"
	Lower  = "lower"
)

// Quantities are the compared quantities, in the order rows list them. A
// latency histogram's exact mean (Δsum/Δcount) is a row of its own before
// its quantiles: where both sides' quantile falls in one bucket the
// quantile row cannot decide, and the mean can.
var Quantities = []Quantity{
	{Key: "decode", Figure: "decode_tokens_per_second", Cell: "decode_tokens_per_second", Label: "decode tokens/s", Unit: "tokens/s", Better: Higher, Tokens: true},
	{Key: "prompt", Figure: "prompt_tokens_per_second", Cell: "prompt_tokens_per_second", Label: "prompt tokens/s", Unit: "tokens/s", Better: Higher, Tokens: true},
	{Key: "requests", Figure: "requests_finished_per_second", Cell: "requests_finished_per_second", Label: "requests finished/s", Unit: "requests/s", Better: Higher},
	{Key: "ttft_mean", Figure: "time_to_first_token_seconds__mean", Cell: "time_to_first_token_seconds__mean", Label: "TTFT mean", Unit: "s", Better: Lower},
	{Key: "ttft_p50", Figure: "time_to_first_token_seconds__p50", Cell: "time_to_first_token_seconds__p50", Label: "TTFT p50", Unit: "s", Better: Lower},
	{Key: "ttft_p99", Figure: "time_to_first_token_seconds__p99", Cell: "time_to_first_token_seconds__p99", Label: "TTFT p99", Unit: "s", Better: Lower},
	{Key: "tpot_mean", Figure: "time_per_output_token_seconds__mean", Cell: "time_per_output_token_seconds__mean", Label: "TPOT mean", Unit: "s", Better: Lower},
	{Key: "tpot_p50", Figure: "time_per_output_token_seconds__p50", Cell: "time_per_output_token_seconds__p50", Label: "TPOT p50", Unit: "s", Better: Lower},
	{Key: "tpot_p99", Figure: "time_per_output_token_seconds__p99", Cell: "time_per_output_token_seconds__p99", Label: "TPOT p99", Unit: "s", Better: Lower},
	{Key: "itl_mean", Figure: "inter_token_latency_seconds__mean", Cell: "inter_token_latency_seconds__mean", Label: "ITL mean", Unit: "s", Better: Lower},
	{Key: "itl_p50", Figure: "inter_token_latency_seconds__p50", Cell: "inter_token_latency_seconds__p50", Label: "ITL p50", Unit: "s", Better: Lower},
	{Key: "itl_p99", Figure: "inter_token_latency_seconds__p99", Cell: "inter_token_latency_seconds__p99", Label: "ITL p99", Unit: "s", Better: Lower},
	{Key: "e2e_mean", Figure: "e2e_request_latency_seconds__mean", Cell: "e2e_request_latency_seconds__mean", Label: "e2e mean", Unit: "s", Better: Lower},
	{Key: "e2e_p50", Figure: "e2e_request_latency_seconds__p50", Cell: "e2e_request_latency_seconds__p50", Label: "e2e p50", Unit: "s", Better: Lower},
	{Key: "e2e_p99", Figure: "e2e_request_latency_seconds__p99", Cell: "e2e_request_latency_seconds__p99", Label: "e2e p99", Unit: "s", Better: Lower},
	{Key: "queue_mean", Figure: "request_queue_time_seconds__mean", Cell: "request_queue_time_seconds__mean", Label: "queue mean", Unit: "s", Better: Lower},
	{Key: "queue_p50", Figure: "request_queue_time_seconds__p50", Cell: "request_queue_time_seconds__p50", Label: "queue p50", Unit: "s", Better: Lower},
	{Key: "queue_p99", Figure: "request_queue_time_seconds__p99", Cell: "request_queue_time_seconds__p99", Label: "queue p99", Unit: "s", Better: Lower},
	{Key: "preemptions", Figure: "preemptions_per_second", Cell: "preemptions_per_second", Label: "preemptions/s", Unit: "/s", Better: Lower},
	{Key: "kv_max", Figure: "kv_cache_usage_ratio__max", Cell: "kv_cache_usage_ratio", Label: "max KV usage", Unit: "ratio", Better: Lower, Points: DefaultPoints},
	{Key: "prefix_hit", Figure: "prefix_cache_hit_ratio", Cell: "prefix_cache_hit_ratio", Label: "prefix-hit ratio", Unit: "ratio", Better: Higher, Tokens: true, Points: DefaultPoints},
}

// QuantityKeys are the keys of Quantities, in order.
// The client's (ClientQuantities) follow the server's.
func QuantityKeys() []string {
	out := make([]string, 0, len(Quantities)+len(ClientQuantities))
	for _, q := range append(slices.Clip(Quantities), ClientQuantities...) {
		out = append(out, q.Key)
	}
	return out
}

// quantity returns the quantity of key, the server's or the client's.
func quantity(key string) (Quantity, bool) {
	all := append(slices.Clip(Quantities), ClientQuantities...)
	i := slices.IndexFunc(all, func(q Quantity) bool { return q.Key == key })
	if i < 0 {
		return Quantity{}, false
	}
	return all[i], true
}

// DefaultThreshold is the noise threshold of every quantity unless given:
// a change whose interval reaches inside ±5 % is no change.
const DefaultThreshold = 0.05

// Thresholds are the noise thresholds, as fractions: Default for every
// quantity, By for those given by key.
type Thresholds struct {
	Default float64            `json:"default"`
	By      map[string]float64 `json:"by_quantity"`
}

// Of is the threshold of quantity key.
func (t Thresholds) Of(key string) float64 {
	if v, ok := t.By[key]; ok {
		return v
	}
	return t.Default
}

// For is the threshold of q: the one given for its key, else its floor in
// points for a ratio compared in points, else the default.
func (t Thresholds) For(q Quantity) float64 {
	if v, ok := t.By[q.Key]; ok {
		return v
	}
	if q.Points > 0 {
		return q.Points
	}
	return t.Default
}

// ParseThreshold reads one --threshold value into t: "5%", "0.05", or
// KEY=5%. Errors name the quantities when the key is unknown.
func (t *Thresholds) Set(s string) error {
	key, val, keyed := strings.Cut(s, "=")
	if !keyed {
		key, val = "", s
	}
	v, err := ParsePercent(val)
	if err != nil {
		return err
	}
	if !keyed {
		t.Default = v
		return nil
	}
	key = strings.TrimSpace(key)
	if _, ok := quantity(key); !ok {
		return fmt.Errorf("unknown quantity %q%s (quantities: %s)", key, Suggest(key, QuantityKeys()), strings.Join(QuantityKeys(), ", "))
	}
	if t.By == nil {
		t.By = map[string]float64{}
	}
	t.By[key] = v
	return nil
}

// ParsePercent reads "5%" or "5 %" as 0.05 and a bare number as a fraction
// ("0.05"); it must be in [0, 10) (a tenfold change).
func ParsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	num, pct := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage like 5%%", s)
	}
	if pct {
		v /= 100
	}
	if !(v >= 0 && v < 10) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a threshold between 0%% and 1000%%", s)
	}
	return v, nil
}

// Suggest says " (did you mean X?)" for the word of words closest to w, at
// most two edits away; "" when none is.
func Suggest(w string, words []string) string {
	if best := suggest.Closest(w, words); best != "" {
		return " (did you mean " + best + "?)"
	}
	return ""
}
