package capture

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/record/redact"
)

// Report summarises a run folder: what `llmrec inspect` prints.
type Report struct {
	Dir       string         `json:"dir"`
	Runs      []string       `json:"runs"`
	Segments  []SegmentInfo  `json:"segments"`
	Live      []string       `json:"live_journals"`
	Crashed   []string       `json:"crashed_journals"` // read in memory (see Run.Crashed)
	Recovered []Recovery     `json:"recovered"`
	Foreign   []string       `json:"foreign"` // files llmrec did not write: not read, left alone
	FirstNs   int64          `json:"first_scheduled_ns"`
	LastNs    int64          `json:"last_scheduled_ns"`
	Targets   []TargetReport `json:"targets"`
	Rows      int64          `json:"rows"`
	Problems  []string       `json:"problems"` // segments and journals that could not be read, and why
}

// SegmentInfo is one closed segment.
type SegmentInfo struct {
	File  string `json:"file"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// TargetReport counts one target's rows by endpoint and outcome.
type TargetReport struct {
	Name      string           `json:"name"`
	Endpoints []EndpointReport `json:"endpoints"`
}

// EndpointReport counts one endpoint's rows.
type EndpointReport struct {
	Endpoint   string         `json:"endpoint"`
	Rows       int64          `json:"rows"`
	Outcomes   map[string]int `json:"outcomes"`
	FirstSeq   int64          `json:"first_seq"`
	LastSeq    int64          `json:"last_seq"`
	BodyBytes  int64          `json:"body_bytes"`
	Errors     []ErrorCount   `json:"errors"` // distinct messages, most frequent first
	ParseFails []ErrorCount   `json:"parse_errors"`
}

// ErrorCount is one distinct error message and how often it occurred.
type ErrorCount struct {
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// meta is the projection inspect reads: every column but the samples.
type meta struct {
	RunID       string  `parquet:"run_id"`
	Target      string  `parquet:"target"`
	Endpoint    string  `parquet:"endpoint"`
	Seq         int64   `parquet:"seq"`
	Outcome     string  `parquet:"outcome"`
	ScheduledNs int64   `parquet:"scheduled_ns"`
	Error       *string `parquet:"error,optional"`
	ParseError  *string `parquet:"parse_error,optional"`
	Body        []byte  `parquet:"body,optional"`
}

// Inspect reads every row of a run (segments, live and crashed journals)
// without the samples and summarises it. A file that cannot be read is
// listed in Problems and the rest is still counted.
func Inspect(r *Run) Report {
	rep := Report{Dir: r.Dir, Live: nonNil(r.Live), Crashed: nonNil(r.Crashed), Recovered: nonNil(r.Recovered),
		Foreign: nonNil(r.Foreign), Runs: []string{}, Segments: []SegmentInfo{}, Targets: []TargetReport{}, Problems: []string{}}
	for _, m := range r.Manifests {
		rep.Runs = append(rep.Runs, m.RunID)
	}
	type key struct{ target, endpoint string }
	acc := map[key]*EndpointReport{}
	errs := map[key]map[string]int{}
	perrs := map[key]map[string]int{}
	add := func(m *meta) {
		rep.Rows++
		if rep.FirstNs == 0 || m.ScheduledNs < rep.FirstNs {
			rep.FirstNs = m.ScheduledNs
		}
		rep.LastNs = max(rep.LastNs, m.ScheduledNs)
		k := key{m.Target, m.Endpoint}
		e := acc[k]
		if e == nil {
			e = &EndpointReport{Endpoint: m.Endpoint, Outcomes: map[string]int{}, FirstSeq: m.Seq, LastSeq: m.Seq}
			acc[k] = e
			errs[k] = map[string]int{}
			perrs[k] = map[string]int{}
		}
		e.Rows++
		e.Outcomes[m.Outcome]++
		e.FirstSeq = min(e.FirstSeq, m.Seq)
		e.LastSeq = max(e.LastSeq, m.Seq)
		e.BodyBytes += int64(len(m.Body))
		// Redacted again: a recording of an older version may hold a
		// URL with its credentials in its errors.
		if m.Error != nil && m.Outcome != OutcomeMissed {
			errs[k][redact.Text(*m.Error)]++
		}
		if m.ParseError != nil {
			perrs[k][*m.ParseError]++
		}
	}
	for _, seg := range r.Segments {
		var n int64
		err := ReadSegment(seg, func(m *meta) error { add(m); n++; return nil })
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
			continue
		}
		var size int64
		if st, err := os.Stat(seg); err == nil {
			size = st.Size()
		}
		rep.Segments = append(rep.Segments, SegmentInfo{File: filepath.Base(seg), Rows: n, Bytes: size})
	}
	for _, j := range r.Journals() {
		rows, err := ReadLive(j)
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
		for _, s := range rows {
			add(&meta{RunID: s.RunID, Target: s.Target, Endpoint: s.Endpoint, Seq: s.Seq, Outcome: s.Outcome,
				ScheduledNs: s.ScheduledNs, Error: s.Error, ParseError: s.ParseError, Body: s.Body})
		}
	}
	byTarget := map[string]*TargetReport{}
	for k, e := range acc {
		e.Errors = counts(errs[k])
		e.ParseFails = counts(perrs[k])
		t := byTarget[k.target]
		if t == nil {
			t = &TargetReport{Name: k.target}
			byTarget[k.target] = t
		}
		t.Endpoints = append(t.Endpoints, *e)
	}
	for _, t := range byTarget {
		slices.SortFunc(t.Endpoints, func(a, b EndpointReport) int { return cmp.Compare(a.Endpoint, b.Endpoint) })
		rep.Targets = append(rep.Targets, *t)
	}
	slices.SortFunc(rep.Targets, func(a, b TargetReport) int { return cmp.Compare(a.Name, b.Name) })
	return rep
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func counts(m map[string]int) []ErrorCount {
	out := make([]ErrorCount, 0, len(m))
	for msg, n := range m {
		out = append(out, ErrorCount{msg, n})
	}
	slices.SortFunc(out, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Message, b.Message))
	})
	return out
}

// Find returns the row of target, endpoint and seq, searching segments and
// journals. Several sessions in one folder can share a seq; run narrows the
// search to one run id when not empty. A file that cannot be read is
// skipped, and named when the row is not found.
func Find(r *Run, run, target, endpoint string, seq int64) (*Scrape, error) {
	var found []Scrape
	var unread []string
	match := func(s *Scrape) bool {
		return s.Target == target && s.Endpoint == endpoint && s.Seq == seq && (run == "" || s.RunID == run)
	}
	for _, seg := range r.Segments {
		err := ReadSegment(seg, func(s *Scrape) error {
			if match(s) {
				c := *s
				c.Body = slices.Clone(s.Body)
				found = append(found, c)
			}
			return nil
		})
		if err != nil {
			unread = append(unread, err.Error())
		}
	}
	for _, j := range r.Journals() {
		rows, err := ReadLive(j)
		if err != nil {
			unread = append(unread, err.Error())
		}
		for i := range rows {
			if match(&rows[i]) {
				found = append(found, rows[i])
			}
		}
	}
	switch len(found) {
	case 0:
		if len(unread) > 0 {
			return nil, fmt.Errorf("no row for target %q endpoint %q seq %d in %s; %d file(s) could not be read: %s",
				target, endpoint, seq, r.Dir, len(unread), strings.Join(unread, "; "))
		}
		return nil, fmt.Errorf("no row for target %q endpoint %q seq %d in %s", target, endpoint, seq, r.Dir)
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("%d rows for target %q seq %d in %s (several runs): name one with --run", len(found), target, seq, r.Dir)
}
