package capture

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// Sealing. A segment is closed into a Parquet file in the background, so a
// scrape that ends while a large segment is being encoded is journaled at
// once rather than waiting in memory:
//
//  1. the writer hands the open segment's rows and journal to the sealer and
//     opens the next journal; appends go on into it;
//  2. the sealer writes RUN-N.parquet.tmp, fsyncs it, renames it to
//     RUN-N.parquet and fsyncs the folder (encoder.write);
//  3. only then does it remove RUN-N.journal, still locked, so readers of
//     the folder know it is live until then.
//
// A kill before 3 leaves the journal, which recovery turns into the segment
// (or removes, when the .parquet already exists). One seal runs at a time:
// a rotation that finds one still running lets the open segment grow.

// DefaultSegmentBytes bounds the memory of the open segment's rows (bodies
// and samples): past it the segment is sealed early, or, while a seal is
// still running, further rows keep their body and samples in the journal
// only. One vLLM engine scraped every 2 s holds about 2 MB a minute; a
// 40 MB page seals every other scrape.
const DefaultSegmentBytes = 64 << 20

// rowGroupBytes bounds the rows a Parquet writer holds before it writes
// them out as a row group: a segment of large bodies is written in several.
const rowGroupBytes = 64 << 20

// writeBatch is how many rows go to the Parquet writer at a time, or fewer
// when they hold writeBatchBytes.
const (
	writeBatch      = 32
	writeBatchBytes = 8 << 20
)

// ErrJournalReplaced is wrapped by Append's error when the open segment's
// journal had been removed from the folder by someone else: its rows would
// have been lost in a crash. The writer journaled them again into a new
// journal; the error is not fatal.
var ErrJournalReplaced = errors.New("journal was removed from the run folder")

// openRow is a row of the open group.
type openRow struct {
	s  Scrape
	j  *journal // the journal its record is in
	at int64    // where its record starts in j
	// spilled: s holds no body and no samples; both are read back (the
	// samples parsed again) from j when the group is written. bodyOut: s
	// holds no body, read back from j then.
	spilled, bodyOut bool
	// packed: s holds no samples; packed has them, in the group's table
	// (nilSamples: s.Samples was nil).
	packed               []packedSample
	isPacked, nilSamples bool
	p                    *Pending // the parse of s still running when it was journaled; nil when s came parsed
	cost                 int64    // what the row adds to the writer's held bytes
}

// sealJob is a group handed to the sealer: the rows of the journals
// numbered first to last, all in js.
type sealJob struct {
	first, last int
	js          []*journal
	rows        []openRow
	packs       *keptGroup // the table of the rows' packed samples
	big         bool       // over the segment budget in memory, or of large pages: written fast, bodies whole
}

// single reports whether the job is one minute's journal: a segment that
// compaction may merge.
func (job *sealJob) single() bool { return job.first == job.last }

// rowBytes estimates the memory s holds: its body, its headers and its
// samples (their strings are shared with the page before, through the
// parser's interner). Every budget counts it: the open segment's, a write
// batch's (which bounds a page: parquet-go cuts pages between batches) and
// a row group's. Headers not counted made a batch of 35 rows a headers
// page of 243 MB.
func rowBytes(s *Scrape) int64 {
	n := int64(cap(s.Body)) + int64(len(s.Samples))*int64(unsafe.Sizeof(Sample{}))
	if s.Headers != nil {
		n += int64(len(*s.Headers))
	}
	return n
}

// groupBytesFactor bounds the rows of a group, those of its closed minutes
// (whose bodies are in their journals and samples packed) included: a
// group's file is written at most this many segment budgets of bodies and
// samples, so that a stop, which writes the open group, ends within a
// bound. Ten minutes of eight vLLM engines at 2 s are 266 MB. A group of
// large pages (largePage) is bounded by one budget.
const groupBytesFactor = 4

// largePage is the body size from which a group is written as a large
// segment always was: when its rows reach one segment budget, with zstd's
// fastest level and bodies whole. Such pages are few to a segment (a
// minute's journal of 4 MB pages every 100 ms is 40 MB), their deltas save
// little against the time a stop would spend on them: zstd's better level
// and the delta encoder on 256 MiB of 4 MB pages of random text took 20 s.
const largePage = 1 << 20

// isBig reports whether the open group has reached the segment budget in
// memory, or its bound in all (groupLimit).
func (w *Writer) isBig() bool {
	return w.held >= w.segBytes || w.spilled || w.groupBytes >= w.groupLimit()
}

// groupLimit is the bytes of bodies and samples the open group may hold in
// all.
func (w *Writer) groupLimit() int64 {
	if w.large {
		return w.segBytes
	}
	return groupBytesFactor * w.segBytes
}

// takeGroup hands over the open group as a seal job; the writer is left
// with no journal.
func (w *Writer) takeGroup() *sealJob {
	big := w.held >= w.segBytes || w.spilled || w.large
	job := &sealJob{first: w.first, last: w.seg, js: append(w.group, w.j), rows: w.rows, packs: w.packs, big: big}
	w.j, w.group, w.rows, w.minute, w.held, w.groupBytes, w.spilled, w.large = nil, nil, make([]openRow, 0, cap(job.rows)), 0, 0, 0, false, false
	w.packs = &keptGroup{}
	return job
}

