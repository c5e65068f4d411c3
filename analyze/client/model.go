package client

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/rate"
)

// Request statuses.
const (
	StatusOK         = "ok"         // the client received the whole response
	StatusError      = "error"      // the request failed
	StatusCancelled  = "cancelled"  // the client cancelled it (AIPerf's 499)
	StatusIncomplete = "incomplete" // still running when the benchmark stopped (GuideLLM)
)

// Levels of what a file holds.
const (
	LevelRequests  = "requests"  // one record per request, placed in time
	LevelSummary   = "summary"   // run or stage aggregates only, placed by run bounds at most
	LevelTelemetry = "telemetry" // power samples (AIPerf's GPU telemetry)
)

// Request is one request as the client saw it. Times are Unix seconds;
// durations are seconds; a missing number is absent, never 0.
type Request struct {
	// Start is when the client sent the request.
	Start float64 `json:"start"`
	// FirstToken is when the first token arrived: the client's own stamp,
	// or Start + TTFT where the client published only the duration.
	FirstToken rate.Num `json:"first_token"`
	// End is when the response finished (a cancelled AIPerf request has
	// none).
	End rate.Num `json:"end"`
	// TTFT is the client's time to first token.
	TTFT rate.Num `json:"ttft"`
	// ITL is the client's mean inter-token latency of the request:
	// published, else (End − FirstToken)/(OutputTokens − 1).
	ITL          rate.Num `json:"itl"`
	InputTokens  rate.Num `json:"input_tokens"`
	OutputTokens rate.Num `json:"output_tokens"`
	Status       string   `json:"status"`
	// Error is the client's error text, redacted (record/redact.Text).
	Error string `json:"error,omitempty"`
	// Phase is the client's own phase label ("warmup", "profiling", a
	// stage or benchmark name); "" when it has none.
	Phase string `json:"phase,omitempty"`
	// Target is the engine the request was sent to, as the client names
	// it (a generic file's target or url column; a URL redacted); "" when
	// the record does not say.
	Target string `json:"target,omitempty"`
	// Line is the line of the file the record came from (JSONL, CSV), or
	// its 1-based position in the document's list (JSON, YAML).
	Line int `json:"line"`
}

// E2E is End − Start, absent without an end.
func (r *Request) E2E() rate.Num {
	if !r.End.Valid {
		return rate.Num{}
	}
	return rate.Some(r.End.V - r.Start)
}

// Skip counts records a reader left out for one reason.
type Skip struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Lines are the first few lines (or positions) skipped.
	Lines []int `json:"lines,omitempty"`
}

// Meta says what a file is and how it was read.
type Meta struct {
	File    string `json:"file"`
	Format  string `json:"format"` // one of the Format* names
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"`
	Schema  string `json:"schema,omitempty"`
	Level   string `json:"level"`
	// TimeBase says where the times came from and in what unit.
	TimeBase string `json:"time_base"`
	// Aligned says how the file is placed against a recording: by each
	// request's epoch time, or by run bounds alone.
	Aligned string `json:"aligned"`
	// Notes say what the file lacks or what was derived, and why.
	Notes   []string `json:"notes,omitempty"`
	Skipped []Skip   `json:"skipped,omitempty"`
}

// Stage is a stretch of the run the client declared with its own bounds
// (a GuideLLM benchmark, an inference-perf stage).
type Stage struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Why   string  `json:"why"`
	// Sampled says why the file's records of the stage are not all of its
	// requests ("" when they are).
	Sampled string `json:"sampled,omitempty"`
}

// Value is one number of a summary, with the field it came from.
type Value struct {
	Name  string  `json:"name"`
	V     float64 `json:"value"`
	Unit  string  `json:"unit"`
	Field string  `json:"field"`
}

// Summary is a run or stage aggregate of a summary-only format.
type Summary struct {
	Name string `json:"name"`
	// Start and End place it in time where the file says (else absent);
	// Bounds says how.
	Start  rate.Num `json:"start"`
	End    rate.Num `json:"end"`
	Bounds string   `json:"bounds"`
	Values []Value  `json:"values"`
}

// Get returns the value named name.
func (s *Summary) Get(name string) (Value, bool) {
	for _, v := range s.Values {
		if v.Name == name {
			return v, true
		}
	}
	return Value{}, false
}

// Run is what one client file holds.
type Run struct {
	Meta      Meta          `json:"meta"`
	Requests  []Request     `json:"requests"`
	Stages    []Stage       `json:"stages"`
	Summaries []Summary     `json:"summaries"`
	Power     []PowerSample `json:"power"`
}

