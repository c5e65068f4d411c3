package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/redact"
)

type guideDoc struct {
	Metadata *struct {
		Version         json.RawMessage `json:"version"`
		GuideLLMVersion string          `json:"guidellm_version"`
	} `json:"metadata"`
	Benchmarks []guideBench `json:"benchmarks"`
}

type guideStrategy struct {
	Type           string   `json:"type_"`
	Rate           *float64 `json:"rate"`
	Streams        *float64 `json:"streams"`
	MaxConcurrency *float64 `json:"max_concurrency"`
}

type guideCounts struct {
	Successful *int `json:"successful"`
	Errored    *int `json:"errored"`
	Incomplete *int `json:"incomplete"`
	Total      *int `json:"total"`
}

type guideBench struct {
	Args *struct {
		Strategy guideStrategy `json:"strategy"`
	} `json:"args"`
	Config *struct {
		Strategy guideStrategy `json:"strategy"`
	} `json:"config"`
	StartTime        *float64     `json:"start_time"`
	EndTime          *float64     `json:"end_time"`
	WarmupDuration   *float64     `json:"warmup_duration"`
	CooldownDuration *float64     `json:"cooldown_duration"`
	RequestTotals    *guideCounts `json:"request_totals"`
	SchedulerMetrics *struct {
		MeasureStart *float64    `json:"measure_start_time"`
		MeasureEnd   *float64    `json:"measure_end_time"`
		RequestsMade guideCounts `json:"requests_made"`
	} `json:"scheduler_metrics"`
	Requests struct {
		Successful []guideRequest `json:"successful"`
		Errored    []guideRequest `json:"errored"`
		Incomplete []guideRequest `json:"incomplete"`
	} `json:"requests"`
}

type guideRequest struct {
	StartTime           *float64 `json:"start_time"`
	EndTime             *float64 `json:"end_time"`
	FirstTokenTime      *float64 `json:"first_token_time"`
	PromptTokens        *float64 `json:"prompt_tokens"`
	OutputTokens        *float64 `json:"output_tokens"`
	TimeToFirstTokenMs  *float64 `json:"time_to_first_token_ms"`
	InterTokenLatencyMs *float64 `json:"inter_token_latency_ms"`
	Error               any      `json:"error"`
	// Later layouts (GenerativeRequestStats) write request_start_time and
	// request_end_time, and keep the times under info.timings (the first
	// token as first_iteration or first_token_iteration by version), the
	// error as info.error.
	RequestStartTime *float64 `json:"request_start_time"`
	RequestEndTime   *float64 `json:"request_end_time"`
	Info             *struct {
		Error   any `json:"error"`
		Timings *struct {
			RequestStart        *float64 `json:"request_start"`
			RequestEnd          *float64 `json:"request_end"`
			FirstIteration      *float64 `json:"first_iteration"`
			FirstTokenIteration *float64 `json:"first_token_iteration"`
		} `json:"timings"`
	} `json:"info"`
}

