package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmrec/llmrec/record/expo"
	"github.com/parquet-go/parquet-go"
)

// DefaultRotate is how long a segment stays open before it is closed into a
// Parquet file.
const DefaultRotate = 60 * time.Second

// pageBufferSize is large so that one page of the body column holds many
// consecutive bodies of one target: page compression sees each page alone,
// and bodies differ little from one scrape to the next. A 60 s segment of
// a 47 KB page at 2 s is 1.4 MB, so 4 MiB keeps a target's segment in one
// page. parquet-go sizes every required column's buffer from it, so the
// encoder is kept and reused across segments (see encoder).
const pageBufferSize = 4 << 20

// Writer appends scrape rows to a run folder. It journals each row before
// returning and closes the open segment into a Parquet file every Rotate,
// or sooner when its rows reach the segment budget (SetSegmentBytes).
// Closing a segment (sealing) runs in the background, off the append path:
// the writer switches to the next journal at once (see seal.go).
// It is not safe for concurrent use: one goroutine owns it.
type Writer struct {
	dir, run string
	rotate   time.Duration
	seg      int
	j        *journal
	// The open group: its journals before j (closed minutes, still locked,
	// oldest first), the number of its first, and the rows of all of them.
	// Rows of a closed minute hold their samples, not their body: it is
	// read back from its journal when the group is written.
	group      []*journal
	first      int
	rows       []openRow
	minute     int        // rows[minute:] are the open minute's
	packs      *keptGroup // the table of the closed minutes' packed samples
	held       int64      // bytes of bodies and samples the group's rows hold in memory
	groupBytes int64      // bytes of bodies and samples of the group's rows, wherever they are
	spilled    bool       // some rows hold neither: they are in the journal only
	large      bool       // some row's body is a large page (largePage)
	opened     time.Time
	closed     bool

	// segBytes is the budget of the open segment's rows (SetSegmentBytes).
	// limits parse the rows read back from the journal (SetLimits).
	segBytes int64
	limits   Limits
	// shapes are read against by the parse of those rows (SetShapes).
	shapes *expo.Shapes

	// Sealing, in the background, one segment at a time (see seal.go).
	// The sealer owns enc, sealed, kept and the compaction fields while a
	// seal is in flight; the writer touches them only after waiting.
	sealing chan error // nil: no seal in flight
	seals   atomic.Int64

	enc encoder // of one-minute segments

	// Compaction of sealed segments, in the background (see compact.go).
	// Like enc, its encoder is kept from one merge to the next, so its
	// buffers grow to a merged file's size once, not at every merge.
	compactEvery int
	cenc         encoder
	sealed       []int
	kept         *keptGroup // kept.segs[i]: the rows of sealed[i], or nil
	keepBudget   int64
	compacting   sync.WaitGroup
	compactErr   error // of the last background compaction, read after Wait
	// stopMerge, set by Close, stops the merge in flight at its next row
	// and keeps seals from starting another.
	stopMerge atomic.Bool
}

// DefaultKeepBytes bounds the memory a writer spends on keeping the rows of
// its sealed segments until they are compacted (see kept.go): merging ten
// segments from memory costs a quarter of decoding their files again.
// Segments past the budget are read back from their files. One vLLM engine
// scraped every 2 s keeps about 20 MB over ten one-minute segments (300
// bodies of 47 KB and 360 packed samples each), so three such engines fit.
// While a merge runs, the group it merges is held as well.
const DefaultKeepBytes = 64 << 20

// NewWriter recovers any crashed segments in dir and opens a new segment
// for run. A rotate of 0 means DefaultRotate.
func NewWriter(dir, run string, rotate time.Duration) (*Writer, error) {
	if rotate <= 0 {
		rotate = DefaultRotate
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run folder: %w", err)
	}
	if _, err := Recover(dir); err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, run: run, rotate: rotate, compactEvery: DefaultCompactEvery,
		kept: &keptGroup{}, packs: &keptGroup{}, keepBudget: DefaultKeepBytes, segBytes: DefaultSegmentBytes, limits: DefaultLimits}
	last, err := lastSegment(dir, run)
	if err != nil {
		return nil, err
	}
	w.seg = last
	if err := w.open(); err != nil {
		return nil, err
	}
	w.first = w.seg
	return w, nil
}

func segmentBase(run string, seg int) string { return fmt.Sprintf("%s-%06d", run, seg) }

// folderNames lists the names in a run folder.
func folderNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list run folder: %w", err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

