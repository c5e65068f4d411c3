package record

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// GenerateStats says what WriteGenerated wrote.
type GenerateStats struct {
	RunID     string
	Scrapes   int64
	Samples   int64
	BodyBytes int64 // raw bodies, as served
	DiskBytes int64 // closed segments
	Segments  int
}

// WriteGenerated writes a recording of a simulated scenario into dir without
// waiting for the clock: the rows a real `llmrec record` at opts.Interval
// would have written, through the same parse and segment path, one segment
// per rotate of simulated time (0 = 60 s). progress, if not nil, is called
// after each segment with the scrapes written so far, and once more when
// the last is closed.
func WriteGenerated(dir string, sc *sim.Scenario, opts sim.GenerateOptions, rotate time.Duration, progress func(written, total int64)) (GenerateStats, error) {
	if rotate <= 0 {
		rotate = capture.DefaultRotate
	}
	start := opts.Start
	if start.IsZero() {
		start = sc.Start
	}
	if start.IsZero() {
		start = sim.DefaultStart
	}
	opts.Start = start
	interval := opts.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	dur := opts.Duration
	if dur <= 0 {
		dur = sc.Duration
	}
	total := int64(dur/interval) * int64(len(sc.Engines))
	st := GenerateStats{RunID: NewRunID(start)}
	w, err := capture.NewWriter(dir, st.RunID, 1000*time.Hour)
	if err != nil {
		return st, err
	}
	m := capture.Manifest{SchemaVersion: capture.SchemaVersion, RunID: st.RunID, Start: start.UTC().Format(time.RFC3339Nano),
		StartNs: start.UnixNano(), Host: "simulated", Version: capture.Version,
		Config: map[string]any{"generated": sc.Name, "interval": interval.String(), "duration": dur.String()}}
	for _, e := range sc.Engines {
		m.Targets = append(m.Targets, capture.ManifestTarget{Name: e.Name, Engine: string(e.Format),
			URL: "sim://" + e.Name + "/metrics", IntervalNs: int64(interval), TimeoutNs: int64(interval)})
	}
	if opts.Info {
		engines, err := sc.Build(start)
		if err != nil {
			w.Close()
			return st, fmt.Errorf("sim: %w", err)
		}
		m.Engines = map[string][]capture.EngineInfo{}
		for _, e := range engines {
			for _, path := range []string{"/version", "/v1/models", "/props"} {
				if body := e.InfoJSON(path, start); body != nil {
					m.Engines[e.Name()] = append(m.Engines[e.Name()], capture.EngineInfo{Path: path, Status: http.StatusOK, JSON: body})
				}
			}
		}
	}
	if err := capture.WriteManifest(dir, m); err != nil {
		w.Close()
		return st, err
	}
	nextSeal := start.Add(rotate).UnixNano()
	err = sim.Generate(sc, opts, func(g sim.Generated) error {
		if g.Scheduled >= nextSeal {
			if err := w.Rotate(); err != nil {
				return err
			}
			for nextSeal <= g.Scheduled {
				nextSeal += int64(rotate)
			}
			if progress != nil {
				progress(st.Scrapes, total)
			}
		}
		row := FromGenerated(st.RunID, g)
		st.Scrapes++
		st.Samples += int64(len(row.Samples))
		st.BodyBytes += int64(len(g.Body))
		return w.Append(row)
	})
	// No one waits on a generated recording: it is merged whole.
	if cerr := w.CloseMerged(); err == nil {
		err = cerr
	}
	st.DiskBytes, st.Segments = w.BytesWritten(), len(w.Segments())
	if err != nil {
		return st, fmt.Errorf("generate recording: %w", err)
	}
	if progress != nil {
		progress(st.Scrapes, total)
	}
	end := start.Add(dur)
	es, ens := end.UTC().Format(time.RFC3339Nano), end.UnixNano()
	m.End, m.EndNs = &es, &ens
	return st, capture.WriteManifest(dir, m)
}

// FromGenerated is the row the recorder would have written for a simulated
// scrape, samples parsed. The body is copied.
func FromGenerated(runID string, g sim.Generated) capture.Scrape {
	s := capture.Scrape{RunID: runID, Target: g.Target, Endpoint: capture.EndpointMetrics,
		URL: "sim://" + g.Target + "/metrics", Seq: g.Seq, ScheduledNs: g.Scheduled, StartNs: g.Start,
		FirstByteNs: g.FirstByte, EndNs: g.End}
	if g.Missed {
		s.Outcome = capture.OutcomeMissed
		msg := fmt.Sprintf("previous scrape (seq %d) still running", g.Running)
		s.Error = &msg
		return s
	}
	if g.Status == 0 {
		s.Outcome = capture.OutcomeError
		msg := "timeout (simulated)"
		s.Error = &msg
		return s
	}
	status := int32(g.Status)
	s.Status = &status
	ct := g.ContentType
	s.ContentType = &ct
	s.Body = append([]byte(nil), g.Body...)
	// The headers Go's server sends with an answer not compressed, and the
	// engine's process-start header, stored as the recorder stores them.
	h := http.Header{"Content-Length": {strconv.Itoa(len(g.Body))}, "Content-Type": {ct},
		"Date": {time.Unix(0, g.FirstByte).UTC().Format(http.TimeFormat)}}
	if g.StartHeader != "" {
		h.Set(g.StartHeader, g.StartValue)
	}
	s.Headers = responseHeaders(h, g.StartHeader)
	if g.Status != http.StatusOK {
		s.Outcome = capture.OutcomeHTTPError
		msg := fmt.Sprintf("HTTP %d %s", g.Status, http.StatusText(g.Status))
		s.Error = &msg
		return s
	}
	s.Outcome = capture.OutcomeOK
	capture.Parse(&s)
	return s
}
