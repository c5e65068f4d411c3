package sim

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/llmrec/llmrec/internal/engines"
)

// Format is the exposition format an engine imitates.
type Format string

// The formats a simulated engine can serve.
const (
	// FormatVLLM is vLLM V1 behind its OpenAI-compatible server
	// (prometheus_client output, `vllm:` prefix, engine and model_name labels).
	FormatVLLM Format = engines.VLLM
	// FormatLlamaCpp is llama.cpp's llama-server with --metrics
	// (`llamacpp:` prefix, no labels).
	FormatLlamaCpp Format = engines.LlamaCpp
)

// EventKind names what an [Event] does.
type EventKind string

// The kinds of events.
const (
	// EventRestart restarts the engine: every counter starts again from 0 and
	// the process start time and the _created values move to the event time.
	// With For (llama.cpp), the new process loads its model for that long:
	// every request in [At, At+For) is answered 503 with llama-server's
	// {"error":{"message":"Loading model"}} body while the counters, from
	// 0, already follow the phases.
	EventRestart EventKind = "restart"
	// EventLabelJoin makes a further label set (vLLM engine="<Label>") start
	// being exported. It runs the same phases as the first set, and its
	// counters start from the values that Carry of the last phase with load
	// at or before the join would give; its _created values are the start of
	// that carried history. A later restart resets it with the others.
	EventLabelJoin EventKind = "label_join"
	// EventHang holds every request received during [At, At+For) until
	// At+For, then answers it.
	EventHang EventKind = "hang"
	// EventStatus answers every request received during [At, At+For) with
	// the HTTP status Code and a short text body.
	EventStatus EventKind = "status"
	// EventSlow renders a request received during [At, At+For) at once, sends
	// the first bytes at once and trickles the rest over Delay.
	EventSlow EventKind = "slow"
	// EventStale renders a request received during [At, At+For) at once and
	// holds the whole body for Delay before sending it.
	EventStale EventKind = "stale"
)

// Default values filled in by [Scenario.Normalize] for fields left zero.
const (
	DefaultVLLMModel     = "meta-llama/Llama-3.1-8B-Instruct"
	DefaultLlamaCppModel = "models/model.gguf"
	DefaultOutputLen     = 256
	DefaultCarry         = 10 * time.Minute
)

// DefaultStart is the wall-clock instant of offset 0 used by [Generate] and
// by the _created and process_start_time_seconds values of [Engine.Render]
// when a scenario sets no start.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Scenario is a set of simulated engines and their timelines.
type Scenario struct {
	// Name is free text.
	Name string
	// Start is the wall-clock instant of offset 0 for [Generate] and
	// [Engine.Render]. Zero means [DefaultStart]. [Serve] uses its own start.
	Start time.Time
	// Duration is how long the scenario is meant to run; the last phase goes
	// on after it. Zero means 10 s past the last phase or event.
	Duration time.Duration
	// Engines are the simulated engines, each an independent target.
	Engines []EngineSpec
}

