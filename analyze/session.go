package analyze

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
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
	// Sealed files read up to an instant: each held open at the first row
	// after it (resumed), or read again from its first row (plain).
	resumed map[string]*resumed
	plain   map[string]bool
	// maxLater bounds the rows a resumed file keeps copied: a file whose
	// rows are that far out of order is read again from its first row
	// instead. 0 resumes no file.
	maxLater int

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
	return &Session{opts: opts, an: an, done: map[string]bool{}, offs: map[string]int64{},
		resumed: map[string]*resumed{}, plain: map[string]bool{}, maxLater: 4096}, nil
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
	s.closeUnlisted(files)
	for _, f := range files {
		if s.done[f.path] {
			continue
		}
		var err error
		before := a.rows
		if !f.live && s.resume(f, res) {
			continue
		}
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

// resumed is a sealed file read up to the instant of an update and held
// open at the first row after it (capture.Cursor), so that the next
// update reads on from there instead of from its first row: a frame of
// llmrec top replaying a finished recording decodes the seconds since the
// last frame, not the whole file again.
type resumed struct {
	cur   *capture.Cursor // nil until a row of the file is due
	ended bool            // the cursor was read to the file's end
	seals []capture.Seal  // the file's seals it was opened with
	// first is the earliest instant (scheduled, else start) of the
	// file's rows; once it is opened, after[k] is that of its rows from
	// row k on: where it is after the instant read up to, every row left
	// is.
	first int64
	rows  int // the file's rows, as sealed
	after []int64
	// held is the row the cursor stopped at (after the instant), not
	// delivered yet; later are rows taken from the cursor after the
	// instant while a row behind them was not, copied, in the file's
	// order. Neither has its body read.
	held  *laterRow
	later []laterRow
}

// close lets the file go (a cursor not opened yet has none).
func (rf *resumed) close() {
	if rf.cur != nil {
		rf.cur.Close()
	}
}

// laterRow is a row taken from a file's cursor, to deliver later, and its
// place in the file.
type laterRow struct {
	w *capture.Row
	k int64
}

// closeUnlisted closes the resumed files no longer listed.
func (s *Session) closeUnlisted(files []file) {
	listed := make(map[string]bool, len(files))
	for _, f := range files {
		listed[f.path] = true
	}
	for path, rf := range s.resumed {
		if !listed[path] {
			rf.close()
			delete(s.resumed, path)
		}
	}
}

// Close closes the files a session holds open.
func (s *Session) Close() {
	for path, rf := range s.resumed {
		rf.close()
		delete(s.resumed, path)
	}
}

// rowInstant is the instant Options.Until compares a row with.
func rowInstant(w *capture.Row) int64 { return cmp.Or(w.Scheduled, w.Start) }

// resume reads the sealed file f up to the instant through a file held
// open from the update before, and reports whether it did; false leaves
// the file to be read from its first row. The rows delivered, and their
// order, are a read from the first row's: the rows up to the instant not
// delivered before, in the file's order.
func (s *Session) resume(f file, res *Result) bool {
	a := s.an
	rf := s.resumed[f.path]
	// A file whose seals changed is opened again (its rows delivered
	// before are passed over as seen).
	if rf != nil && !slices.Equal(rf.seals, f.seals[filepath.Base(f.path)]) {
		rf.close()
		delete(s.resumed, f.path)
		rf = nil
	}
	// Read up to no instant, a file is read whole at once.
	if rf == nil && (s.opts.Until == 0 || s.plain[f.path] || s.maxLater == 0) {
		return false
	}
	if rf == nil {
		if rf = s.open(f); rf == nil {
			s.plain[f.path] = true
			return false
		}
		s.resumed[f.path] = rf
	}
	// A file whose rows are all after the instant is not opened yet.
	if rf.cur == nil && a.opts.Until != 0 && rf.first > a.opts.Until {
		return true
	}
	if rf.cur == nil {
		var err error
		rf.after, err = s.instants(f, rf.rows)
		if err == nil {
			rf.cur, err = s.cursor(f)
		}
		// A file that no longer reads as it did, or no longer matches its
		// seal, is read from its first row, which reports its damage.
		if err != nil {
			delete(s.resumed, f.path)
			s.plain[f.path] = true
			return false
		}
	}
	before := a.rows
	// A failed read is reported as Analyze's would be, and the file is
	// read from its first row at every update from then on.
	failed := func(err error) bool {
		res.Problems = append(res.Problems, readProblem(f.path, err, a.rows-before))
		rf.close()
		delete(s.resumed, f.path)
		s.plain[f.path] = true
		return true
	}
	due := func(w *capture.Row) bool { return a.opts.Until == 0 || rowInstant(w) <= a.opts.Until }
	later := rf.later[:0]
	for _, l := range rf.later {
		if !due(l.w) {
			later = append(later, l)
			continue
		}
		if err := s.deliverLater(rf, l); err != nil {
			return failed(err)
		}
	}
	clear(rf.later[len(later):])
	rf.later = later
	if rf.held != nil {
		if !due(rf.held.w) {
			return true
		}
		if err := s.deliverLater(rf, *rf.held); err != nil {
			return failed(err)
		}
		rf.held = nil
	}
	for !rf.ended {
		w, err := rf.cur.Next()
		if err == io.EOF {
			rf.close()
			rf.ended = true
			break
		}
		if err != nil {
			return failed(err)
		}
		if due(w) {
			a.row(w)
			continue
		}
		// Every row left is after the instant: the file stops here.
		k := rf.cur.Rows()
		if k >= int64(len(rf.after)) || rf.after[k] > a.opts.Until {
			rf.held = &laterRow{w, k - 1}
			return true
		}
		// Too many rows out of order: the file is read from its first row
		// at every update (the rows delivered are passed over as seen).
		if len(rf.later) >= s.maxLater {
			rf.close()
			delete(s.resumed, f.path)
			s.plain[f.path] = true
			return false
		}
		rf.later = append(rf.later, laterRow{cloneRow(w), k - 1})
	}
	if len(rf.later) == 0 && rf.held == nil {
		rf.close() // the file BodyAt opened again
		delete(s.resumed, f.path)
		s.done[f.path] = true
	}
	return true
}

// open prepares f for reading on at the next update. It returns nil
// when f is not a file that matches its seal (one that does not is read
// from its first row, as Analyze reads it, and reports its damage there).
func (s *Session) open(f file) *resumed {
	seal, err := f.seals.Verify(f.path)
	if seal == nil || err != nil {
		return nil
	}
	after, err := s.instants(f, int(seal.Rows))
	if err != nil {
		return nil
	}
	// Only the first instant is kept until the file is opened.
	return &resumed{seals: slices.Clone(f.seals[filepath.Base(f.path)]), first: after[0], rows: int(seal.Rows)}
}

// instants reads the instants of f's rows, which must be n, and returns
// the earliest of each row onwards (resumed.after).
func (s *Session) instants(f file, n int) ([]int64, error) {
	at := make([]int64, 0, n+1)
	err := capture.ReadKeys(s.an.tab, f.path, func(w *capture.Row) { at = append(at, rowInstant(w)) })
	if err == nil && len(at) != n {
		err = fmt.Errorf("segment %s: %d rows, sealed with %d", f.path, len(at), n)
	}
	if err != nil {
		return nil, err
	}
	at = append(at, math.MaxInt64)
	for i := n - 1; i >= 0; i-- {
		at[i] = min(at[i], at[i+1])
	}
	return at, nil
}

// cursor opens f's rows for the analyzer. Of a row after the instant, the
// family and type are decoded (it is delivered later, when what Known
// said may have changed); its body is read at its delivery, if WantBody
// asks for it then.
func (s *Session) cursor(f file) (*capture.Cursor, error) {
	a := s.an
	known := func(w *capture.Row) bool {
		if a.opts.Until != 0 && rowInstant(w) > a.opts.Until {
			a.looked = nil
			return false
		}
		return a.known(w)
	}
	wantBody := func(w *capture.Row) bool {
		if a.opts.Until != 0 && rowInstant(w) > a.opts.Until {
			return false
		}
		return a.wantBody(w)
	}
	return capture.OpenCursor(a.tab, f.seals, f.path, a.r.Headers, known, wantBody)
}

// deliverLater replays a row taken from a file's cursor at an update
// before: its body is read when the analyzer asks for it now, as a read
// of the file from its first row would have read it.
func (s *Session) deliverLater(rf *resumed, l laterRow) (err error) {
	a := s.an
	if a.wantBody(l.w) {
		if l.w.Body, err = rf.cur.BodyAt(l.k); err != nil {
			return err
		}
	}
	a.row(l.w)
	return nil
}

// cloneRow copies a row out of the reader's buffers.
func cloneRow(w *capture.Row) *capture.Row {
	c := *w
	c.Name, c.Labels, c.Value = slices.Clone(w.Name), slices.Clone(w.Labels), slices.Clone(w.Value)
	c.Family, c.Type = slices.Clone(w.Family), slices.Clone(w.Type)
	c.Headers = slices.Clone(w.Headers)
	return &c
}
