package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/record/capture"
)

// Session analyses a recording that grows, again and again, reading only
// what is new each time: one analyzer is kept across updates, a sealed
// file read whole is not read again, a live journal is read on from where
// the last update stopped, and a row replayed before (a journal's row again
// in its sealed segment, a merged file's) is passed over. Each poll goes
// through the same engine reader and estimator as in Analyze, once, in the
// same order, so its cells are Analyze's. Of the findings it keeps the
// incidents and the fleet's latest tick, carried from one update to the
// next (findings.Follow: only the polls near the end are analysed again),
// and an update that read nothing new computes none. llmrec top follows a
// recording with it.
//
// It reads journals as they are appended: unlike Analyze it does not skip
// a damaged record in the middle of a journal (its read stops there) nor
// drop duplicate records.
type Session struct {
	opts Options
	an   *analyzer
	done map[string]bool  // sealed files read whole
	offs map[string]int64 // journals: bytes read

	follow findings.Follow
	// The last update's findings, and what it had read: rows replayed and
	// the files and sessions it saw.
	incidents []findings.Incident
	fleet     []findings.FleetPoint
	rows      int64
	seen      string
	updated   bool
}

// NewSession is a session on opts.Dirs; Options.Polls and Scrapes see each
// poll and row once, at the update that reads it. Spool, SkipPolls,
// Blocks, Phases and Clients are not used.
func NewSession(opts Options) (*Session, error) {
	if len(opts.Dirs) == 0 {
		return nil, errors.New("analyze: no run folder")
	}
	opts.Spool, opts.SkipPolls = "", false
	an := newAnalyzer(opts)
	an.r.Headers = true
	an.seen = map[[3]int32]int64{}
	return &Session{opts: opts, an: an, done: map[string]bool{}, offs: map[string]int64{}}, nil
}

// SetUntil moves the instant rows are read up to (Options.Until): only
// forward, as a replay goes.
func (s *Session) SetUntil(ns int64) { s.opts.Until, s.an.opts.Until = ns, ns }

// Update reads what is new and returns the recording so far: Inputs,
// Problems, Targets (name, engine, scrapes and summary counts; no polls,
// headlines or figures) and of the findings the Incidents and the fleet's
// latest tick, alone in Fleet.Polls (empty without one); the other
// findings are left out.
func (s *Session) Update() (*Result, error) {
	a := s.an
	res := &Result{Schema: Schema, Generator: "llmrec " + capture.Version, Inputs: []Input{}, Problems: []Problem{}, Targets: []Target{}}
	var files []file
	metas := map[string]*targetMeta{}
	for _, dir := range s.opts.Dirs {
		run, err := capture.Open(dir)
		if err != nil {
			return nil, err
		}
		seals, err := capture.ReadSeals(dir)
		if err != nil {
			res.Problems = append(res.Problems, Problem{File: dir, Error: err.Error(), Kind: ProblemSeals})
		}
		in, fs := inputOf(run)
		for i := range fs {
			fs[i].seals = seals
		}
		res.Inputs = append(res.Inputs, in)
		files = append(files, fs...)
		metaOf(run, metas)
	}
	a.metas = metas
	var seen strings.Builder
	for _, in := range res.Inputs {
		for _, r := range in.Recordings {
			end := ""
			if r.End != nil {
				end = *r.End
			}
			fmt.Fprintf(&seen, "%s %s;", r.RunID, end)
		}
	}
	for _, f := range files {
		fmt.Fprintf(&seen, "%s %v;", f.path, f.live)
	}
	slices.SortStableFunc(files, func(x, y file) int {
		return cmp.Or(cmp.Compare(x.start, y.start), strings.Compare(x.run, y.run), cmp.Compare(x.seg, y.seg),
			cmp.Compare(boolInt(x.live), boolInt(y.live)))
	})
	for _, f := range files {
		if s.done[f.path] {
			continue
		}
		var err error
		before := a.rows
		if f.live {
			var rows []capture.Scrape
			rows, s.offs[f.path], err = capture.ReadJournalFrom(f.path, s.offs[f.path])
			a.r.Journal(rows, a.row)
		} else {
			a.untilSkipped = false
			_, err = a.r.ReadSealed(f.seals, f.path, a.row)
			// A file read whole, up to no instant, has nothing more.
			s.done[f.path] = err == nil && !a.untilSkipped
		}
		if err != nil {
			res.Problems = append(res.Problems, readProblem(f.path, err, a.rows-before))
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	for _, st := range a.targets {
		t := Target{Name: st.out.Name, Hint: st.out.Hint, Scrapes: st.out.Scrapes, OtherEndpoints: st.out.OtherEndpoints,
			Summary: Summary{Polls: st.out.Summary.Polls, First: st.out.Summary.First, Last: st.out.Summary.Last}, Polls: []Poll{}}
		t.Engine, t.DetectedBy = st.tr.Engine()
		res.Targets = append(res.Targets, t)
	}
	slices.SortFunc(res.Targets, func(x, y Target) int { return strings.Compare(x.Name, y.Name) })
	// Nothing new read (no row, no file, no session ended): the same findings.
	if !s.updated || a.rows != s.rows || seen.String() != s.seen {
		var last *findings.FleetPoint
		s.incidents, last = s.follow.Update(a.run())
		s.fleet = []findings.FleetPoint{}
		if last != nil {
			s.fleet = append(s.fleet, *last)
		}
		s.rows, s.seen, s.updated = a.rows, seen.String(), true
	}
	res.Findings = findings.Findings{Incidents: s.incidents, Fleet: findings.Fleet{Polls: s.fleet}}
	return res, nil
}

// readProblem is a file's read error: the file skipped, or partial when
// rowsRead rows of it were replayed before the error.
func readProblem(path string, err error, rowsRead int64) Problem {
	p := Problem{File: path, Error: err.Error(), Kind: ProblemSkipped, RowsRead: rowsRead}
	if rowsRead > 0 {
		p.Kind = ProblemPartial
	}
	return p
}