// EngineSpec describes one simulated engine.
type EngineSpec struct {
	// Name identifies the engine (letters, digits, '-', '_', '.').
	Name string
	// Format is the exposition format it imitates.
	Format Format
	// Model is the served model name (vLLM model_name label, llama.cpp model
	// path in /props).
	Model string
	// EngineLabel is the vLLM engine label of the first label set; "0" if
	// empty.
	EngineLabel string
	// MaxModelLen is vLLM's max_model_len (it bounds the 1-2-5 token
	// buckets; default 8192) or llama.cpp's total context n_ctx (default 4096).
	MaxModelLen int
	// BlockSize and NumGPUBlocks are vLLM's KV-cache geometry, shown in
	// cache_config_info and used to derive KV usage (defaults 16 and 20000).
	BlockSize, NumGPUBlocks int
	// Slots is llama.cpp's --parallel (default 4); running may not exceed it.
	Slots int
	// PrefillSpeed is one request's prefill speed in tokens/s, used for
	// prefill times and llama.cpp's prompt_seconds_total (default 8000 for
	// vLLM, 1000 for llama.cpp).
	PrefillSpeed float64
	// MaxTokens is the max_tokens request parameter (vLLM
	// request_params_max_tokens; default 2048).
	MaxTokens int
	// InterTokenLatency adds the newer vLLM families
	// inter_token_latency_seconds and request_time_per_output_token_seconds.
	InterTokenLatency bool
	// Version is the version the engine reports (vLLM /version, llama.cpp
	// /props build_info); empty means 0.10.1.1 and b5942-81ff7abe.
	Version string
	// Speed makes the engine faster or slower by a factor per quantity,
	// in every phase: a candidate build for `llmrec diff`.
	Speed Speed
	// ProcessStartHeader, when set, names a response header every answer
	// carries with the process start (Unix seconds, as
	// process_start_time_seconds), as a proxy in front of an engine may
	// send. A llama.cpp build that sends its own (b4748's
	// Process-Start-Time-Unix, see llamacpp_builds.go) sends that instead.
	ProcessStartHeader string
	// Phases is the load timeline, ordered by At. Before the first phase the
	// engine is idle.
	Phases []Phase
	// Events are the restarts, label joins and HTTP behaviours.
	Events []Event
	// Serve is how the engine serves real requests (live.go).
	Serve ServeSpec
}

// Phase is a stretch of steady load starting at At and lasting until the next
// phase. All rates are per label set.
type Phase struct {
	// At is the offset from the scenario start.
	At time.Duration
	// Idle marks a phase without load; it may not set rates or requests.
	Idle bool
	// DecodeTPS is generated tokens per second.
	DecodeTPS float64
	// PromptTPS is prompt tokens per second, prefix-cached ones included.
	PromptTPS float64
	// CachedFraction is the share of prompt tokens that hit the prefix cache.
	CachedFraction float64
	// Running is the number of requests in the batch (llama.cpp busy slots).
	Running int
	// Waiting is the number of requests queued for capacity (vLLM
	// reason="capacity"; llama.cpp requests_deferred).
	Waiting int
	// Deferred is the number of requests deferred for other reasons (vLLM
	// reason="deferred"; added to llama.cpp requests_deferred).
	Deferred int
	// KVUsage is the KV-cache usage in [0,1]; negative means derived from
	// the running requests' context length and the cache size.
	KVUsage float64
	// OutputLen is the tokens generated per request: a request finishes
	// every OutputLen generated tokens (default 256).
	OutputLen int
	// TTFT and QueueTime are the mean time to first token and time in queue;
	// zero means derived (queue from Little's law on the waiting requests,
	// TTFT = queue + prefill + 5 ms).
	TTFT, QueueTime time.Duration
	// PreemptionsPerS is vLLM preemptions per second.
	PreemptionsPerS float64
	// AbortFraction and LengthFraction are the shares of finished requests
	// with finished_reason abort and length; the rest are stop.
	AbortFraction, LengthFraction float64
}

// Speed scales an engine's phases by a factor per quantity; zero means 1.
// Decode 0.9 is 10 % fewer generated tokens per second at the same batch
// (so each request's tokens come 10 % slower and requests finish 10 %
// less often); TTFT 1.3 is a time to first token 30 % longer.
type Speed struct {
	Decode float64 // generated tokens per second
	Prompt float64 // prompt tokens per second
	TTFT   float64 // time to first token (the queue and prefill in it, or the phase's ttft)
	Queue  float64 // time in queue (added to TTFT as the queue grows)
}

// factor is x, or 1 for zero.
func factor(x float64) float64 {
	if x == 0 {
		return 1
	}
	return x
}

