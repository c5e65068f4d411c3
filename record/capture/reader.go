package capture

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Run is a run folder opened for reading.
type Run struct {
	Dir      string
	Segments []string // closed segments (one-minute or compacted), in name order: run id, then segment number
	Live     []string // journals a live writer holds; their rows are not in Segments yet
	// Crashed are the journals of sessions that ended without sealing them
	// (a crash, a full disk): read in memory like live ones (ReadLive);
	// their rows are not in Segments. "llmrec repair" or the next record
	// into the folder seals them.
	Crashed   []string
	Manifests []Manifest // one per recording session, in start order
	Recovered []Recovery // what reading the folder recovers in memory: crashed journals, stale and covered files
	// Foreign are the names in the folder that llmrec did not write (no run
	// id of the recorder's form, see names.go): not read, left alone.
	Foreign []string
}

// ReportFile and SummaryFile are the names llmrec render (and demo) give
// the page and the summary it writes into a run folder by default; Open
// passes over them (neither captures nor foreign).
const (
	ReportFile  = "report.html"
	SummaryFile = "summary.md"
)

// Open lists what dir holds, without changing it: a crashed session's
// journal is read in memory, a file a merged file covers is skipped,
// temporary files and llmrec's own reports are ignored and foreign files
// listed. A folder with no segment, journal or manifest is an error that
// names it.
func Open(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open run %s: not a folder", dir)
	}
	names, err := folderNames(dir)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	r := &Run{Dir: dir}
	// A writer may be between renaming a compacted file and removing its
	// sources, or killed there: those are duplicates.
	cov := covered(names)
	for _, name := range names {
		n, ok := parseOwnName(name)
		path := filepath.Join(dir, name)
		switch {
		case !ok && (name == ReportFile || name == SummaryFile):
			// llmrec render's page and summary of the folder: not captures.
		case !ok:
			r.Foreign = append(r.Foreign, name)
		case cov[name]:
			r.Recovered = append(r.Recovered, Recovery{Segment: name, Note: "already merged into a compacted file; skipped"})
		case n.kind == kindSegment:
			r.Segments = append(r.Segments, path)
		case n.kind == kindJournal:
			r.addJournal(path, names, n.seg)
		case n.kind == kindManifest:
			m, err := ReadManifest(path)
			if err != nil {
				return nil, err
			}
			r.Manifests = append(r.Manifests, m)
		}
	}
	slices.Sort(r.Segments)
	slices.SortFunc(r.Manifests, func(a, b Manifest) int { return strings.Compare(a.Start, b.Start) })
	if len(r.Segments) == 0 && len(r.Live) == 0 && len(r.Crashed) == 0 && len(r.Manifests) == 0 {
		return nil, fmt.Errorf("open run %s: no recording here (no *.parquet, *.journal or %s)%s", dir, "*"+manifestSuffix, recordingsBelow(dir))
	}
	return r, nil
}

// recordingsBelow names the folders right under dir that hold a
// recording, as a hint: " (did you mean captures/findings/run?)"; "" when
// none does. It only lists folder names, reading no file.
func recordingsBelow(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var found []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, f := range sub {
			if n, ok := parseOwnName(f.Name()); ok && (n.kind == kindSegment || n.kind == kindJournal || n.kind == kindManifest) {
				found = append(found, filepath.Join(dir, e.Name()))
				break
			}
		}
	}
	switch {
	case len(found) == 0:
		return ""
	case len(found) > 3:
		return fmt.Sprintf(" (did you mean one of the %d recordings in the folders below it, such as %s?)", len(found), found[0])
	}
	return " (did you mean " + strings.Join(found, " or ") + "?)"
}

