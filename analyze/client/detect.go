package client

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tried lists what detection looks for, in its error.
var tried = []string{
	"AIPerf profile_export.jsonl (lines with metadata and metrics)",
	"AIPerf gpu_telemetry_export.jsonl (lines with timestamp_ns and telemetry_data)",
	"SGLang bench_serving JSONL (lines with backend and completed)",
	"generic JSONL (lines with a start field)",
	"GuideLLM report JSON or YAML (benchmarks)",
	"inference-perf lifecycle metrics (load_summary, successes)",
	"llmperf summary (results_* fields)",
	"inference-perf per-request array (start_time, info)",
	"llmperf individual responses array (ttft_s, end_to_end_latency_s)",
	"generic CSV (a header with a start column)",
}

// detect tells a file's format by its content.
func detect(data []byte) (string, error) {
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return "", fmt.Errorf("empty file")
	}
	fail := func(why string) error {
		return fmt.Errorf("%w (%s); tried: %s", ErrUnknownFormat, why, strings.Join(tried, "; "))
	}
	switch trim[0] {
	case '{':
		var first map[string]json.RawMessage
		if json.Unmarshal(firstLine(trim), &first) == nil {
			if f := lineFormat(first); f != "" {
				return f, nil
			}
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(trim, &doc); err != nil {
			if first != nil {
				return "", fail("JSON lines with keys " + keyList(first))
			}
			return "", fail("not JSON: " + err.Error())
		}
		if f := docFormat(doc); f != "" {
			return f, nil
		}
		return "", fail("a JSON object with keys " + keyList(doc))
	case '[':
		var arr []map[string]json.RawMessage
		if err := json.Unmarshal(trim, &arr); err != nil {
			return "", fail("not a JSON array of objects: " + err.Error())
		}
		if len(arr) == 0 {
			return "", fail("an empty JSON array")
		}
		a := arr[0]
		switch {
		case has(a, "start_time", "info"):
			return FormatInfPerfRequests, nil
		case has(a, "ttft_s") || has(a, "end_to_end_latency_s"):
			return FormatLLMPerfRequests, nil
		}
		return "", fail("a JSON array of objects with keys " + keyList(a))
	}
	// A CSV header first: parsing a large CSV as YAML to learn it is not
	// YAML would be slow.
	header, err := csv.NewReader(bytes.NewReader(firstLine(trim))).Read()
	if err == nil && len(header) > 0 {
		if _, err := columns(header, &Options{TimeUnit: "s", DurationUnit: "s"}); err == nil {
			return FormatGenericCSV, nil
		}
	}
	var y map[string]any
	if yaml.Unmarshal(data, &y) == nil && y != nil {
		if _, ok := y["benchmarks"]; ok {
			return FormatGuideLLM, nil
		}
		return "", fail("a YAML document without benchmarks (an llm-d or inference-perf benchmark report is not read)")
	}
	if err == nil && len(header) > 1 {
		return "", fail(fmt.Sprintf("a CSV header %q without a start column", header))
	}
	return "", fail("neither JSON, a GuideLLM YAML report, nor a CSV header")
}

// lineFormat is the JSONL format whose lines look like first.
func lineFormat(first map[string]json.RawMessage) string {
	switch {
	case has(first, "metadata", "metrics"):
		return FormatAIPerf
	case has(first, "timestamp_ns", "telemetry_data"):
		return FormatAIPerfTelemetry
	case has(first, "backend", "completed"):
		return FormatSGLang
	}
	keys := make([]string, 0, len(first))
	for k := range first {
		keys = append(keys, k)
	}
	if _, err := columns(keys, &Options{TimeUnit: "s", DurationUnit: "s"}); err == nil {
		return FormatGenericJSONL
	}
	return ""
}

// docFormat is the format of a whole JSON document doc.
func docFormat(doc map[string]json.RawMessage) string {
	switch {
	case has(doc, "benchmarks"):
		return FormatGuideLLM
	case has(doc, "load_summary") || has(doc, "successes"):
		return FormatInfPerfStage
	case has(doc, "results_num_completed_requests") || has(doc, "results_ttft_s_mean"):
		return FormatLLMPerfSummary
	}
	return ""
}

func has(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func keyList(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], "…")
	}
	return strings.Join(keys, ", ")
}