func lastSegment(dir, run string) (int, error) {
	names, err := folderNames(dir)
	if err != nil {
		return 0, err
	}
	last := 0
	for _, name := range names {
		s, ok := parseSegName(name)
		if ok && s.run == run && s.last > last {
			last = s.last
		}
	}
	return last, nil
}

func (w *Writer) open() error {
	w.seg++
	path := filepath.Join(w.dir, segmentBase(w.run, w.seg)+".journal")
	j, err := createJournal(path)
	if err != nil {
		return err
	}
	// The lock tells readers of the folder that this journal is live and
	// must not be recovered under the writer's feet.
	// It waits: a new journal is contended only by a reader's check of
	// whether it is live (locked), which lets go at once.
	if err := syscall.Flock(int(j.f.Fd()), syscall.LOCK_EX); err != nil {
		j.close()
		return fmt.Errorf("lock journal %s: %w", path, err)
	}
	w.j = j
	w.opened = time.Now()
	return nil
}

// Append journals s and keeps it for the open segment; it hands the
// segment to the sealer when it has been open for the rotate interval or its
// rows reach the segment budget, unless a seal is still running: then the
// segment grows, and rows past the budget are kept in the journal only
// (their body and samples are read back from it at the seal). s.Samples
// must already be filled (see Parse). The writer holds on to s.Samples
// until the segment is sealed and to s.Body until it is compacted: they
// must not change.
//
// An error wrapping ErrJournalReplaced is not fatal: s is journaled.
func (w *Writer) Append(s Scrape) error { return w.AppendPending(s, nil) }

// AppendPending is Append for a row journaled before it is parsed: its
// samples, parse error and final outcome come from p (see Pending), which
// the seal waits for. A nil p is Append.
func (w *Writer) AppendPending(s Scrape, p *Pending) error {
	if w.j == nil {
		return errors.New("append to a closed writer")
	}
	replaced, err := w.checkJournal()
	if err != nil {
		return err
	}
	if replaced == nil {
		if replaced, err = w.checkGroup(); err != nil {
			return err
		}
	}
	capHeaders(&s)
	at, err := w.j.appendAt(&s)
	if err != nil {
		return err
	}
	busy, sealErr := w.pollSeal()
	cost := rowBytes(&s)
	if p != nil {
		cost += int64(len(s.Body)) // its samples, to come: about the body's size
	}
	w.groupBytes += cost
	if len(s.Body) >= largePage {
		w.large = true
	}
	if busy && w.held+cost > w.segBytes {
		// Over budget while the last group is still being written: the
		// journal has the row; memory keeps only what sorts it.
		s.Body, s.Samples = nil, nil
		w.rows = append(w.rows, openRow{s: s, j: w.j, at: at, spilled: true}) // the seal parses it from the journal
		w.spilled = true
	} else {
		w.rows = append(w.rows, openRow{s: s, j: w.j, at: at, p: p, cost: cost})
		w.held += cost
	}
	if sealErr != nil {
		return sealErr
	}
	if ended := time.Since(w.opened) >= w.rotate; ended || w.isBig() {
		if err := w.tick(busy, ended); err != nil {
			return err
		}
	}
	return replaced
}

// Tick is what the writer does when the open minute has been open for the
// rotate interval (Append calls it then): it writes the open group into
// its Parquet file when the group holds compact_every minutes or the
// segment budget, and otherwise only closes the minute's journal and
// opens the next. It returns without waiting for the file. A caller that
// keeps its own clock (a generated recording) calls it at each of its
// minutes.
func (w *Writer) Tick() error {
	if w.j == nil {
		return errors.New("tick of a closed writer")
	}
	busy, err := w.pollSeal()
	if err != nil {
		return err
	}
	return w.tick(busy, true)
}

// tick writes the open group when it is full or over budget and no group is
// being written (busy); otherwise, when the open minute has ended, it
// begins the next minute. A group over budget while another is being
// written grows in its open minute.
func (w *Writer) tick(busy, ended bool) error {
	if len(w.rows) == 0 {
		w.opened = time.Now()
		return nil
	}
	if !busy && (w.isBig() || len(w.group)+1 >= max(w.compactEvery, 1)) {
		return w.startSeal()
	}
	if !ended {
		return nil
	}
	if len(w.rows) == w.minute {
		// The open minute has no row: it goes on.
		w.opened = time.Now()
		return nil
	}
	return w.nextMinute()
}