// skip counts one skipped record.
func (r *Run) skip(reason string, line int) {
	for i := range r.Meta.Skipped {
		s := &r.Meta.Skipped[i]
		if s.Reason == reason {
			s.Count++
			if len(s.Lines) < 5 {
				s.Lines = append(s.Lines, line)
			}
			return
		}
	}
	r.Meta.Skipped = append(r.Meta.Skipped, Skip{Reason: reason, Count: 1, Lines: []int{line}})
}

func (r *Run) note(format string, args ...any) {
	r.Meta.Notes = append(r.Meta.Notes, fmt.Sprintf(format, args...))
}

// Anchor ties a monotonic clock to the epoch: the monotonic reading Mono
// (seconds) was taken at Unix time Epoch (seconds).
type Anchor struct {
	Mono  float64
	Epoch float64
}

// Options steer a read. The zero value detects the format and reads
// epoch times whose unit is unambiguous.
type Options struct {
	// Format forces a format (one of the Format* names); "" detects it.
	Format string
	// TZ is the zone of local times written without one; nil refuses them.
	TZ *time.Location
	// Anchor places a monotonic clock (inference-perf's per-request
	// perf_counter); nil refuses such a file.
	Anchor *Anchor
	// Columns map a generic file's fields to its column names:
	// start, end, first_token, ttft, itl, e2e, input_tokens, output_tokens,
	// status, error, phase. Unset fields are found by name in the header.
	Columns map[string]string
	// TimeUnit is the unit of a generic file's epoch times: "s", "ms",
	// "us" or "ns"; "" detects it by magnitude where that is unambiguous.
	TimeUnit string
	// DurationUnit is the unit of a generic file's durations (ttft, itl,
	// e2e) whose column name carries none; "" refuses such a column.
	DurationUnit string
}

// Format names.
const (
	FormatAIPerf          = "aiperf-profile-export"
	FormatAIPerfTelemetry = "aiperf-gpu-telemetry"
	FormatGuideLLM        = "guidellm-benchmarks"
	FormatGenericCSV      = "generic-csv"
	FormatGenericJSONL    = "generic-jsonl"
	FormatInfPerfStage    = "inference-perf-lifecycle"
	FormatInfPerfRequests = "inference-perf-per-request"
	FormatLLMPerfRequests = "llmperf-individual-responses"
	FormatLLMPerfSummary  = "llmperf-summary"
	FormatSGLang          = "sglang-bench-serving"
)

// ReadFile reads a client file (see Read).
func ReadFile(path string, opt Options) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return Read(data, path, opt)
}

// ErrUnknownFormat is wrapped by the error of a file no reader knows.
var ErrUnknownFormat = errors.New("not a known client format")

// Read reads a client file's bytes; file names it in errors and the
// metadata. The format is opt.Format, else detected by content.
func Read(data []byte, file string, opt Options) (*Run, error) {
	format := opt.Format
	if format == "" {
		f, err := detect(data)
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", file, err)
		}
		format = f
	}
	var run *Run
	var err error
	switch format {
	case FormatAIPerf:
		run, err = readAIPerf(data, file)
	case FormatAIPerfTelemetry:
		run, err = readTelemetry(data, file)
	case FormatGuideLLM:
		run, err = readGuideLLM(data, file)
	case FormatGenericCSV:
		run, err = readGenericCSV(data, file, &opt)
	case FormatGenericJSONL:
		run, err = readGenericJSONL(data, file, &opt)
	case FormatInfPerfStage:
		run, err = readInfPerfStage(data, file)
	case FormatInfPerfRequests:
		run, err = readInfPerfRequests(data, file, &opt)
	case FormatLLMPerfRequests:
		run, err = readLLMPerfRequests(data, file)
	case FormatLLMPerfSummary:
		run, err = readLLMPerfSummary(data, file)
	case FormatSGLang:
		run, err = readSGLang(data, file)
	default:
		return nil, fmt.Errorf("client: %s: unknown format %q (known: %s)", file, format, strings.Join(formats, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	run.Meta.File = file
	run.Meta.Format = format
	if run.Requests == nil {
		run.Requests = []Request{}
	}
	if run.Stages == nil {
		run.Stages = []Stage{}
	}
	if run.Summaries == nil {
		run.Summaries = []Summary{}
	}
	if run.Power == nil {
		run.Power = []PowerSample{}
	}
	if err := checkBounds(run, file); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	dropStragglers(run)
	return run, nil
}

var formats = []string{FormatAIPerf, FormatAIPerfTelemetry, FormatGuideLLM, FormatGenericCSV, FormatGenericJSONL,
	FormatInfPerfStage, FormatInfPerfRequests, FormatLLMPerfRequests, FormatLLMPerfSummary, FormatSGLang}

// firstLine is data's first non-blank line.
func firstLine(data []byte) []byte {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return t
		}
	}
	return nil
}