// Event is something that happens to an engine at an offset.
type Event struct {
	// At is the offset from the scenario start.
	At time.Duration
	// Kind is what happens.
	Kind EventKind
	// For is the length of the window of hang, status, slow and stale.
	For time.Duration
	// Delay is how late slow and stale responses finish.
	Delay time.Duration
	// Code is the HTTP status of a status event.
	Code int
	// Label is the engine label value of a label_join ("1" if empty).
	Label string
	// Carry is how much history the joining label set's counters start with
	// (default [DefaultCarry]); see [EventLabelJoin].
	Carry time.Duration
}

//go:embed default_scenario.toml
var defaultScenarioTOML string

// DefaultScenarioTOML is the TOML text of [DefaultScenario]; it doubles as an
// annotated example of the scenario format.
func DefaultScenarioTOML() string { return defaultScenarioTOML }

// DefaultScenario returns the built-in scenario: a vLLM-like and a
// llama.cpp-like engine over about 30 s, with load starts and ends, capacity
// queueing, a stall, a hang, a restart, a label join and stale, slow and
// failing responses.
func DefaultScenario() *Scenario {
	sc, err := ParseScenario([]byte(defaultScenarioTOML), "default_scenario.toml")
	if err != nil {
		panic("sim: built-in scenario: " + err.Error())
	}
	return sc
}

// LoadScenario reads and parses a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return ParseScenario(data, path)
}

// ParseScenario parses a scenario in TOML. file names the source in errors.
// Unknown keys are errors. Durations are strings such as "500ms" or "3s".
//
// The format, with every key:
//
//	name = "example"            # optional
//	start = 2026-01-01T00:00:00Z # optional, offset 0 for Generate
//	duration = "30s"            # optional
//
//	[[engine]]
//	name = "vllm-0"
//	format = "vllm"             # or "llamacpp"
//	model = "meta-llama/Llama-3.1-8B-Instruct"
//	engine_label = "0"          # vLLM engine label of the first label set
//	max_model_len = 8192        # vLLM max_model_len, llama.cpp n_ctx
//	block_size = 16             # vLLM
//	num_gpu_blocks = 20000      # vLLM
//	slots = 4                   # llama.cpp --parallel
//	prefill_speed = 8000.0      # tokens/s of one request's prefill
//	max_tokens = 2048           # vLLM max_tokens request parameter
//	inter_token_latency = false # vLLM: add the newer ITL families
//	version = "0.10.1.1"        # reported by /version (vLLM) or /props build_info (llama.cpp)
//	speed = {decode = 0.9, ttft = 1.3} # factors on every phase: decode, prompt, ttft, queue
//	process_start_header = ""   # a response header carrying the process start
//
//	  [[engine.phase]]
//	  at = "2s"
//	  decode_tps = 1500.0       # generated tokens/s
//	  prompt_tps = 4000.0       # prompt tokens/s, cached included
//	  cached_fraction = 0.3
//	  running = 12
//	  waiting = 2               # queued for capacity
//	  deferred = 1              # vLLM reason="deferred"
//	  kv_usage = 0.5            # omitted: derived
//	  output_len = 200          # tokens per request
//	  ttft = "150ms"            # omitted: derived
//	  queue_time = "20ms"       # omitted: derived
//	  preemptions_per_s = 0.1
//	  abort_fraction = 0.01
//	  length_fraction = 0.1
//	  # idle = true             # a phase without load
//
//	  [[engine.event]]
//	  at = "20s"
//	  kind = "restart"          # restart | label_join | hang | status | slow | stale
//	  # for = "2s"              # hang, status, slow, stale
//	  # delay = "500ms"         # slow, stale
//	  # code = 503              # status
//	  # label = "1"             # label_join
//	  # carry = "10m"           # label_join
//
//	  [engine.serve]            # real requests on /v1/completions (live.go)
//	  batch = 4                 # most requests in the batch (default: slots, vLLM 256)
//	  step = "15ms"             # one engine step with one request
//	  step_per_request = "1ms"  # added per further request in the batch
//	  front_threads = 4         # requests handled at once before the engine (0: no limit)
func ParseScenario(data []byte, file string) (*Scenario, error) {
	var f fileScenario
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("%s: unknown key %s", file, strings.Join(keys, ", "))
	}
	sc := f.scenario()
	if err := sc.Normalize(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return sc, nil
}