// startSeal hands the open group to the sealer and opens the next
// journal. The caller has made sure no seal is in flight.
func (w *Writer) startSeal() error {
	job := w.takeGroup()
	err := w.open()
	w.first = w.seg
	done := make(chan error, 1)
	w.sealing = done
	go func() { done <- w.seal(job) }()
	return err
}

// pollSeal reports whether a seal is still running, and the error of one
// that has ended since the last call.
func (w *Writer) pollSeal() (busy bool, err error) {
	if w.sealing == nil {
		return false, nil
	}
	select {
	case err := <-w.sealing:
		w.sealing = nil
		return false, err
	default:
		return true, nil
	}
}

// waitSeal waits for the seal in flight, if any.
func (w *Writer) waitSeal() error {
	if w.sealing == nil {
		return nil
	}
	err := <-w.sealing
	w.sealing = nil
	return err
}

// seal writes job's group into its Parquet file, removes its journals and,
// when it is one minute's segment, hands the rows to compaction. On error
// the journals stay on disk for recovery.
func (w *Writer) seal(job *sealJob) error {
	closeAll := func() {
		for _, j := range job.js {
			j.close()
		}
	}
	// A group of several minutes is written once, as the file it stays:
	// zstd's better level, bodies as deltas. A single segment that
	// compaction will merge lives for minutes and is written with the
	// fastest level, its bodies whole (the merge makes the deltas); so is
	// a large group (speed matters more: a stop waits for it). One that
	// stays as it is gets the better level.
	codec := zstdBetter
	if job.big || job.single() && w.compactEvery > 1 {
		codec = zstdFast
	}
	w.enc.setCodec(codec)
	slices.SortStableFunc(job.rows, func(a, b openRow) int { return compareRows(&a.s, &b.s) })
	back := reparser{shapes: w.shapes}
	path := filepath.Join(w.dir, segName{w.run, job.first, job.last}.file())
	_, err := w.enc.write(path, func(pw *parquet.GenericWriter[Scrape]) error {
		// A group of minutes is one row group, as a merged file is: a key
		// frame per target and one string dictionary for all of it (cut at
		// the segment budget, eight vLLM engines at 2 s took 4 % more).
		// What parquet-go holds until the row group ends is its pages
		// compressed: the bodies are deltas.
		cut := int64(rowGroupBytes)
		if !job.single() && !job.big {
			cut *= groupBytesFactor
		}
		return writeRowsWith(pw, len(job.rows), codec != zstdFast, cut, func(i int) (Scrape, error) {
			r := &job.rows[i]
			if r.spilled {
				s, err := r.j.readAt(r.at)
				if err == nil {
					ParseCapped(&s, back.interner(&s), w.limits)
				}
				return s, err
			}
			if r.p != nil {
				r.p.apply(&r.s)
				r.p = nil
			}
			s := r.s
			if r.isPacked && !r.nilSamples {
				s.Samples = job.packs.samples(make([]Sample, 0, len(r.packed)), r.packed)
			}
			if !r.bodyOut {
				return s, nil
			}
			js, err := r.j.readAt(r.at)
			s.Body = js.Body
			return s, err
		})
	})
	if err != nil {
		closeAll()
		return err
	}
	// Removed while still locked: no reader sees an unlocked journal of a
	// sealed segment.
	for _, j := range job.js {
		if err == nil {
			err = removeJournal(j)
		}
	}
	closeAll()
	if err != nil {
		return err
	}
	w.seals.Add(1)
	if w.compactEvery <= 1 || w.stopMerge.Load() {
		// No merge to come (Close merges nothing): no rows to keep for one.
		return nil
	}
	if job.big || !job.single() {
		// A group of minutes is merged already. Merging adds little to a
		// file of large bodies and would hold them. The segments sealed
		// before are merged without it, and it stays as it is.
		return w.startCompaction()
	}
	rows := make([]Scrape, len(job.rows))
	for i := range job.rows {
		rows[i] = job.rows[i].s
	}
	w.sealed = append(w.sealed, job.first)
	w.kept.add(rows, w.keepBudget)
	if len(w.sealed) >= w.compactEvery {
		return w.startCompaction()
	}
	return nil
}

// startCompaction merges the sealed group in the background, after the
// merge before it; a group of one stays as it is.
func (w *Writer) startCompaction() error {
	segs, kept := w.sealed, w.kept
	w.sealed, w.kept = nil, &keptGroup{}
	if len(segs) < 2 || w.stopMerge.Load() {
		// A group of one, or the writer is closing: what is left unmerged
		// is merged by the next Recover.
		return nil
	}
	// One compaction at a time; it runs beside the sealer and the journal,
	// never holding up the next scrape's write.
	w.compacting.Wait()
	if err := w.compactErr; err != nil {
		return err
	}
	w.compacting.Go(func() { w.compactErr = compact(&w.cenc, w.dir, w.run, segs, kept, &w.stopMerge) })
	return nil
}