// addJournal files the journal path of segment s: live when a writer holds
// it; stale when its rows are sealed already; else crashed, and read once
// to say what recovering it in memory finds. A journal that cannot be read
// is listed as crashed all the same: reading its rows reports the error.
func (r *Run) addJournal(path string, names []string, s segName) {
	base := filepath.Base(path)
	switch {
	case locked(path):
		r.Live = append(r.Live, path)
	case sealedIn(names, s):
		r.Recovered = append(r.Recovered, Recovery{Journal: base, Stale: true, Note: "segment already sealed; stale journal ignored"})
	default:
		rows, st, err := scanJournal(path)
		seg := filepath.Join(r.Dir, s.file())
		if errors.Is(err, os.ErrNotExist) && exists(seg) {
			// A live writer sealed it since the folder was listed.
			r.Segments = append(r.Segments, seg)
			return
		}
		r.Crashed = append(r.Crashed, path)
		if err != nil {
			return
		}
		rc := Recovery{Journal: base, Note: "read in memory; llmrec repair seals it"}
		rc.setStats(len(rows), st)
		r.Recovered = append(r.Recovered, rc)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Journals are the journals whose rows are read from the journal itself:
// live ones, then crashed ones.
func (r *Run) Journals() []string { return append(slices.Clone(r.Live), r.Crashed...) }

// openCapture opens a segment for either reader: OpenParquet's checks,
// then the schema version and the columns of a row's identity.
func openCapture(f io.ReaderAt, size int64) (pf *parquet.File, err error) {
	return openCaptureWith(f, size, openOpts{})
}

// openCaptureWith is openCapture with the checks o relaxes (openParquet).
func openCaptureWith(f io.ReaderAt, size int64, o openOpts) (pf *parquet.File, err error) {
	defer recoverDamage(&err)
	pf, err = openParquet(f, size, o)
	if err != nil {
		return nil, err
	}
	if v, ok := pf.Lookup("llmrec.schema_version"); ok && !readableVersion(v) {
		return nil, fmt.Errorf("schema version %s, this llmrec reads 1 and %s", v, SchemaVersion)
	}
	// A column a reader reads and the file lacks reads as zero: a row's
	// identity must not (a flipped bit in a column's name in the footer
	// did that).
	for _, c := range identity {
		if _, ok := pf.Schema().Lookup(c); !ok {
			return nil, fmt.Errorf("%w: no column %s", ErrDamaged, c)
		}
	}
	return pf, nil
}

// identity are the columns every segment has had: a row's identity.
var identity = []string{"run_id", "target", "endpoint", "seq", "outcome"}

// ReadLive reads the rows of a live or crashed journal, in memory.
func ReadLive(path string) ([]Scrape, error) {
	rows, _, err := readJournal(path)
	return rows, err
}

// String says what was recovered, in one line without the journal's or
// file's name: "12 rows into RUN-000003.parquet, torn tail of 80 bytes
// dropped".
func (r Recovery) String() string {
	if r.Journal == "" || r.Stale {
		return r.Note
	}
	var b strings.Builder
	if r.Error != "" {
		fmt.Fprintf(&b, "not read: %s", r.Error)
	} else if r.Segment != "" {
		fmt.Fprintf(&b, "%d rows into %s", r.Rows, r.Segment)
	} else {
		fmt.Fprintf(&b, "%d rows", r.Rows)
	}
	if r.TornBytes > 0 {
		fmt.Fprintf(&b, ", torn tail of %d bytes dropped", r.TornBytes)
	}
	if r.SkippedBytes > 0 {
		fmt.Fprintf(&b, ", %d damaged bytes skipped in %d place(s)", r.SkippedBytes, r.Damaged)
	}
	if r.Duplicates > 0 {
		fmt.Fprintf(&b, ", %d duplicate record(s) dropped", r.Duplicates)
	}
	if len(r.Conflicts) > 0 {
		fmt.Fprintf(&b, ", %d seq(s) recorded twice with different content, both kept: %s", len(r.Conflicts), strings.Join(r.Conflicts, "; "))
	}
	if r.Note != "" {
		fmt.Fprintf(&b, " (%s)", r.Note)
	}
	return b.String()
}

// Name is the journal or file the recovery is about.
func (r Recovery) Name() string { return cmp.Or(r.Journal, r.Segment) }