// fileScenario and the types below mirror the TOML file; pointers tell
// absent keys from zero values.
type fileScenario struct {
	Name     string       `toml:"name"`
	Start    time.Time    `toml:"start"`
	Duration tomlDuration `toml:"duration"`
	Engine   []fileEngine `toml:"engine"`
}

type fileEngine struct {
	Name              string      `toml:"name"`
	Format            string      `toml:"format"`
	Model             string      `toml:"model"`
	EngineLabel       string      `toml:"engine_label"`
	MaxModelLen       int         `toml:"max_model_len"`
	BlockSize         int         `toml:"block_size"`
	NumGPUBlocks      int         `toml:"num_gpu_blocks"`
	Slots             int         `toml:"slots"`
	PrefillSpeed      float64     `toml:"prefill_speed"`
	MaxTokens         int         `toml:"max_tokens"`
	InterTokenLatency bool        `toml:"inter_token_latency"`
	Version           string      `toml:"version"`
	Speed             fileSpeed   `toml:"speed"`
	ProcessStart      string      `toml:"process_start_header"`
	Phase             []filePhase `toml:"phase"`
	Event             []fileEvent `toml:"event"`
	Serve             fileServe   `toml:"serve"`
}

type fileSpeed struct {
	Decode float64 `toml:"decode"`
	Prompt float64 `toml:"prompt"`
	TTFT   float64 `toml:"ttft"`
	Queue  float64 `toml:"queue"`
}

type filePhase struct {
	At              tomlDuration `toml:"at"`
	Idle            bool         `toml:"idle"`
	DecodeTPS       float64      `toml:"decode_tps"`
	PromptTPS       float64      `toml:"prompt_tps"`
	CachedFraction  float64      `toml:"cached_fraction"`
	Running         int          `toml:"running"`
	Waiting         int          `toml:"waiting"`
	Deferred        int          `toml:"deferred"`
	KVUsage         *float64     `toml:"kv_usage"`
	OutputLen       int          `toml:"output_len"`
	TTFT            tomlDuration `toml:"ttft"`
	QueueTime       tomlDuration `toml:"queue_time"`
	PreemptionsPerS float64      `toml:"preemptions_per_s"`
	AbortFraction   float64      `toml:"abort_fraction"`
	LengthFraction  float64      `toml:"length_fraction"`
}

type fileEvent struct {
	At    tomlDuration `toml:"at"`
	Kind  string       `toml:"kind"`
	For   tomlDuration `toml:"for"`
	Delay tomlDuration `toml:"delay"`
	Code  int          `toml:"code"`
	Label string       `toml:"label"`
	Carry tomlDuration `toml:"carry"`
}

// tomlDuration accepts only duration strings, so that a bare integer is an
// error rather than nanoseconds.
type tomlDuration time.Duration

func (d *tomlDuration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration string such as \"500ms\": %w", err)
	}
	*d = tomlDuration(v)
	return nil
}

