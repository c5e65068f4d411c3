// Package replay serves a recording's answers again, on the recording's own
// timeline: every target's recorded /metrics bodies byte-exact, its extra
// endpoints (/slots, ...), the recorded status codes and response headers,
// and its failures (a timeout hangs, a refused or cut answer closes the
// connection). Any recording, a real engine's included, becomes a scenario
// that "llmrec record" and a user's dashboard can scrape.
//
// A row's place on the timeline is the moment its request was sent
// (start_ns): the recorder asked then, and the engine's answer describes
// it. The answer leaves again as late as it came (first_byte_ns − start_ns,
// scaled by the speed), so a late answer stays late.
package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

	"github.com/llmrec/llmrec/record/capture"
)

// row is a scrape row as replaying reads it: without its parsed samples.
type row = capture.Scrape

// Answer is one recorded answer as it is served again.
type Answer struct {
	// At is when the recorder sent the request (Unix ns): the answer's
	// place on the timeline.
	At int64
	// Seq and RunID name the recorded row.
	Seq   int64
	RunID string
	// Latency is first byte − request sent as recorded (0 without an
	// answer); Lasted is end − request sent (how long a failure took).
	Latency, Lasted int64
	// Status is the recorded status, 0 when no answer came (a timeout, a
	// refused or cut connection: Failed).
	Status int
	// Failed marks an attempt without a complete answer (outcome error):
	// served as a connection held for Lasted and then closed.
	Failed bool
	// Error is the recorded error text of a failed attempt.
	Error string
	// Header are the recorded response headers (values as stored: a
	// redacted one is its digest), without the transport's own.
	Header map[string]string
	// Gzip says the engine sent the body gzip-encoded.
	Gzip bool
	// Body is the recorded body, byte-exact (after transport decompression).
	Body []byte
}

// Endpoint is one path of a target with its answers in time order.
type Endpoint struct {
	// Name is the capture's endpoint: "metrics" or an extra endpoint's path.
	Name string
	// Path is the URL path it is served on ("/metrics" for the main one,
	// unless the target's recorded URL said otherwise).
	Path    string
	Answers []Answer
}

// Target is one recorded target.
type Target struct {
	Name      string
	Endpoints []*Endpoint // the metrics endpoint first, then the others by name
}

// Recording is a run folder's answers, grouped by target and endpoint.
type Recording struct {
	Targets []*Target // by name
	// Start and End are the first and last request times of any answer
	// (Unix ns): the timeline runs from Start.
	Start, End int64
	// Rows is the number of answers held; Missed the missed ticks left out
	// (no request was sent: the answer before stays in force).
	Rows, Missed int
	// Journals is the number of live or crashed journals read.
	Journals int
}

// Load reads the run folder dir (its sealed segments, and its live or
// crashed journals as capture reads them in memory) into a Recording. The
// bodies are held in memory.
func Load(dir string) (*Recording, error) {
	run, err := capture.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	rec := &Recording{}
	byTarget := map[string]*Target{}
	add := func(r *row) error {
		if r.Outcome == capture.OutcomeMissed || r.StartNs == 0 {
			rec.Missed++
			return nil
		}
		t := byTarget[r.Target]
		if t == nil {
			t = &Target{Name: r.Target}
			byTarget[r.Target] = t
		}
		ep := t.endpoint(r)
		a, err := answerOf(r)
		if err != nil {
			return err
		}
		ep.Answers = append(ep.Answers, a)
		rec.Rows++
		return nil
	}
	for _, seg := range run.Segments {
		if err := capture.ReadScrapes(seg, capture.OmitSamples, add); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	for _, j := range run.Journals() {
		rows, err := capture.ReadLive(j)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		rec.Journals++
		for i := range rows {
			if err := add(&rows[i]); err != nil {
				return nil, err
			}
		}
	}
	// Nothing answered or was asked: nothing to serve.
	if rec.Rows == 0 {
		return nil, fmt.Errorf("replay: %s holds no scrape to serve (%d missed ticks)", dir, rec.Missed)
	}
	rec.Start, rec.End = int64(1<<63-1), int64(-1<<63)
	for _, t := range byTarget {
		rec.Targets = append(rec.Targets, t)
		slices.SortFunc(t.Endpoints, func(a, b *Endpoint) int {
			if (a.Name == capture.EndpointMetrics) != (b.Name == capture.EndpointMetrics) {
				if a.Name == capture.EndpointMetrics {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.Name, b.Name)
		})
		for _, ep := range t.Endpoints {
			slices.SortStableFunc(ep.Answers, func(a, b Answer) int { return cmp.Compare(a.At, b.At) })
			rec.Start = min(rec.Start, ep.Answers[0].At)
			rec.End = max(rec.End, ep.Answers[len(ep.Answers)-1].At)
		}
	}
	slices.SortFunc(rec.Targets, func(a, b *Target) int { return cmp.Compare(a.Name, b.Name) })
	return rec, nil
}

// endpoint is t's endpoint of r, added on first sight.
func (t *Target) endpoint(r *row) *Endpoint {
	for _, ep := range t.Endpoints {
		if ep.Name == r.Endpoint {
			return ep
		}
	}
	ep := &Endpoint{Name: r.Endpoint, Path: r.Endpoint}
	if r.Endpoint == capture.EndpointMetrics {
		ep.Path = "/metrics"
		if u, err := url.Parse(r.URL); err == nil && u.Path != "" {
			ep.Path = u.Path
		}
	}
	t.Endpoints = append(t.Endpoints, ep)
	return ep
}

// transport are the headers the serving side writes itself: the body's
// length, framing and encoding, the connection's handling. (Keep-Alive is
// served as stored: a client only reads it as a hint.)
var transport = map[string]bool{
	"Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Content-Encoding": true, "Trailer": true, "Upgrade": true,
}

func answerOf(r *row) (Answer, error) {
	// The reader's buffers are not the answer's to keep.
	a := Answer{At: r.StartNs, Seq: r.Seq, RunID: r.RunID, Body: bytes.Clone(r.Body)}
	if r.FirstByteNs > 0 {
		a.Latency = max(r.FirstByteNs-r.StartNs, 0)
	}
	if r.EndNs > 0 {
		a.Lasted = max(r.EndNs-r.StartNs, 0)
	}
	if r.Status != nil {
		a.Status = int(*r.Status)
	}
	a.Failed = r.Outcome == capture.OutcomeError
	if r.Error != nil {
		a.Error = *r.Error
	}
	a.Gzip = r.ContentEncoding != nil && *r.ContentEncoding == "gzip"
	if r.Headers != nil {
		var h map[string]string
		if err := json.Unmarshal([]byte(*r.Headers), &h); err != nil {
			return a, fmt.Errorf("replay: target %s %s seq %d: headers: %w", r.Target, r.Endpoint, r.Seq, err)
		}
		for k := range h {
			if transport[k] {
				delete(h, k)
			}
		}
		a.Header = h
	}
	// A recording made before the headers column kept the content type.
	if r.ContentType != nil && a.Header["Content-Type"] == "" {
		if a.Header == nil {
			a.Header = map[string]string{}
		}
		a.Header["Content-Type"] = *r.ContentType
	}
	return a, nil
}