// nextMinute closes the open minute's journal into the group (it stays
// locked until the group's file is in place) and opens the next. Its rows
// let go of their bodies (the journal has them: they are read back when
// the group is written) and keep their samples packed (kept.go), those
// whose parse is still running whole.
func (w *Writer) nextMinute() error {
	for i := w.minute; i < len(w.rows); i++ {
		r := &w.rows[i]
		if r.spilled {
			continue
		}
		if r.p != nil {
			select {
			case <-r.p.done:
				r.p.apply(&r.s)
				r.p = nil
			default:
			}
		}
		w.held -= r.cost
		r.cost -= int64(cap(r.s.Body))
		r.s.Body, r.bodyOut = nil, true
		if r.p == nil {
			r.isPacked, r.nilSamples = true, r.s.Samples == nil
			var strs int64
			r.packed, strs = w.packs.pack(r.s.Samples)
			r.s.Samples = nil
			r.cost = rowBytes(&r.s) + packedBytes(len(r.packed)) + strs
		}
		w.held += r.cost
	}
	w.group = append(w.group, w.j)
	w.j, w.minute = nil, len(w.rows)
	return w.open()
}

// Rotate closes the open group (its minutes so far) into a Parquet file
// now and opens the next, and returns when the file is written: a group of
// one minute is a segment that compaction merges. An empty group is kept
// open.
func (w *Writer) Rotate() error {
	if err := w.waitSeal(); err != nil {
		return err
	}
	if len(w.rows) == 0 {
		w.opened = time.Now()
		return nil
	}
	if err := w.startSeal(); err != nil {
		return err
	}
	return w.waitSeal()
}

// Close seals the open segment and returns within a bound: the seal in
// flight and the open segment's, nothing more. A merge in flight is
// stopped (its temporary file removed, its sources kept) and the segments
// sealed since the last merge are left as they are: the next Recover (record
// --append, repair) merges them, and readers read them unmerged. The writer
// cannot be used afterwards. If sealing fails (disk full), the journal stays
// on disk for recovery.
func (w *Writer) Close() error { return w.close(false) }

// CloseMerged is Close for a writer no one waits on (a generated
// recording): it lets the merge in flight finish and merges the segments
// sealed since, however long that takes.
func (w *Writer) CloseMerged() error { return w.close(true) }

func (w *Writer) close(merge bool) error {
	if w.closed {
		return nil
	}
	w.closed = true
	if !merge {
		// Before the seals: a seal that ends now starts no merge, and the
		// merge in flight stops at its next row.
		w.stopMerge.Store(true)
	}
	err := w.waitSeal()
	if w.j != nil {
		if err == nil && len(w.rows) > 0 {
			err = w.seal(w.takeGroup())
		} else {
			// Empty, or the journals are the truth after a failed seal.
			for _, j := range append(w.group, w.j) {
				if err == nil && len(w.rows) == 0 {
					if rerr := removeJournal(j); rerr != nil {
						err = rerr
					}
				}
				j.close()
			}
			w.j, w.group = nil, nil
		}
		w.rows = nil
	}
	w.compacting.Wait()
	if err == nil && !errors.Is(w.compactErr, errMergeStopped) {
		err = w.compactErr
	}
	if err == nil && merge && w.compactEvery > 1 && len(w.sealed) > 1 {
		err = compact(&w.cenc, w.dir, w.run, w.sealed, w.kept, nil)
	}
	w.sealed, w.kept = nil, &keptGroup{}
	w.enc, w.cenc = encoder{}, encoder{} // their buffers
	return err
}

// SetCompactEvery sets how many sealed segments are merged into one file
// (default DefaultCompactEvery); 0 or 1 turns compaction off.
func (w *Writer) SetCompactEvery(n int) { w.compactEvery = n }

// Segments lists this session's closed Parquet files.
func (w *Writer) Segments() []string {
	fs, _ := runFiles(w.dir, w.run)
	return fs
}