func (f *fileScenario) scenario() *Scenario {
	sc := &Scenario{Name: f.Name, Start: f.Start, Duration: time.Duration(f.Duration)}
	for _, fe := range f.Engine {
		es := EngineSpec{
			Name: fe.Name, Format: Format(fe.Format), Model: fe.Model, EngineLabel: fe.EngineLabel,
			MaxModelLen: fe.MaxModelLen, BlockSize: fe.BlockSize, NumGPUBlocks: fe.NumGPUBlocks,
			Slots: fe.Slots, PrefillSpeed: fe.PrefillSpeed, MaxTokens: fe.MaxTokens,
			InterTokenLatency: fe.InterTokenLatency, Version: fe.Version, ProcessStartHeader: fe.ProcessStart,
			Speed: Speed{Decode: fe.Speed.Decode, Prompt: fe.Speed.Prompt, TTFT: fe.Speed.TTFT, Queue: fe.Speed.Queue},
		}
		for _, fp := range fe.Phase {
			kv := -1.0
			if fp.KVUsage != nil {
				kv = *fp.KVUsage
			}
			es.Phases = append(es.Phases, Phase{
				At: time.Duration(fp.At), Idle: fp.Idle, DecodeTPS: fp.DecodeTPS, PromptTPS: fp.PromptTPS,
				CachedFraction: fp.CachedFraction, Running: fp.Running, Waiting: fp.Waiting,
				Deferred: fp.Deferred, KVUsage: kv, OutputLen: fp.OutputLen,
				TTFT: time.Duration(fp.TTFT), QueueTime: time.Duration(fp.QueueTime),
				PreemptionsPerS: fp.PreemptionsPerS, AbortFraction: fp.AbortFraction,
				LengthFraction: fp.LengthFraction,
			})
		}
		for _, fv := range fe.Event {
			es.Events = append(es.Events, Event{
				At: time.Duration(fv.At), Kind: EventKind(fv.Kind), For: time.Duration(fv.For),
				Delay: time.Duration(fv.Delay), Code: fv.Code, Label: fv.Label, Carry: time.Duration(fv.Carry),
			})
		}
		es.Serve = fe.Serve.spec()
		sc.Engines = append(sc.Engines, es)
	}
	return sc
}

// maxLabelSets bounds the label sets of one engine (the first plus joins).
const maxLabelSets = 8

