package capture

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

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
	Problems  []string       `json:"problems"` // files that could not be read, and why: skipped, not counted
}

// SegmentInfo is one closed segment.
type SegmentInfo struct {
	File  string `json:"file"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Verified: the file matched its seal (size, CRC-32C, rows). False
	// for a file the ledger has no seal of (recorded before it existed).
	Verified bool `json:"verified"`
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

// tally counts rows: a file's, then the run's.
type tally struct {
	rows        int64
	first, last int64
	acc         map[tallyKey]*EndpointReport
	errs, perrs map[tallyKey]map[string]int
}

type tallyKey struct{ target, endpoint string }

func newTally() *tally {
	return &tally{acc: map[tallyKey]*EndpointReport{}, errs: map[tallyKey]map[string]int{}, perrs: map[tallyKey]map[string]int{}}
}

func (t *tally) add(m *Scrape) {
	t.rows++
	if t.first == 0 || m.ScheduledNs < t.first {
		t.first = m.ScheduledNs
	}
	t.last = max(t.last, m.ScheduledNs)
	k := tallyKey{m.Target, m.Endpoint}
	e := t.endpoint(k, m.Seq)
	e.Rows++
	e.Outcomes[m.Outcome]++
	e.FirstSeq = min(e.FirstSeq, m.Seq)
	e.LastSeq = max(e.LastSeq, m.Seq)
	e.BodyBytes += int64(len(m.Body))
	// Redacted again: a recording of an older version may hold a URL with
	// its credentials in its errors.
	if m.Error != nil && m.Outcome != OutcomeMissed {
		t.errs[k][redact.Text(*m.Error)]++
	}
	if m.ParseError != nil {
		t.perrs[k][*m.ParseError]++
	}
}

func (t *tally) endpoint(k tallyKey, seq int64) *EndpointReport {
	e := t.acc[k]
	if e == nil {
		e = &EndpointReport{Endpoint: k.endpoint, Outcomes: map[string]int{}, FirstSeq: seq, LastSeq: seq}
		t.acc[k] = e
		t.errs[k] = map[string]int{}
		t.perrs[k] = map[string]int{}
	}
	return e
}

// merge adds u's counts to t.
func (t *tally) merge(u *tally) {
	if u.rows == 0 {
		return
	}
	if t.first == 0 || u.first < t.first {
		t.first = u.first
	}
	t.last = max(t.last, u.last)
	t.rows += u.rows
	for k, f := range u.acc {
		e := t.endpoint(k, f.FirstSeq)
		e.Rows += f.Rows
		for o, n := range f.Outcomes {
			e.Outcomes[o] += n
		}
		e.FirstSeq = min(e.FirstSeq, f.FirstSeq)
		e.LastSeq = max(e.LastSeq, f.LastSeq)
		e.BodyBytes += f.BodyBytes
		for m, n := range u.errs[k] {
			t.errs[k][m] += n
		}
		for m, n := range u.perrs[k] {
			t.perrs[k][m] += n
		}
	}
}

// Inspect reads every row of a run (segments, live and crashed journals)
// without the samples and summarises it. Each segment is checked against its seal
// first (see Seals.Verify). A segment that cannot be read, or differs from
// its seal, is listed in Problems and not counted; the rest is.
func Inspect(r *Run) Report {
	rep := Report{Dir: r.Dir, Live: nonNil(r.Live), Crashed: nonNil(r.Crashed), Recovered: nonNil(r.Recovered),
		Foreign: nonNil(r.Foreign), Runs: []string{}, Segments: []SegmentInfo{}, Targets: []TargetReport{}, Problems: []string{}}
	for _, m := range r.Manifests {
		rep.Runs = append(rep.Runs, m.RunID)
	}
	seals, err := ReadSeals(r.Dir)
	if err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}
	all := newTally()
	for _, seg := range r.Segments {
		seal, err := seals.Verify(seg)
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
			continue
		}
		// A file's rows count only once it has been read whole.
		t := newTally()
		err = ReadScrapes(seg, OmitSamples|OmitHeaders, func(s *Scrape) error { t.add(s); return nil })
		if err == nil {
			err = seal.CheckRows(seg, t.rows)
		}
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
			continue
		}
		all.merge(t)
		var size int64
		if st, err := os.Stat(seg); err == nil {
			size = st.Size()
		}
		rep.Segments = append(rep.Segments, SegmentInfo{File: filepath.Base(seg), Rows: t.rows, Bytes: size, Verified: seal != nil})
	}
	for _, j := range r.Journals() {
		rows, err := ReadLive(j)
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
		for i := range rows {
			all.add(&rows[i])
		}
	}
	rep.Rows, rep.FirstNs, rep.LastNs = all.rows, all.first, all.last
	byTarget := map[string]*TargetReport{}
	for k, e := range all.acc {
		e.Errors = counts(all.errs[k])
		e.ParseFails = counts(all.perrs[k])
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
// live journals. Several sessions in one folder can share a seq; run
// narrows the search to one run id when not empty. A damaged segment (see
// Seals.Verify and ReadSegment) is skipped: the row is found in the others,
// or the error says which were skipped.
func Find(r *Run, run, target, endpoint string, seq int64) (*Scrape, error) {
	var found []Scrape
	var skipped []error
	seals, err := ReadSeals(r.Dir)
	if err != nil {
		skipped = append(skipped, err)
	}
	match := func(s *Scrape) bool {
		return s.Target == target && s.Endpoint == endpoint && s.Seq == seq && (run == "" || s.RunID == run)
	}
	for _, seg := range r.Segments {
		seal, err := seals.Verify(seg)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		var in []Scrape
		var n int64
		err = ReadSegment(seg, func(s *Scrape) error {
			n++
			if match(s) {
				in = append(in, *s)
			}
			return nil
		})
		if err == nil {
			err = seal.CheckRows(seg, n)
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		found = append(found, in...)
	}
	for _, j := range r.Journals() {
		rows, err := ReadLive(j)
		if err != nil {
			skipped = append(skipped, err)
		}
		for i := range rows {
			if match(&rows[i]) {
				found = append(found, rows[i])
			}
		}
	}
	switch len(found) {
	case 0:
		err := fmt.Errorf("no row for target %q endpoint %q seq %d in %s", target, endpoint, seq, r.Dir)
		if len(skipped) > 0 {
			err = fmt.Errorf("%w; %d file(s) could not be read: %w", err, len(skipped), errors.Join(skipped...))
		}
		return nil, err
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("%d rows for target %q seq %d in %s (several runs): name one with --run", len(found), target, seq, r.Dir)
}