// removeJournal removes j's file. One already gone (removed by hand) is
// not an error: its rows are in the segment.
func removeJournal(j *journal) error {
	if err := os.Remove(j.f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove sealed journal: %w", err)
	}
	return nil
}

// checkJournal makes sure the open journal is still in the folder: one
// removed by someone else keeps taking writes that a crash would lose. It
// opens a new journal and writes the open segment's rows into it again,
// and returns an error wrapping ErrJournalReplaced.
func (w *Writer) checkJournal() (replaced error, err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(w.j.f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("stat journal %s: %w", w.j.f.Name(), err)
	}
	if st.Nlink > 0 {
		return nil, nil
	}
	old, opened := w.j, w.opened
	defer old.close()
	if err := w.open(); err != nil {
		return nil, err
	}
	w.opened = opened
	n := 0
	for i := range w.rows {
		r := &w.rows[i]
		if r.j != old {
			continue // a closed minute's, in its own journal
		}
		s := &r.s
		if r.spilled || r.bodyOut {
			// Its body is in the removed file, still open.
			rs, err := old.readAt(r.at)
			if err != nil {
				return nil, err
			}
			s = &rs
		}
		at, err := w.j.appendAt(s)
		if err != nil {
			return nil, err
		}
		r.j, r.at = w.j, at
		n++
	}
	return fmt.Errorf("%w: %s; its %d rows were journaled again into %s", ErrJournalReplaced,
		filepath.Base(old.f.Name()), n, filepath.Base(w.j.f.Name())), nil
}

// checkGroup makes sure the journals of the open group's closed minutes
// are still in the folder: the rows of one removed by someone else are
// journaled again into the open journal (read from the removed file, still
// open), and it returns an error wrapping ErrJournalReplaced.
func (w *Writer) checkGroup() (replaced error, err error) {
	for i := 0; i < len(w.group); i++ {
		old := w.group[i]
		var st syscall.Stat_t
		if err := syscall.Fstat(int(old.f.Fd()), &st); err != nil {
			return nil, fmt.Errorf("stat journal %s: %w", old.f.Name(), err)
		}
		if st.Nlink > 0 {
			continue
		}
		n := 0
		for k := range w.rows {
			r := &w.rows[k]
			if r.j != old {
				continue
			}
			rs, err := old.readAt(r.at)
			if err != nil {
				return nil, err
			}
			at, err := w.j.appendAt(&rs)
			if err != nil {
				return nil, err
			}
			r.j, r.at = w.j, at
			n++
		}
		w.group = slices.Delete(w.group, i, i+1)
		i--
		old.close()
		replaced = fmt.Errorf("%w: %s; its %d rows were journaled again into %s", ErrJournalReplaced,
			filepath.Base(old.f.Name()), n, filepath.Base(w.j.f.Name()))
	}
	return replaced, nil
}

// compareRows orders a segment's rows: by run, target, endpoint and seq.
func compareRows(a, b *Scrape) int {
	return cmp.Or(strings.Compare(a.RunID, b.RunID), strings.Compare(a.Target, b.Target),
		strings.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.Seq, b.Seq))
}

// writeRows writes the n rows row(0), ..., row(n-1) to pw in batches, and
// ends a row group whenever the rows since the last one hold rowGroupBytes:
// parquet-go holds a row group's pages until it is flushed.
func writeRows(pw *parquet.GenericWriter[Scrape], n int, row func(int) (Scrape, error)) error {
	return writeRowsWith(pw, n, true, rowGroupBytes, row)
}

// writeRowsWith is writeRows, storing bodies as deltas (bodydelta.go) or,
// when deltas is false, whole, and ending a row group at cut bytes.
func writeRowsWith(pw *parquet.GenericWriter[Scrape], n int, deltas bool, cut int64, row func(int) (Scrape, error)) error {
	batch := make([]Scrape, 0, writeBatch)
	var batchBytes, groupBytes int64
	var bd bodyDeltas
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := pw.Write(batch); err != nil {
			return err
		}
		runtime.Gosched()
		clear(batch) // let go of bodies read back from a journal
		batch = batch[:0]
		groupBytes += batchBytes
		batchBytes = 0
		if groupBytes < cut {
			return nil
		}
		groupBytes = 0
		bd.reset()
		return pw.Flush()
	}
	for i := range n {
		// A seal is the recorder's longest run of work (seconds of encoding
		// for a thousand targets): it yields between rows and batches, so
		// that timers due meanwhile (the tick loops') are run on time on a
		// processor it would otherwise hold until preempted (10 ms).
		runtime.Gosched()
		s, err := row(i)
		if err != nil {
			return err
		}
		n := rowBytes(&s)
		if deltas {
			bd.apply(&s)
		}
		batch = append(batch, s)
		if batchBytes += n; len(batch) == writeBatch || batchBytes >= writeBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