// BytesWritten is the size of this session's closed Parquet files.
func (w *Writer) BytesWritten() int64 {
	var n int64
	for _, f := range w.Segments() {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// Seals is the number of segments sealed so far: the closed files change
// only when it does.
func (w *Writer) Seals() int64 { return w.seals.Load() }

// SetLimits sets the limits that parse rows read back from the journal at a
// seal (default DefaultLimits): those the rows were parsed with.
func (w *Writer) SetLimits(l Limits) { w.limits = l }

// SetShapes sets the page shapes the rows read back from the journal at a
// seal are read against (see expo.Shapes); nil for none.
func (w *Writer) SetShapes(sh *expo.Shapes) { w.shapes = sh }

// SetSegmentBytes sets the open segment's memory budget (default
// DefaultSegmentBytes).
func (w *Writer) SetSegmentBytes(n int64) { w.segBytes = n }

// encoder writes segments. Each file gets a Parquet writer of its own:
// parquet-go's GenericWriter.Reset leaves the column chunks' paths out of
// the metadata of every file after the first, which readers that find a
// chunk's column by its path (pyarrow, Spark) cannot read.
type encoder struct {
	codec *zstdCodec // nil: zstdBetter
}

// setCodec sets the codec of the files written next.
func (e *encoder) setCodec(c *zstdCodec) { e.codec = c }

// writeSegment writes rows, sorted by target, endpoint and seq, to path:
// first to path+".tmp", fsynced, then renamed, so a *.parquet file is
// always complete. It returns the file's size.
func (e *encoder) writeSegment(path string, rows []Scrape) (int64, error) {
	slices.SortStableFunc(rows, func(a, b Scrape) int { return compareRows(&a, &b) })
	return e.write(path, func(pw *parquet.GenericWriter[Scrape]) error {
		return writeRows(pw, len(rows), func(i int) (Scrape, error) { return rows[i], nil })
	})
}

// write creates path through a temporary file: fill writes the rows, then
// the footer is written, the file fsynced, its seal recorded (ledger.go)
// and the file renamed, and the folder fsynced. It returns the file's size.
func (e *encoder) write(path string, fill func(*parquet.GenericWriter[Scrape]) error) (int64, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, fmt.Errorf("create segment: %w", err)
	}
	if err := lockTemp(f); err != nil {
		f.Close()
		return 0, err
	}
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, err
	}
	pw := newParquetWriter(f, e.codec)
	if err := fill(pw); err != nil {
		return fail(fmt.Errorf("write segment %s: %w", path, err))
	}
	if err := pw.Close(); err != nil {
		return fail(fmt.Errorf("write segment %s: %w", path, err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("sync segment %s: %w", path, err))
	}
	st, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("stat segment %s: %w", path, err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("close segment %s: %w", path, err)
	}
	// The seal ledger's line is durable before the file is in place.
	if err := recordSeal(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("rename segment: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync run folder: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync run folder: %w", err)
	}
	return nil
}

// Version is llmrec's version, written into segments and manifests. The
// build sets it with -ldflags "-X .../record/capture.Version=...".
var Version = "dev"

// Recovery says what Recover did with one journal, or what a reader
// (Open) recovered of it in memory.
type Recovery struct {
	Journal   string `json:"journal"`
	Segment   string `json:"segment,omitempty"` // the Parquet file written, "" when none was (no row, or read in memory)
	Rows      int    `json:"rows"`
	TornBytes int64  `json:"torn_bytes,omitempty"` // a damaged or incomplete last record, dropped
	// SkippedBytes are damaged records between good ones, in Damaged
	// places: reading resumed at the next record that checked out.
	SkippedBytes int64 `json:"skipped_bytes,omitempty"`
	Damaged      int   `json:"damaged,omitempty"`
	// Duplicates are records identical to one before them, dropped;
	// Conflicts are seqs recorded twice with different content, both kept.
	Duplicates int      `json:"duplicates,omitempty"`
	Conflicts  []string `json:"conflicts,omitempty"`
	Note       string   `json:"note,omitempty"`
	// Stale: the journal's segment was sealed already; its rows were not read.
	Stale bool `json:"stale,omitempty"`
	// Error is why the journal could not be read (bad magic): it is left
	// as it is.
	Error string `json:"error,omitempty"`
}

func (r *Recovery) setStats(rows int, st journalStats) {
	r.Rows, r.TornBytes, r.SkippedBytes, r.Damaged = rows, st.Torn, st.Skipped, st.Damaged
	r.Duplicates, r.Conflicts = st.Duplicates, st.Conflicts
}

// Recover turns every journal in dir that no live writer holds into a
// closed segment, and removes leftovers of interrupted seals, compactions
// and manifest writes; then it merges the segments left unmerged by a
// stop or a crash (see leftover.go). It touches only files whose names carry a run id of
// the recorder's form (see names.go), and never those a live writer holds
// or is writing. A journal it cannot read is reported and left. It is
// idempotent; record runs it before writing into a folder, and so does
// "llmrec repair". Readers do not: they recover in memory (see Open).
func Recover(dir string) ([]Recovery, error) {
	names, err := folderNames(dir)
	if err != nil {
		return nil, err
	}
	var out []Recovery
	for name := range covered(names) {
		// Merged into a range file, then killed before its removal.
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("remove compacted %s: %w", name, err)
		}
		out = append(out, Recovery{Segment: name, Note: "already merged into a compacted file; removed"})
	}
	// Leftovers of interrupted seals, compactions and manifest writes go
	// first (the journal or the sources are still there and are the truth),
	// but never those of a live writer: it is writing them now.
	live := liveRuns(dir, names)
	for _, name := range names {
		n, ok := parseOwnName(name)
		if !ok || n.kind != kindSegmentTmp && n.kind != kindManifestTmp || live[n.seg.run] {
			continue
		}
		path := filepath.Join(dir, name)
		if locked(path) { // being written (see lockTemp)
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("remove %s: %w", name, err)
		}
	}
	for _, name := range names {
		if n, ok := parseOwnName(name); !ok || n.kind != kindJournal {
			continue
		}
		r, err := recoverJournal(filepath.Join(dir, name), names)
		if err != nil {
			return out, err
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	merged, err := mergeLeftovers(dir)
	return append(out, merged...), err
}

// liveRuns are the runs in dir whose journal a live writer holds locked.
func liveRuns(dir string, names []string) map[string]bool {
	live := map[string]bool{}
	for _, name := range names {
		n, ok := parseOwnName(name)
		if !ok || n.kind != kindJournal || live[n.seg.run] {
			continue
		}
		if locked(filepath.Join(dir, name)) {
			live[n.seg.run] = true
		}
	}
	return live
}

// locked reports whether another process (or file) holds path's flock: a
// live writer's journal, or a temporary file being written.
func locked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// lockTemp takes f's flock for as long as f is open, so that Recover in
// another process does not remove a temporary file being written. It waits:
// the only other holder is a check (locked) that lets go at once.
func lockTemp(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// sealedIn reports whether the rows of journal segment s are in a closed
// file of names: its own .parquet, or a merged file whose range covers it.
func sealedIn(names []string, s segName) bool {
	for _, name := range names {
		p, ok := parseSegName(name)
		if ok && strings.HasSuffix(name, ".parquet") && p.run == s.run && p.first <= s.first && s.last <= p.last {
			return true
		}
	}
	return false
}

func recoverJournal(path string, names []string) (*Recovery, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// A live writer holds it.
		return nil, nil
	}
	s, _ := parseSegName(filepath.Base(path))
	seg := strings.TrimSuffix(path, ".journal") + ".parquet"
	r := &Recovery{Journal: filepath.Base(path)}
	if sealedIn(names, s) {
		// Sealed, then killed before the journal was removed.
		r.Stale, r.Note = true, "segment already sealed; stale journal removed"
	} else {
		rows, st, err := scanJournal(path)
		if err != nil {
			r.Error = err.Error()
			r.Note = "left as it is"
			return r, nil
		}
		r.setStats(len(rows), st)
		if len(rows) > 0 {
			parseRows(rows)
			var enc encoder
			if _, err := enc.writeSegment(seg, rows); err != nil {
				return nil, err
			}
			r.Segment = filepath.Base(seg)
		}
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("remove recovered journal: %w", err)
	}
	return r, nil
}

func newParquetWriter(out *os.File, codec *zstdCodec) *parquet.GenericWriter[Scrape] {
	if codec == nil {
		codec = zstdBetter
	}
	return parquet.NewGenericWriter[Scrape](out,
		parquet.Compression(codec),
		parquet.PageBufferSize(pageBufferSize),
		// Min/max of a body is a whole body: written into every page header
		// and the column index it would outweigh the compressed bodies.
		parquet.SkipPageStatistics("body"),
		parquet.SkipPageBounds("body"),
		parquet.SkipPageStatistics("parse_error"),
		parquet.SkipPageBounds("parse_error"),
		// Nothing reads the sample strings' min/max either (they are list
		// elements, which query engines do not prune on), and computing
		// them compares every value of every page twice: about a fifth of
		// the cost of writing a segment.
		parquet.SkipPageStatistics("samples", "list", "element", "family"),
		parquet.SkipPageBounds("samples", "list", "element", "family"),
		parquet.SkipPageStatistics("samples", "list", "element", "type"),
		parquet.SkipPageBounds("samples", "list", "element", "type"),
		parquet.SkipPageStatistics("samples", "list", "element", "help"),
		parquet.SkipPageBounds("samples", "list", "element", "help"),
		parquet.SkipPageStatistics("samples", "list", "element", "name"),
		parquet.SkipPageBounds("samples", "list", "element", "name"),
		parquet.SkipPageStatistics("samples", "list", "element", "labels"),
		parquet.SkipPageBounds("samples", "list", "element", "labels"),
		parquet.KeyValueMetadata("llmrec.schema_version", SchemaVersion),
		parquet.CreatedBy("llmrec", Version, ""),
	)
}
