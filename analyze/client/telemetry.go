package client

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/redact"
)

// PowerSample is one GPU's reading in one scrape of the client's
// telemetry.
type PowerSample struct {
	T float64 `json:"t"` // Unix seconds, time of collection
	// GPU is the GPU's UUID (else its source and index).
	GPU string `json:"gpu"`
	// Source is where it was scraped (redacted URL).
	Source string   `json:"source"`
	Watts  rate.Num `json:"watts"`
	// EnergyJ is the GPU's energy counter, joules.
	EnergyJ rate.Num `json:"energy_j"`
}

type telemetryLine struct {
	TimestampNS json.RawMessage `json:"timestamp_ns"`
	DCGMURL     string          `json:"dcgm_url"`
	SourceURL   string          `json:"telemetry_source_url"`
	GPUIndex    *int            `json:"gpu_index"`
	GPUUUID     string          `json:"gpu_uuid"`
	Data        map[string]any  `json:"telemetry_data"`
}

// readTelemetry reads AIPerf's gpu_telemetry_export.jsonl.
func readTelemetry(data []byte, file string) (*Run, error) {
	run := &Run{Meta: Meta{Tool: "AIPerf", Level: LevelTelemetry, Schema: "gpu_telemetry_export.jsonl (DCGM scrapes)",
		TimeBase: "Unix epoch ns: timestamp_ns (time of collection)", Aligned: "by each sample's epoch time"}}
	err := eachLine(data, run, func(line []byte, n int) error {
		var l telemetryLine
		if err := json.Unmarshal(line, &l); err != nil {
			return lineErr(file, n, err)
		}
		ns, ok, err := jsonInt(l.TimestampNS)
		if err != nil || !ok {
			return lineErr(file, n, fmt.Errorf("timestamp_ns: missing or not a number"))
		}
		if _, err := epochSeconds(float64(ns), "ns"); err != nil {
			return lineErr(file, n, fmt.Errorf("timestamp_ns: %w", err))
		}
		src := l.SourceURL
		if src == "" {
			src = l.DCGMURL
		}
		s := PowerSample{T: nsSeconds(ns), GPU: l.GPUUUID, Source: redact.URL(src)}
		if s.GPU == "" {
			if l.GPUIndex == nil {
				return lineErr(file, n, fmt.Errorf("neither gpu_uuid nor gpu_index"))
			}
			s.GPU = fmt.Sprintf("%s#%d", s.Source, *l.GPUIndex)
		}
		if v, ok := l.Data["gpu_power_usage"].(float64); ok {
			s.Watts = rate.Some(v)
		}
		if v, ok := l.Data["energy_consumption"].(float64); ok {
			s.EnergyJ = rate.Some(v * 1e6) // DCGM's energy in MJ
		}
		if !s.Watts.Valid && !s.EnergyJ.Valid {
			run.skip("no gpu_power_usage nor energy_consumption", n)
			return nil
		}
		run.Power = append(run.Power, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	run.note("power gpu_power_usage in W; energy_consumption in MJ, read as joules")
	return run, nil
}

// Energy is the GPUs' energy over bounds.
type Energy struct {
	Joules  rate.Num `json:"joules"`
	GPUs    int      `json:"gpus"`
	Samples int      `json:"samples"`
	Start   float64  `json:"start"`
	End     float64  `json:"end"`
	Formula string   `json:"formula"`
	// Why says why Joules is absent, or what was left out.
	Why string `json:"why,omitempty"`
}

// EnergyOver integrates each GPU's power over [start, end] by the
// trapezoid rule (values at the bounds interpolated) and sums the GPUs. A
// GPU seen through two sources (two DCGM exporters on one host report the
// same UUID) is counted once, from the source seen first. The samples of
// every GPU must cover the bounds to within maxGap; else the energy is
// refused with the reason.
func EnergyOver(samples []PowerSample, start, end, maxGap float64) Energy {
	e := Energy{Start: start, End: end,
		Formula: "Σ over GPUs of ∫ gpu_power_usage dt over [start, end], trapezoids between samples, values at the bounds interpolated"}
	if end <= start {
		e.Why = "bounds of no length"
		return e
	}
	byGPU, dropped := perGPU(samples, func(s PowerSample) bool { return s.Watts.Valid })
	if len(byGPU) == 0 {
		e.Why = "no power samples"
		return e
	}
	total := 0.0
	for _, gpu := range slices.Sorted(maps.Keys(byGPU)) {
		ss := byGPU[gpu]
		// Samples must reach both bounds: energy outside them is unknown.
		if ss[0].T > start+maxGap || ss[len(ss)-1].T < end-maxGap {
			e.Why = fmt.Sprintf("GPU %s's power samples cover %s to %s, not the bounds %s to %s", gpu, Stamp(ss[0].T), Stamp(ss[len(ss)-1].T), Stamp(start), Stamp(end))
			return e
		}
		for i := 1; i < len(ss); i++ {
			if ss[i].T-ss[i-1].T > maxGap && ss[i].T > start && ss[i-1].T < end {
				e.Why = fmt.Sprintf("GPU %s has no power sample from %s to %s (more than %gs)", gpu, Stamp(ss[i-1].T), Stamp(ss[i].T), maxGap)
				return e
			}
		}
		total += integrate(ss, start, end)
		e.Samples += len(ss)
	}
	e.GPUs = len(byGPU)
	e.Joules = rate.Some(total)
	if dropped > 0 {
		e.Why = fmt.Sprintf("%d samples of a GPU already read through another source left out", dropped)
	}
	return e
}

// integrate is ∫ power dt over [a, b] of time-sorted samples, held flat
// before the first and after the last.
func integrate(ss []PowerSample, a, b float64) float64 {
	at := func(t float64) float64 {
		i, _ := slices.BinarySearchFunc(ss, t, func(s PowerSample, t float64) int { return cmp.Compare(s.T, t) })
		if i == 0 {
			return ss[0].Watts.V
		}
		if i >= len(ss) {
			return ss[len(ss)-1].Watts.V
		}
		p, q := ss[i-1], ss[i]
		return p.Watts.V + (q.Watts.V-p.Watts.V)*(t-p.T)/(q.T-p.T)
	}
	ts := []float64{a}
	for _, s := range ss {
		if s.T > a && s.T < b {
			ts = append(ts, s.T)
		}
	}
	ts = append(ts, b)
	sum := 0.0
	for i := 1; i < len(ts); i++ {
		sum += (at(ts[i-1]) + at(ts[i])) / 2 * (ts[i] - ts[i-1])
	}
	return sum
}

// perGPU groups the samples keep takes by GPU, each GPU read through the
// first source it was seen from (a GPU that two telemetry endpoints report
// counts once; dropped are the other source's samples), in time order.
func perGPU(samples []PowerSample, keep func(PowerSample) bool) (byGPU map[string][]PowerSample, dropped int) {
	byGPU = map[string][]PowerSample{}
	source := map[string]string{}
	for _, s := range samples {
		if !keep(s) {
			continue
		}
		if src, ok := source[s.GPU]; ok && src != s.Source {
			dropped++
			continue
		}
		source[s.GPU] = s.Source
		byGPU[s.GPU] = append(byGPU[s.GPU], s)
	}
	for _, ss := range byGPU {
		slices.SortFunc(ss, func(a, b PowerSample) int { return cmp.Compare(a.T, b.T) })
	}
	return byGPU, dropped
}

// EnergyCounter is the GPUs' energy over [start, end] from DCGM's own
// energy counter (energy_consumption): each GPU's counter, interpolated at
// the bounds, differenced, and summed over the GPUs (each once, as
// EnergyOver). Refused with the reason when a GPU has no counter, its
// samples do not cover the bounds to within maxGap, or it went down (a
// reset).
func EnergyCounter(samples []PowerSample, start, end, maxGap float64) Energy {
	e := Energy{Start: start, End: end,
		Formula: "Σ over GPUs of DCGM's energy counter (energy_consumption) at end − at start, each interpolated between the samples around it"}
	if end <= start {
		e.Why = "bounds of no length"
		return e
	}
	byGPU, _ := perGPU(samples, func(PowerSample) bool { return true })
	if len(byGPU) == 0 {
		e.Why = "no samples"
		return e
	}
	total := 0.0
	for _, gpu := range slices.Sorted(maps.Keys(byGPU)) {
		ss := slices.DeleteFunc(byGPU[gpu], func(s PowerSample) bool { return !s.EnergyJ.Valid })
		if len(ss) == 0 {
			e.Why = fmt.Sprintf("GPU %s publishes no energy counter", gpu)
			return e
		}
		if ss[0].T > start+maxGap || ss[len(ss)-1].T < end-maxGap {
			e.Why = fmt.Sprintf("GPU %s's energy counter covers %s to %s, not the bounds %s to %s", gpu, Stamp(ss[0].T), Stamp(ss[len(ss)-1].T), Stamp(start), Stamp(end))
			return e
		}
		for i := 1; i < len(ss); i++ {
			if ss[i].T > start && ss[i-1].T < end {
				if ss[i].T-ss[i-1].T > maxGap {
					e.Why = fmt.Sprintf("GPU %s has no energy sample from %s to %s (more than %gs)", gpu, Stamp(ss[i-1].T), Stamp(ss[i].T), maxGap)
					return e
				}
				if ss[i].EnergyJ.V < ss[i-1].EnergyJ.V {
					e.Why = fmt.Sprintf("GPU %s's energy counter went down at %s (a reset)", gpu, Stamp(ss[i].T))
					return e
				}
			}
		}
		at := func(t float64) float64 {
			i, _ := slices.BinarySearchFunc(ss, t, func(s PowerSample, t float64) int { return cmp.Compare(s.T, t) })
			switch {
			case i == 0:
				return ss[0].EnergyJ.V
			case i >= len(ss):
				return ss[len(ss)-1].EnergyJ.V
			}
			p, q := ss[i-1], ss[i]
			return p.EnergyJ.V + (q.EnergyJ.V-p.EnergyJ.V)*(t-p.T)/(q.T-p.T)
		}
		total += at(end) - at(start)
		e.Samples += len(ss)
	}
	e.GPUs = len(byGPU)
	e.Joules = rate.Some(total)
	return e
}

// PhaseEnergy is the GPUs' energy over bounds: DCGM's own energy counter
// where every GPU has one covering them (EnergyCounter), else power
// integrated over them (EnergyOver); the formula says which, and why the
// counter was not used.
func PhaseEnergy(samples []PowerSample, start, end, maxGap float64) Energy {
	c := EnergyCounter(samples, start, end, maxGap)
	if c.Joules.Valid {
		c.Formula += " (the energy counter: DCGM's own total, read before estimating from power)"
		return c
	}
	e := EnergyOver(samples, start, end, maxGap)
	e.Formula += " (power integrated: no energy counter to read: " + c.Why + ")"
	return e
}

// EnergyMaxGap is the longest stretch without a power sample a phase's
// energy is still computed across, seconds (AIPerf scrapes DCGM about
// every 0.33 s by default).
const EnergyMaxGap = 5.0

// FEnergyPerToken names the energy per output token.
const FEnergyPerToken = "energy_per_output_token_j"

// EnergyPerToken is the GPUs' energy over a measured phase (PhaseEnergy)
// ÷ the output tokens of its requests that ended ok within it, joules per
// token; refused with the reason when either is unknown.
func EnergyPerToken(power []PowerSample, f *Figures, maxGap float64) Figure {
	p := &f.Phase
	g := Figure{Name: FEnergyPerToken, Unit: "J",
		Formula: "Σ over GPUs of ∫ power dt over the phase's bounds (trapezoids, each GPU once) ÷ Σ output tokens of " + f.Records + " that ended ok within them"}
	tps, ok := f.Get(FOutputTokensPS)
	if !ok || !tps.Value.Valid {
		g.Why = "output tokens unknown: " + tps.Why
		return g
	}
	tokens := tps.Value.V * p.Duration()
	g.Records = tps.Records
	e := PhaseEnergy(power, p.Start, p.End, maxGap)
	g.Formula = "GPU energy over the phase's bounds: " + e.Formula + " ÷ Σ output tokens of " + f.Records + " that ended ok within them"
	switch {
	case !e.Joules.Valid:
		g.Why = "energy unknown: " + e.Why
	case tokens <= 0:
		g.Why = "no output tokens within the bounds"
	default:
		g.Value = some(e.Joules.V / tokens)
	}
	return g
}