// Normalize fills in defaults, sorts phases and events by offset and checks
// the scenario. Errors name the engine and the key, e.g.
// `engine[0] "vllm-0": phase[2] (at 8s): cached_fraction: 1.5 is not in [0,1]`.
// [ParseScenario], [Scenario.Build], [Serve] and [Generate] call it.
func (sc *Scenario) Normalize() error {
	if len(sc.Engines) == 0 {
		return errors.New("no [[engine]]")
	}
	if sc.Start.IsZero() {
		sc.Start = DefaultStart
	}
	if sc.Duration < 0 {
		return fmt.Errorf("duration: %v is negative", sc.Duration)
	}
	names := map[string]bool{}
	var last time.Duration
	for i := range sc.Engines {
		es := &sc.Engines[i]
		if err := es.normalize(); err != nil {
			return fmt.Errorf("engine[%d] %q: %w", i, es.Name, err)
		}
		if names[es.Name] {
			return fmt.Errorf("engine[%d] %q: name: used twice", i, es.Name)
		}
		names[es.Name] = true
		for _, p := range es.Phases {
			last = max(last, p.At)
		}
		for _, ev := range es.Events {
			last = max(last, ev.At+ev.For+ev.Delay)
		}
	}
	if sc.Duration == 0 {
		sc.Duration = last + 10*time.Second
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func (es *EngineSpec) normalize() error {
	if !validName(es.Name) {
		return errors.New("name: want letters, digits, '-', '_' or '.'")
	}
	switch es.Format {
	case FormatVLLM:
		es.Model, es.MaxModelLen, es.PrefillSpeed = cmp.Or(es.Model, DefaultVLLMModel), cmp.Or(es.MaxModelLen, 8192),
			cmp.Or(es.PrefillSpeed, 8000)
	case FormatLlamaCpp:
		es.Model, es.MaxModelLen, es.PrefillSpeed = cmp.Or(es.Model, DefaultLlamaCppModel), cmp.Or(es.MaxModelLen, 4096),
			cmp.Or(es.PrefillSpeed, 1000)
		if es.InterTokenLatency {
			return errors.New("inter_token_latency: vLLM only")
		}
	case "":
		return errors.New("format: missing (vllm or llamacpp)")
	default:
		return fmt.Errorf("format: %q is not vllm or llamacpp", es.Format)
	}
	es.EngineLabel, es.BlockSize, es.NumGPUBlocks = cmp.Or(es.EngineLabel, "0"), cmp.Or(es.BlockSize, 16), cmp.Or(es.NumGPUBlocks, 20000)
	es.Slots, es.MaxTokens = cmp.Or(es.Slots, 4), cmp.Or(es.MaxTokens, 2048)
	switch {
	case es.MaxModelLen < 2:
		return fmt.Errorf("max_model_len: %d is too small", es.MaxModelLen)
	case es.BlockSize < 1:
		return fmt.Errorf("block_size: %d is not positive", es.BlockSize)
	case es.NumGPUBlocks < 1:
		return fmt.Errorf("num_gpu_blocks: %d is not positive", es.NumGPUBlocks)
	case es.Slots < 1:
		return fmt.Errorf("slots: %d is not positive", es.Slots)
	case es.MaxTokens < 1:
		return fmt.Errorf("max_tokens: %d is not positive", es.MaxTokens)
	case !(es.PrefillSpeed > 0) || math.IsInf(es.PrefillSpeed, 0):
		return fmt.Errorf("prefill_speed: %v is not a positive number", es.PrefillSpeed)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"decode", es.Speed.Decode}, {"prompt", es.Speed.Prompt}, {"ttft", es.Speed.TTFT}, {"queue", es.Speed.Queue}} {
		// Zero is "unchanged"; anything else must be a positive factor.
		if f.v != 0 && (!(f.v > 0) || math.IsInf(f.v, 0)) {
			return fmt.Errorf("speed.%s: %v is not a positive factor", f.key, f.v)
		}
	}
	// Indexes in errors count in file order, so check before sorting.
	for i := range es.Phases {
		p := &es.Phases[i]
		if err := es.normalizePhase(p); err != nil {
			return fmt.Errorf("phase[%d] (at %v): %w", i, p.At, err)
		}
	}
	labels := map[string]bool{es.EngineLabel: true}
	for i := range es.Events {
		ev := &es.Events[i]
		if err := es.normalizeEvent(ev, labels); err != nil {
			return fmt.Errorf("event[%d] (%s at %v): %w", i, ev.Kind, ev.At, err)
		}
	}
	slices.SortStableFunc(es.Phases, func(a, b Phase) int { return cmpDur(a.At, b.At) })
	slices.SortStableFunc(es.Events, func(a, b Event) int { return cmpDur(a.At, b.At) })
	for i := 1; i < len(es.Phases); i++ {
		if es.Phases[i].At == es.Phases[i-1].At {
			return fmt.Errorf("phase: two phases start at %v", es.Phases[i].At)
		}
	}
	return es.normalizeServe()
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func checkRate(key string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s: %v is not a finite number >= 0", key, v)
	}
	return nil
}

func checkFraction(key string, v float64) error {
	if !(v >= 0 && v <= 1) {
		return fmt.Errorf("%s: %v is not in [0,1]", key, v)
	}
	return nil
}

func (es *EngineSpec) normalizePhase(p *Phase) error {
	if p.At < 0 {
		return errors.New("at: negative offset")
	}
	if p.Idle && (p.DecodeTPS != 0 || p.PromptTPS != 0 || p.Running != 0 || p.Waiting != 0 ||
		p.Deferred != 0 || p.PreemptionsPerS != 0) {
		return errors.New("idle: an idle phase sets no rates, running, waiting, deferred or preemptions")
	}
	if p.OutputLen == 0 {
		p.OutputLen = DefaultOutputLen
	}
	for _, c := range []struct {
		key string
		v   float64
	}{{"decode_tps", p.DecodeTPS}, {"prompt_tps", p.PromptTPS}, {"preemptions_per_s", p.PreemptionsPerS}} {
		if err := checkRate(c.key, c.v); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		key string
		v   float64
	}{{"cached_fraction", p.CachedFraction}, {"abort_fraction", p.AbortFraction}, {"length_fraction", p.LengthFraction}} {
		if err := checkFraction(c.key, c.v); err != nil {
			return err
		}
	}
	switch {
	case p.AbortFraction+p.LengthFraction > 1:
		return errors.New("abort_fraction + length_fraction: more than 1")
	case p.Running < 0:
		return fmt.Errorf("running: %d is negative", p.Running)
	case p.Waiting < 0:
		return fmt.Errorf("waiting: %d is negative", p.Waiting)
	case p.Deferred < 0:
		return fmt.Errorf("deferred: %d is negative", p.Deferred)
	case p.OutputLen < 1:
		return fmt.Errorf("output_len: %d is not positive", p.OutputLen)
	case p.KVUsage > 1 || math.IsNaN(p.KVUsage):
		return fmt.Errorf("kv_usage: %v is not in [0,1]", p.KVUsage)
	case p.TTFT < 0:
		return errors.New("ttft: negative")
	case p.QueueTime < 0:
		return errors.New("queue_time: negative")
	case es.Format == FormatLlamaCpp && p.Running > es.Slots:
		return fmt.Errorf("running: %d exceeds slots = %d", p.Running, es.Slots)
	}
	return nil
}

func (es *EngineSpec) normalizeEvent(ev *Event, labels map[string]bool) error {
	if ev.At < 0 {
		return errors.New("at: negative offset")
	}
	window := func() error {
		if ev.For <= 0 {
			return errors.New("for: missing or not positive")
		}
		return nil
	}
	noExtra := func(allowed ...string) error {
		set := map[string]bool{}
		for _, a := range allowed {
			set[a] = true
		}
		switch {
		case ev.For != 0 && !set["for"]:
			return fmt.Errorf("for: not used by %s", ev.Kind)
		case ev.Delay != 0 && !set["delay"]:
			return fmt.Errorf("delay: not used by %s", ev.Kind)
		case ev.Code != 0 && !set["code"]:
			return fmt.Errorf("code: not used by %s", ev.Kind)
		case ev.Label != "" && !set["label"]:
			return fmt.Errorf("label: not used by %s", ev.Kind)
		case ev.Carry != 0 && !set["carry"]:
			return fmt.Errorf("carry: not used by %s", ev.Kind)
		}
		return nil
	}
	switch ev.Kind {
	case EventRestart:
		if ev.For < 0 {
			return errors.New("for: negative")
		}
		if ev.For > 0 && es.Format != FormatLlamaCpp {
			return errors.New("for: a loading answer needs format llamacpp")
		}
		return noExtra("for")
	case EventLabelJoin:
		if es.Format != FormatVLLM {
			return errors.New("kind: label_join needs format vllm (llama.cpp has no labels)")
		}
		if ev.Label == "" {
			ev.Label = "1"
		}
		if labels[ev.Label] {
			return fmt.Errorf("label: %q is already exported", ev.Label)
		}
		labels[ev.Label] = true
		if len(labels) > maxLabelSets {
			return fmt.Errorf("label: more than %d label sets", maxLabelSets)
		}
		if ev.Carry == 0 {
			ev.Carry = DefaultCarry
		}
		if ev.Carry < 0 {
			return errors.New("carry: negative")
		}
		return noExtra("label", "carry")
	case EventHang:
		if err := window(); err != nil {
			return err
		}
		return noExtra("for")
	case EventStatus:
		if err := window(); err != nil {
			return err
		}
		if ev.Code < 100 || ev.Code > 599 {
			return fmt.Errorf("code: %d is not an HTTP status", ev.Code)
		}
		return noExtra("for", "code")
	case EventSlow, EventStale:
		if err := window(); err != nil {
			return err
		}
		if ev.Delay <= 0 {
			return errors.New("delay: missing or not positive")
		}
		return noExtra("for", "delay")
	case "":
		return errors.New("kind: missing")
	default:
		return fmt.Errorf("kind: %q is not restart, label_join, hang, status, slow or stale", ev.Kind)
	}
}
