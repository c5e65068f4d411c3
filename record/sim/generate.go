package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"time"
)

// GenerateOptions configure [Generate].
type GenerateOptions struct {
	// Start is the wall-clock instant of offset 0; zero means the
	// scenario's Start.
	Start time.Time
	// Interval is the scrape interval of every target (default 2 s). Target
	// i of n is scheduled i*Interval/n after the tick, as a scraper that
	// spreads its targets does.
	Interval time.Duration
	// Duration is how long to record (default: the scenario's Duration).
	Duration time.Duration
	// Timeout is the scrape timeout (default: the interval, as the
	// recorder's): a response not complete by then is a failed scrape with
	// Status 0.
	Timeout time.Duration
	// Seed varies the simulated latencies.
	Seed int64
	// Info asks record.WriteGenerated to put the engines' information
	// endpoints (version, model, slots) into the manifest, as a recorder
	// fetches them when it starts.
	Info bool
}

// Generated is one simulated scrape.
type Generated struct {
	// Target is the engine name; Index its position in the scenario.
	Target string
	Index  int
	// Seq counts the scrapes of this target from 0.
	Seq int64
	// Scheduled, Start, FirstByte and End are Unix ns: when the scrape was
	// due, when the request went out, when the first body byte arrived (0 if
	// none did) and when the response was complete or the scrape timed out.
	Scheduled, Start, FirstByte, End int64
	// Rendered is the Unix ns instant the body describes (0 if none).
	Rendered int64
	// Status is the HTTP status; 0 when the scrape timed out.
	Status int
	// Behaviour is the event behaviour in force (hang, status, slow, stale).
	Behaviour EventKind
	// Missed is a tick that found this target's previous scrape (seq
	// Running) still running: as the recorder does, no request went out;
	// only Scheduled is set.
	Missed  bool
	Running int64
	// ContentType is the response's Content-Type.
	ContentType string
	// StartHeader and StartValue are the process-start response header
	// the answer carried (the engine build's own or the scenario's
	// process_start_header); "" when none.
	StartHeader, StartValue string
	// Body is the response body (uncompressed). It is only valid during the
	// call to emit: copy it to keep it.
	Body []byte
}

// Generate produces a recording of every engine of sc scraped every
// opts.Interval for opts.Duration, without sleeping, and calls emit for each
// scrape in order of Scheduled. Equal inputs give equal output. An error from
// emit stops Generate and is returned.
//
// Latencies are simulated: the request leaves up to 1 ms after it was due; a
// vLLM engine takes 2-5 ms to render, llama.cpp 0.3-0.8 ms; bodies move at
// 100 MB/s. The hang, status, slow and stale events shape the times as in
// [Serve].
func Generate(sc *Scenario, opts GenerateOptions, emit func(g Generated) error) error {
	engines, err := sc.Build(opts.Start)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	start := opts.Start
	if start.IsZero() {
		start = sc.Start
	}
	interval := opts.Interval
	if interval == 0 {
		interval = 2 * time.Second
	}
	if interval < 0 {
		return fmt.Errorf("sim: interval %v is negative", interval)
	}
	dur := opts.Duration
	if dur == 0 {
		dur = sc.Duration
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = interval
	}
	base := start.UnixNano()
	buf := make([]byte, 0, 64<<10)
	n := len(engines)
	// Each engine's last attempt: when it ends, and its seq.
	busy, last := make([]time.Duration, n), make([]int64, n)
	for seq := int64(0); ; seq++ {
		tick := time.Duration(seq) * interval
		if tick >= dur {
			return nil
		}
		for i, e := range engines {
			sched := tick + time.Duration(i)*interval/time.Duration(n)
			h := mix(uint64(opts.Seed), uint64(i), uint64(seq))
			g := Generated{Target: e.Name(), Index: i, Seq: seq, Scheduled: base + int64(sched)}
			// A tick that finds the previous scrape running is missed, never late.
			if seq > 0 && sched < busy[i] {
				g.Missed, g.Running = true, last[i]
				if err := emit(g); err != nil {
					return err
				}
				continue
			}
			reqAt := sched + time.Duration(h%1_000_000)
			last[i] = seq
			g.Start = base + int64(reqAt)
			lat := 2*time.Millisecond + time.Duration((h>>20)%3_000_000)
			if e.Format() == FormatLlamaCpp {
				lat = 300*time.Microsecond + time.Duration((h>>20)%500_000)
			}
			at := reqAt
			b := e.BehaviourAt(at)
			for b.Kind == EventHang {
				g.Behaviour = EventHang
				at = b.Until
				b = e.BehaviourAt(at)
			}
			if b.Kind != "" {
				g.Behaviour = b.Kind
			}
			renderAt := at + lat/2
			firstByte := at + lat
			var body []byte
			g.Status = http.StatusOK
			g.ContentType = e.ContentType()
			g.StartHeader, g.StartValue = e.startHeader(at, "/metrics")
			switch b.Kind {
			case EventStatus:
				g.Status = b.Code
				g.ContentType, body = StatusAnswer(b)
				renderAt = 0
			case EventStale:
				firstByte += b.Delay
			}
			if firstByte-reqAt > timeout {
				g.Status, g.ContentType = 0, ""
				g.End = g.Start + int64(timeout)
				busy[i] = reqAt + timeout
				if err := emit(g); err != nil {
					return err
				}
				continue
			}
			if renderAt > 0 {
				buf = e.AppendRender(buf[:0], renderAt)
				body = buf
				g.Rendered = base + int64(renderAt)
			}
			end := firstByte + time.Duration(len(body))*10
			if b.Kind == EventSlow {
				end += b.Delay
			}
			g.FirstByte = base + int64(firstByte)
			g.End = base + int64(end)
			g.Body = body
			busy[i] = end
			if end-reqAt > timeout {
				g.Status, g.Body, g.ContentType, g.Rendered = 0, nil, "", 0
				g.End = g.Start + int64(timeout)
				busy[i] = reqAt + timeout
			}
			if err := emit(g); err != nil {
				return err
			}
		}
	}
}

