package findings

import (
	"strings"

	"github.com/llmrec/llmrec/analyze/engine"
)

// Counter accumulates one counter series over a run, summed over its label
// sets: how much it rose (Prometheus' increase: a reset counts from 0, a
// label set that joins adds nothing until it has a baseline) and what it
// read.
type Counter struct {
	Increase      float64 // Σ over label sets of the rises between polls
	Resets        int     // decreases, each read as a restart from 0
	Polls         int     // polls that carried the series
	FirstT, LastT float64 // the first and last of them
	First, Last   float64 // Σ over label sets as read at those polls
	Max           float64 // the largest Σ read

	// The last reading of each label set: the first few in a slice (a
	// scan of a handful is cheaper than hashing, once a poll), the rest
	// in a map.
	few   []setReading
	more  map[int32]float64
	curT  float64
	cur   float64
	base  float64 // Σ of the previous readings of the sets that rose at curT
	open  bool
	first bool
}

// Observe adds the reading v of label set set at poll time t. Readings of
// one poll share t; polls come in time order.
func (c *Counter) Observe(t float64, set int32, v float64) {
	if !c.open || t != c.curT {
		c.flush()
		c.open, c.curT, c.cur, c.base = true, t, 0, 0
	}
	c.cur += v
	p, seen := c.swap(set, v)
	switch {
	case !seen:
		// A set's first reading is its baseline: it adds nothing.
	case v >= p:
		c.Increase += v - p
		c.base += p
	default:
		// A decrease is a restart: the counter counts from 0 again.
		c.Increase += v
		c.Resets++
	}
}

// setReading is a label set's last reading.
type setReading struct {
	set int32
	v   float64
}

// fewSets is how many label sets a Counter keeps in its slice.
const fewSets = 8

// swap keeps v as set's last reading and returns the one before (seen
// false: none).
func (c *Counter) swap(set int32, v float64) (float64, bool) {
	for i := range c.few {
		if r := &c.few[i]; r.set == set {
			p := r.v
			r.v = v
			return p, true
		}
	}
	if len(c.few) < fewSets {
		c.few = append(c.few, setReading{set, v})
		return 0, false
	}
	if c.more == nil {
		c.more = make(map[int32]float64)
	}
	p, seen := c.more[set]
	c.more[set] = v
	return p, seen
}

// Restart says the target restarted before the poll at t, whose readings
// have been observed: they count from 0, a new process's, even those that
// passed the old process's value before the poll (which Observe took for
// a rise). Polls that did not carry the series are left alone.
func (c *Counter) Restart(t float64) {
	// The series was not in that poll: nothing to count again.
	if !c.open || c.curT != t {
		return
	}
	c.Increase += c.base
	if c.base > 0 {
		c.Resets++
	}
	c.base = 0
}

// Done closes the last poll; call it once after the last Observe.
func (c *Counter) Done() { c.flush() }

func (c *Counter) flush() {
	if !c.open {
		return
	}
	c.open = false
	c.Polls++
	if !c.first {
		c.first, c.FirstT, c.First, c.Max = true, c.curT, c.cur, c.cur
	}
	c.LastT, c.Last = c.curT, c.cur
	c.Max = max(c.Max, c.cur)
}

// EnergySource is a series that measures energy or power, with the factor
// that turns its unit into joules (a counter) or watts (a gauge).
type EnergySource struct {
	Series  string
	Counter bool    // a cumulative energy counter; else a power gauge
	Scale   float64 // to joules or watts
	Unit    string  // as published
}

// EnergySources are the energy and power series the findings read, from
// whatever target publishes them (a DCGM exporter, Triton, nvidia_gpu_exporter
// recorded as a target of its own).
var EnergySources = []EnergySource{
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", true, 1e-3, "mJ"},
	{"DCGM_FI_DEV_POWER_USAGE", false, 1, "W"},
	{"nv_energy_consumption", true, 1, "J"},
	{"nv_gpu_power_usage", false, 1, "W"},
	{"nvidia_smi_energy_joules_total", true, 1, "J"},
	{"nvidia_smi_power_draw_watts", false, 1, "W"},
}

// EnergySourceOf returns the energy source series name is, if any.
func EnergySourceOf(series string) (EnergySource, bool) {
	for _, s := range EnergySources {
		if s.Series == series {
			return s, true
		}
	}
	return EnergySource{}, false
}

// Prefill series of vLLM: the KV computed per completed request and the
// time each spent prefilling, both histograms over completed requests.
const (
	PrefillComputedSum = "vllm:request_prefill_kv_computed_tokens_sum"
	PrefillComputedCnt = "vllm:request_prefill_kv_computed_tokens_count"
	PrefillTimeSum     = "vllm:request_prefill_time_seconds_sum"
	PrefillTimeCnt     = "vllm:request_prefill_time_seconds_count"
	CacheConfigInfo    = "vllm:cache_config_info"
)

// Watched reports whether the findings accumulate counter series over the
// run (see Target.Counters), whatever the engine.
func Watched(series string) bool {
	switch series {
	case PrefillComputedSum, PrefillComputedCnt, PrefillTimeSum, PrefillTimeCnt:
		return true
	}
	if IsFlops(series) {
		return true
	}
	if s, ok := EnergySourceOf(series); ok && s.Counter {
		return true
	}
	for _, id := range engine.Engines {
		acc, dr, drafts := engine.SpecCounters(id)
		for _, l := range [][]string{acc, dr, drafts} {
			for _, n := range l {
				if n == series {
					return true
				}
			}
		}
	}
	return false
}

// IsFlops reports whether a counter series counts floating-point work
// (vllm:estimated_flops_per_gpu_total and the like).
func IsFlops(series string) bool {
	return strings.Contains(strings.ToLower(series), "flops")
}
