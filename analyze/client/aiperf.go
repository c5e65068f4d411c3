package client

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/redact"
)

// AIPerf schemas of profile_export.jsonl.
const (
	AIPerfEarly = "early: metadata.timestamp_ns, credit_phase (dev builds before 0.2.0)"
	AIPerf03    = "0.3: metadata.request_start_ns/request_end_ns, benchmark_phase"
)

type aiperfLine struct {
	Metadata struct {
		TimestampNS    json.RawMessage `json:"timestamp_ns"`
		RequestStartNS json.RawMessage `json:"request_start_ns"`
		RequestEndNS   json.RawMessage `json:"request_end_ns"`
		CreditPhase    string          `json:"credit_phase"`
		BenchmarkPhase string          `json:"benchmark_phase"`
		WasCancelled   bool            `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]aiperfMetric `json:"metrics"`
	Error   *struct {
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
		Message string          `json:"message"`
	} `json:"error"`
}

type aiperfMetric struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

// readAIPerf reads AIPerf's profile_export.jsonl, either schema.
func readAIPerf(data []byte, file string) (*Run, error) {
	run := &Run{Meta: Meta{Tool: "AIPerf", Level: LevelRequests,
		Aligned: "by each request's epoch time"}}
	err := eachLine(data, run, func(line []byte, n int) error {
		var l aiperfLine
		if err := json.Unmarshal(line, &l); err != nil {
			return lineErr(file, n, err)
		}
		r, schema, err := aiperfRequest(&l)
		if err != nil {
			return lineErr(file, n, err)
		}
		if run.Meta.Schema == "" {
			run.Meta.Schema = schema
		}
		if schema != run.Meta.Schema {
			return lineErr(file, n, fmt.Errorf("schema %q after lines of schema %q", schema, run.Meta.Schema))
		}
		r.Line = n
		run.Requests = append(run.Requests, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch run.Meta.Schema {
	case AIPerfEarly:
		run.Meta.TimeBase = "Unix epoch ns: metadata.timestamp_ns (start), metrics.max_response_timestamp (end); ttft, inter_token_latency, request_latency in the unit each metric names (ms)"
		run.note("a cancelled request of this schema carries no end time and no metrics: its end is absent")
	case AIPerf03:
		run.Meta.TimeBase = "Unix epoch ns (time.time_ns()): metadata.request_start_ns, request_end_ns; first token = start + time_to_first_token (the file stores no absolute first-token time)"
	}
	run.note("output tokens are output_sequence_length (reasoning tokens included), else output_token_count")
	return run, nil
}

// aiperfRequest is one line's request and the schema it is in.
func aiperfRequest(l *aiperfLine) (Request, string, error) {
	var r Request
	md := &l.Metadata
	schema := AIPerf03
	start, ok, err := jsonInt(md.RequestStartNS)
	if err != nil {
		return r, "", fmt.Errorf("metadata.request_start_ns: %w", err)
	}
	if !ok {
		schema = AIPerfEarly
		start, ok, err = jsonInt(md.TimestampNS)
		if err != nil {
			return r, "", fmt.Errorf("metadata.timestamp_ns: %w", err)
		}
	}
	if !ok {
		return r, "", fmt.Errorf("no request start (metadata.request_start_ns or metadata.timestamp_ns)")
	}
	if _, err := epochSeconds(float64(start), "ns"); err != nil {
		return r, "", fmt.Errorf("request start: %w", err)
	}
	r.Start = nsSeconds(start)
	r.Phase = md.BenchmarkPhase
	if schema == AIPerfEarly {
		r.Phase = md.CreditPhase
	}
	end, ok, err := jsonInt(md.RequestEndNS)
	if err != nil {
		return r, "", fmt.Errorf("metadata.request_end_ns: %w", err)
	}
	if !ok {
		if m, has := l.Metrics["max_response_timestamp"]; has {
			end, ok, err = jsonInt(m.Value)
			if err != nil {
				return r, "", fmt.Errorf("metrics.max_response_timestamp: %w", err)
			}
		}
	}
	if ok {
		if end < start {
			return r, "", fmt.Errorf("request ends (%d ns) before it starts (%d ns)", end, start)
		}
		r.End = rate.Some(nsSeconds(end))
	}
	durations := []struct {
		dst   *rate.Num
		names []string
	}{
		{&r.TTFT, []string{"time_to_first_token", "ttft"}},
		{&r.ITL, []string{"inter_token_latency"}},
	}
	for _, d := range durations {
		v, err := aiperfValue(l.Metrics, d.names, true)
		if err != nil {
			return r, "", err
		}
		*d.dst = v
	}
	counts := []struct {
		dst   *rate.Num
		names []string
	}{
		{&r.InputTokens, []string{"input_sequence_length"}},
		{&r.OutputTokens, []string{"output_sequence_length", "output_token_count"}},
	}
	for _, c := range counts {
		v, err := aiperfValue(l.Metrics, c.names, false)
		if err != nil {
			return r, "", err
		}
		*c.dst = v
	}
	if r.TTFT.Valid {
		r.FirstToken = rate.Some(r.Start + r.TTFT.V)
	}
	r.Status = StatusOK
	if l.Error != nil {
		r.Status = StatusError
		if strings.TrimSpace(string(l.Error.Code)) == "499" || strings.Contains(l.Error.Type, "Cancel") {
			r.Status = StatusCancelled
		}
		r.Error = redact.Text(strings.TrimPrefix(l.Error.Type+": "+l.Error.Message, ": "))
	}
	if md.WasCancelled {
		r.Status = StatusCancelled
	}
	return r, schema, nil
}

// aiperfValue is the first of names present in ms, as seconds when
// duration, else as a count; an unknown unit is an error.
func aiperfValue(ms map[string]aiperfMetric, names []string, duration bool) (rate.Num, error) {
	for _, name := range names {
		m, ok := ms[name]
		if !ok {
			continue
		}
		s := strings.TrimSpace(string(m.Value))
		if s == "null" || s == "" {
			return rate.Num{}, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return rate.Num{}, fmt.Errorf("metrics.%s.value: %s is not a number", name, s)
		}
		if !duration {
			if m.Unit != "tokens" {
				return rate.Num{}, fmt.Errorf("metrics.%s: unit %q, want tokens", name, m.Unit)
			}
			return rate.Some(v), nil
		}
		k, ok := unitScale(m.Unit)
		if !ok {
			return rate.Num{}, fmt.Errorf("metrics.%s: unit %q is not a duration unit (s, ms, us, ns)", name, m.Unit)
		}
		return rate.Some(v * k), nil
	}
	return rate.Num{}, nil
}