// mix hashes its arguments (splitmix64 steps) into a deterministic
// pseudo-random number.
func mix(xs ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, x := range xs {
		h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
		h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
		h = (h ^ h>>27) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

var longModels = []string{
	"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-4B-Instruct-2507-FP8", "mistralai/Mistral-7B-Instruct-v0.3",
	"Qwen/Qwen2.5-32B-Instruct-AWQ", "google/gemma-3-12b-it",
}

// LongScenario builds a synthetic scenario of the given number of engines
// over d, for benchmarks: every fourth engine is llama.cpp, the rest vLLM;
// load follows a daily cycle with random phases of a few minutes to half an
// hour, idle spells, capacity queueing and preemptions at peaks. Odd engines
// restart once, engine 0 gets a second label set at d/2, and each engine has
// a hang, and a stale, slow or failing window. Equal arguments give equal
// scenarios.
func LongScenario(engines int, d time.Duration, seed int64) *Scenario {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x11a7ec))
	clampDur := func(x, lo, hi time.Duration) time.Duration { return min(max(x, lo), hi) }
	minLen := clampDur(d/200, 10*time.Second, 10*time.Minute)
	maxLen := clampDur(d/40, 30*time.Second, 40*time.Minute)
	within := func(lo, hi float64) time.Duration {
		return time.Duration((lo + (hi-lo)*rng.Float64()) * float64(d)).Truncate(time.Second)
	}
	sc := &Scenario{Name: fmt.Sprintf("long-%d-%v-%d", engines, d, seed), Start: DefaultStart, Duration: d}
	for i := range engines {
		es := EngineSpec{Format: FormatVLLM, Model: longModels[i%len(longModels)]}
		capacity := 2500 + 1500*rng.Float64()
		maxRunning := 64.0
		if i%4 == 3 {
			es.Format, es.Model, es.Slots = FormatLlamaCpp, "models/qwen2.5-7b-instruct-q4_k_m.gguf", 4
			capacity, maxRunning = 60+60*rng.Float64(), 4
			es.Name = fmt.Sprintf("llamacpp-%d", i)
		} else {
			es.Name = fmt.Sprintf("vllm-%d", i)
		}
		shift := rng.Float64()
		for t := time.Duration(0); t < d; {
			f := 0.55 - 0.45*math.Cos(2*math.Pi*(t.Hours()/24+shift))
			f = min(f*(0.6+0.6*rng.Float64()), 1.1)
			p := Phase{At: t, KVUsage: -1, OutputLen: 100 + rng.IntN(400)}
			if rng.Float64() < 0.08 || f < 0.03 {
				p.Idle = true
			} else {
				p.DecodeTPS = math.Round(capacity * min(f, 1))
				p.PromptTPS = math.Round(p.DecodeTPS * (2 + 4*rng.Float64()))
				p.CachedFraction = math.Round((0.1+0.6*rng.Float64())*100) / 100
				p.Running = min(max(int(math.Ceil(maxRunning*min(f, 1))), 1), int(maxRunning))
				if f > 0.9 {
					p.Waiting = int(math.Ceil((f - 0.9) * 10 * maxRunning / 4))
					if es.Format == FormatVLLM {
						p.PreemptionsPerS = 0.2
					}
				}
				if es.Format == FormatVLLM && rng.Float64() < 0.1 {
					p.Deferred = 1 + rng.IntN(3)
				}
				p.AbortFraction, p.LengthFraction = 0.01, 0.05
			}
			es.Phases = append(es.Phases, p)
			t += minLen + time.Duration(rng.Int64N(int64(maxLen-minLen)+1))
			t = t.Truncate(time.Second)
		}
		if i%2 == 1 {
			es.Events = append(es.Events, Event{At: within(0.3, 0.7), Kind: EventRestart})
		}
		if i == 0 && es.Format == FormatVLLM {
			es.Events = append(es.Events, Event{At: (d / 2).Truncate(time.Second), Kind: EventLabelJoin, Label: "1", Carry: time.Hour})
		}
		es.Events = append(es.Events, Event{At: within(0.05, 0.9), Kind: EventHang,
			For: time.Duration(3+rng.IntN(6)) * time.Second})
		switch i % 3 {
		case 0:
			es.Events = append(es.Events, Event{At: within(0.05, 0.9), Kind: EventStale, Delay: 1500 * time.Millisecond, For: 30 * time.Second})
		case 1:
			es.Events = append(es.Events, Event{At: within(0.05, 0.9), Kind: EventSlow, Delay: time.Second, For: 30 * time.Second})
		default:
			es.Events = append(es.Events, Event{At: within(0.05, 0.9), Kind: EventStatus, Code: 503, For: 10 * time.Second})
		}
		sc.Engines = append(sc.Engines, es)
	}
	return sc
}