// readGuideLLM reads a GuideLLM report, JSON or YAML, old schema or v2.
func readGuideLLM(data []byte, file string) (*Run, error) {
	run := &Run{Meta: Meta{Tool: "GuideLLM", Level: LevelRequests,
		TimeBase: "Unix epoch seconds (float): start_time, first_token_time, end_time; time_to_first_token_ms, inter_token_latency_ms in ms",
		Aligned:  "by each request's epoch time"}}
	var doc guideDoc
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, docErr(file, data, err)
		}
	} else {
		var tree any
		if err := yaml.Unmarshal(data, &tree); err != nil {
			// yaml's errors name the line ("yaml: line 3: ...").
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		j, err := json.Marshal(tree)
		if err != nil {
			return nil, fmt.Errorf("%s: YAML that is no JSON document: %w", file, err)
		}
		if err := json.Unmarshal(j, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		run.note("read from YAML: errors name the benchmark and request, not the line")
	}
	run.Meta.Schema = "old report: benchmarks[].requests.{successful,errored,incomplete} (≈0.2.x)"
	if doc.Metadata != nil {
		run.Meta.Version = doc.Metadata.GuideLLMVersion
		run.Meta.Schema = "report version " + string(doc.Metadata.Version) + ": metadata, benchmarks[].config, scheduler_metrics"
	}
	if len(doc.Benchmarks) == 0 {
		return nil, fmt.Errorf("%s: no benchmarks", file)
	}
	for i := range doc.Benchmarks {
		if err := guideBenchmark(run, &doc.Benchmarks[i], i, file); err != nil {
			return nil, err
		}
	}
	if len(run.Requests) == 0 {
		run.Meta.Level = LevelSummary
		run.Meta.Aligned = "by the benchmarks' bounds alone: the file holds no per-request records"
	}
	return run, nil
}

func guideBenchmark(run *Run, b *guideBench, i int, file string) error {
	where := fmt.Sprintf("%s: benchmarks[%d]", file, i)
	st := guideStrategy{}
	switch {
	case b.Config != nil:
		st = b.Config.Strategy
	case b.Args != nil:
		st = b.Args.Strategy
	}
	name := fmt.Sprintf("benchmark %d", i)
	if st.Type != "" {
		name += ": " + st.Type
	}
	switch {
	case st.Rate != nil && *st.Rate > 0:
		name += " " + strconv.FormatFloat(*st.Rate, 'g', 6, 64) + " req/s"
	case st.Streams != nil:
		name += " " + strconv.FormatFloat(*st.Streams, 'g', 6, 64) + " streams"
	}
	if b.StartTime == nil || b.EndTime == nil {
		return fmt.Errorf("%s: no start_time or end_time", where)
	}
	start, err := epochSeconds(*b.StartTime, "s")
	if err != nil {
		return fmt.Errorf("%s.start_time: %w", where, err)
	}
	end, err := epochSeconds(*b.EndTime, "s")
	if err != nil {
		return fmt.Errorf("%s.end_time: %w", where, err)
	}
	why := "the benchmark's start_time to end_time"
	if m := b.SchedulerMetrics; m != nil && m.MeasureStart != nil && m.MeasureEnd != nil && *m.MeasureEnd > *m.MeasureStart {
		start, end = *m.MeasureStart, *m.MeasureEnd
		why = "the benchmark's scheduler_metrics.measure_start_time to measure_end_time (warm-up and cool-down left out)"
	}
	if end < start {
		return fmt.Errorf("%s: ends before it starts", where)
	}
	run.Stages = append(run.Stages, Stage{Name: name, Start: start, End: end, Why: why})
	if w := b.WarmupDuration; w != nil && *w > 0 {
		run.note("%s: warm-up of %gs before the measured bounds", name, *w)
	}
	if w := b.CooldownDuration; w != nil && *w > 0 {
		run.note("%s: cool-down of %gs after the measured bounds", name, *w)
	}
	lists := []struct {
		status string
		rs     []guideRequest
	}{{StatusOK, b.Requests.Successful}, {StatusError, b.Requests.Errored}, {StatusIncomplete, b.Requests.Incomplete}}
	listed := 0
	for _, l := range lists {
		for k := range l.rs {
			r, ok, err := guideReq(&l.rs[k], l.status)
			if err != nil {
				return fmt.Errorf("%s.requests.%s[%d]: %w", where, listName(l.status), k, err)
			}
			if !ok {
				run.skip("GuideLLM request without a start time (layout not known)", k+1)
				continue
			}
			r.Phase = name
			r.Line = k + 1
			run.Requests = append(run.Requests, r)
			listed++
		}
	}
	totals := b.RequestTotals
	if totals == nil && b.SchedulerMetrics != nil {
		totals = &b.SchedulerMetrics.RequestsMade
	}
	if totals != nil && totals.Total != nil && *totals.Total != listed {
		st := &run.Stages[len(run.Stages)-1]
		st.Sampled = fmt.Sprintf("the file lists %d of the %d requests its totals count (GuideLLM keeps a sample of requests unless told otherwise, or the file was trimmed)", listed, *totals.Total)
		run.note("%s: %s: rates over wall time are refused, quantiles are of the listed requests", name, st.Sampled)
	}
	return nil
}

func listName(status string) string {
	switch status {
	case StatusError:
		return "errored"
	case StatusIncomplete:
		return "incomplete"
	}
	return "successful"
}

// guideReq is one GuideLLM request; false when it has no start time.
func guideReq(g *guideRequest, status string) (Request, bool, error) {
	r := Request{Status: status}
	start, first, end := or(g.StartTime, g.RequestStartTime), g.FirstTokenTime, or(g.EndTime, g.RequestEndTime)
	errv := g.Error
	if g.Info != nil {
		if t := g.Info.Timings; t != nil {
			start, first, end = or(start, t.RequestStart), or(first, or(t.FirstTokenIteration, t.FirstIteration)), or(end, t.RequestEnd)
		}
		if errv == nil {
			errv = g.Info.Error
		}
	}
	if start == nil {
		return r, false, nil
	}
	var err error
	if r.Start, err = epochSeconds(*start, "s"); err != nil {
		return r, false, fmt.Errorf("start_time: %w", err)
	}
	if end != nil {
		v, err := epochSeconds(*end, "s")
		if err != nil {
			return r, false, fmt.Errorf("end_time: %w", err)
		}
		if v < r.Start {
			return r, false, fmt.Errorf("end_time before start_time")
		}
		r.End = rate.Some(v)
	}
	if first != nil {
		v, err := epochSeconds(*first, "s")
		if err != nil {
			return r, false, fmt.Errorf("first_token_time: %w", err)
		}
		r.FirstToken = rate.Some(v)
		r.TTFT = rate.Some(v - r.Start)
	}
	if g.TimeToFirstTokenMs != nil {
		r.TTFT = rate.Some(*g.TimeToFirstTokenMs / 1e3)
		if !r.FirstToken.Valid {
			r.FirstToken = rate.Some(r.Start + r.TTFT.V)
		}
	}
	if g.InterTokenLatencyMs != nil {
		r.ITL = rate.Some(*g.InterTokenLatencyMs / 1e3)
	}
	r.InputTokens, r.OutputTokens = ptrNum(g.PromptTokens), ptrNum(g.OutputTokens)
	switch e := errv.(type) {
	case nil:
	case string:
		r.Error = redact.Text(e)
	default:
		b, _ := json.Marshal(e)
		r.Error = redact.Text(string(b))
	}
	return r, true, nil
}

func or(a, b *float64) *float64 {
	if a != nil {
		return a
	}
	return b
}

func ptrNum(p *float64) rate.Num {
	if p == nil {
		return rate.Num{}
	}
	return rate.Some(*p)
}
