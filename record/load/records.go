package load

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// ns is t as Unix epoch ns, from the request's one wall-clock reading at
// its start plus monotonic time.
func (r *result) ns(t time.Time) int64 {
	return r.start.UnixNano() + t.Sub(r.start).Nanoseconds()
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// metric is one AIPerf metric: {"value": V, "unit": U}.
type metric struct {
	name  string
	value any
	unit  string
}

// metrics writes AIPerf's metrics object in the order given.
func metricsJSON(ms []metric) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		name, _ := json.Marshal(m.name)
		v, _ := json.Marshal(m.value)
		unit, _ := json.Marshal(m.unit)
		b.Write(name)
		b.WriteString(`: {"value": `)
		b.Write(v)
		b.WriteString(`, "unit": `)
		b.Write(unit)
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// aiperfMeta is AIPerf 0.3's record metadata, field for field.
type aiperfMeta struct {
	SessionNum        int     `json:"session_num"`
	XRequestID        string  `json:"x_request_id"`
	XCorrelationID    string  `json:"x_correlation_id"`
	ConversationID    *string `json:"conversation_id"`
	TurnIndex         int     `json:"turn_index"`
	RequestStartNS    int64   `json:"request_start_ns"`
	RequestAckNS      *int64  `json:"request_ack_ns"`
	RequestEndNS      int64   `json:"request_end_ns"`
	WorkerID          string  `json:"worker_id"`
	RecordProcessorID string  `json:"record_processor_id"`
	BenchmarkPhase    string  `json:"benchmark_phase"`
	WasCancelled      bool    `json:"was_cancelled"`
	CancellationTime  *int64  `json:"cancellation_time_ns"`
}

type aiperfError struct {
	Code    int    `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// aiperf is r as a line of AIPerf's profile_export.jsonl (0.3 schema):
// the metrics AIPerf computes per request from what the client saw, in
// its units (ms, tokens, tokens/sec).
func (r *result) aiperf() []byte {
	md := aiperfMeta{
		SessionNum: r.session, XRequestID: uuid4(), XCorrelationID: uuid4(),
		RequestStartNS: r.start.UnixNano(), RequestEndNS: r.ns(r.end),
		WorkerID: r.worker, RecordProcessorID: "record_processor_llmrec", BenchmarkPhase: r.phase,
		WasCancelled: r.cancelled,
	}
	if !r.ack.IsZero() {
		a := r.ns(r.ack)
		md.RequestAckNS = &a
	}
	if r.cancelled {
		c := md.RequestEndNS
		md.CancellationTime = &c
	}
	var ms0 []metric
	var perr *aiperfError
	if r.ok {
		ttft := r.chunks[0].Sub(r.start)
		lat := r.end.Sub(r.start)
		ms0 = []metric{
			{"output_sequence_length", r.outputTokens, "tokens"},
			{"input_sequence_length", r.inputTokens, "tokens"},
			{"time_to_first_token", ms(ttft), "ms"},
			{"output_token_count", r.outputTokens, "tokens"},
		}
		if len(r.chunks) > 1 {
			ms0 = append(ms0, metric{"time_to_second_token", ms(r.chunks[1].Sub(r.chunks[0])), "ms"})
		}
		ms0 = append(ms0, metric{"request_latency", ms(lat), "ms"}, metric{"time_to_first_output_token", ms(ttft), "ms"})
		if len(r.chunks) > 1 {
			icl := make([]float64, len(r.chunks)-1)
			for i := range icl {
				icl[i] = ms(r.chunks[i+1].Sub(r.chunks[i]))
			}
			ms0 = append(ms0, metric{"inter_chunk_latency", icl, "ms"})
		}
		if ttft > 0 {
			ms0 = append(ms0, metric{"prefill_throughput", float64(r.inputTokens) / ttft.Seconds(), "tokens/sec"})
		}
		if r.outputTokens > 1 {
			itl := ms(lat-ttft) / float64(r.outputTokens-1)
			ms0 = append(ms0, metric{"inter_token_latency", itl, "ms"})
			if itl > 0 {
				ms0 = append(ms0, metric{"output_token_throughput_per_user", 1000 / itl, "tokens/sec/user"})
			}
		}
	} else {
		ms0 = []metric{{"error_request_count", 1, "requests"}}
		perr = &aiperfError{Code: r.errCode, Type: r.errType, Message: r.errMsg}
	}
	line, _ := json.Marshal(struct {
		Metadata aiperfMeta      `json:"metadata"`
		Metrics  json.RawMessage `json:"metrics"`
		Error    *aiperfError    `json:"error"`
	}{md, metricsJSON(ms0), perr})
	return line
}

// generic is r as a line of the generic JSONL analyze/client reads: epoch
// ns times, tokens, status, error, phase, and the url it was sent to (so
// that several engines behind one client are told apart).
func (r *result) generic(url string) []byte {
	v := map[string]any{
		"start_ns": r.start.UnixNano(), "end_ns": r.ns(r.end), "input_tokens": r.inputTokens,
		"phase": r.phase, "worker": r.worker, "url": url,
	}
	switch {
	case r.ok:
		v["status"] = "ok"
		v["output_tokens"] = r.outputTokens
		v["output_tokens_from"] = "chunks"
		if r.fromUsage {
			v["output_tokens_from"] = "usage"
		}
	case r.cancelled:
		v["status"] = "cancelled"
		v["error"] = r.errType + ": " + r.errMsg
	default:
		v["status"] = "error"
		v["error"] = strconv.Itoa(r.errCode) + " " + r.errType + ": " + r.errMsg
	}
	if len(r.chunks) > 0 {
		v["first_token_ns"] = r.ns(r.chunks[0])
	}
	line, _ := json.Marshal(v)
	return line
}
