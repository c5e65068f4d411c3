package capture

import (
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
	Dir       string
	Segments  []string   // closed segments (one-minute or compacted), in name order: run id, then segment number
	Live      []string   // journals a live writer holds; their rows are not in Segments yet
	Manifests []Manifest // one per recording session, in start order
	Recovered []Recovery // what opening the folder recovered
}

// Open recovers dir's crashed segments and lists what it holds. A folder
// with no segment, journal or manifest is an error that names it.
func Open(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open run %s: not a folder", dir)
	}
	rec, err := Recover(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Recovered: rec}
	names, err := folderNames(dir)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	// A writer may be between renaming a compacted file and removing its
	// sources: those are duplicates.
	cov := covered(names)
	for _, name := range names {
		switch {
		case cov[name]:
		case strings.HasSuffix(name, ".parquet"):
			r.Segments = append(r.Segments, filepath.Join(dir, name))
		case strings.HasSuffix(name, ".journal"):
			r.Live = append(r.Live, filepath.Join(dir, name))
		case strings.HasSuffix(name, manifestSuffix):
			m, err := ReadManifest(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			r.Manifests = append(r.Manifests, m)
		}
	}
	slices.Sort(r.Segments)
	slices.SortFunc(r.Manifests, func(a, b Manifest) int { return strings.Compare(a.Start, b.Start) })
	if len(r.Segments) == 0 && len(r.Live) == 0 && len(r.Manifests) == 0 {
		return nil, fmt.Errorf("open run %s: no recording here (no *.parquet, *.journal or %s)", dir, "*"+manifestSuffix)
	}
	return r, nil
}

// ReadSegment reads every row of a segment into T, which is Scrape or a
// projection of it: a struct with a subset of Scrape's columns, read
// without decoding the others (leave out Body to skip the bodies). A file
// parquet-go cannot make sense of is an error wrapping ErrDamaged that
// names it and the row it stopped at; rows before it were delivered. (Check
// a file against its seal first, with Seals.Verify, to read a damaged file
// not at all.)
func ReadSegment[T any](path string, fn func(*T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	pf, r, err := openSegment[T](f, st.Size())
	if err != nil {
		return fmt.Errorf("segment %s: %w", path, err)
	}
	defer closeReader(r)
	buf := make([]T, 64)
	var rows int64
	for {
		n, err := readRows(r, buf)
		for i := range n {
			if ferr := fn(&buf[i]); ferr != nil {
				return ferr
			}
		}
		rows += int64(n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("segment %s: row %d%s: %w", path, rows, inGroup(pf, rows), err)
		}
		if n == 0 {
			return nil
		}
	}
}

// openSegment opens a segment's footer and a reader of T over it. Every
// call here into parquet-go on the file's bytes is guarded: a damaged file
// is an error, never a panic.
func openSegment[T any](f io.ReaderAt, size int64) (pf *parquet.File, r *parquet.GenericReader[T], err error) {
	defer recoverDamage(&err)
	// Nothing here reads the page index or the bloom filters; the page
	// index's length, from the footer, was allocated and zeroed whole
	// before anything checked it (a flipped bit: 2 GB).
	pf, err = parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, nil, err
	}
	if v, ok := pf.Lookup("llmrec.schema_version"); ok && v != SchemaVersion {
		return nil, nil, fmt.Errorf("schema version %s, this llmrec reads %s", v, SchemaVersion)
	}
	if err := CheckFooter(pf); err != nil {
		return nil, nil, err
	}
	// A column T has and the file lacks reads as zero: a row's identity
	// must not (a flipped bit in a column's name in the footer did that).
	for _, c := range identity {
		if _, ok := pf.Schema().Lookup(c); !ok {
			return nil, nil, fmt.Errorf("%w: no column %s", ErrDamaged, c)
		}
	}
	return pf, parquet.NewGenericReader[T](pf), nil
}

// identity are the columns every segment has had: a row's identity.
var identity = []string{"run_id", "target", "endpoint", "seq", "outcome"}

// readRows is r.Read, a panic over the file's bytes an error.
func readRows[T any](r *parquet.GenericReader[T], buf []T) (n int, err error) {
	defer recoverDamage(&err)
	return r.Read(buf)
}

// closeReader is r.Close, a panic over the file's bytes ignored: the file
// was read or failed already.
func closeReader[T any](r *parquet.GenericReader[T]) {
	defer func() { _ = recover() }()
	r.Close()
}

// inGroup names the row group holding row i of pf: ", row group G".
func inGroup(pf *parquet.File, i int64) (where string) {
	defer func() { _ = recover() }()
	for g, rg := range pf.RowGroups() {
		if i < rg.NumRows() {
			return fmt.Sprintf(" (row group %d)", g)
		}
		i -= rg.NumRows()
	}
	return ""
}

// ReadLive reads the rows of a live journal without recovering it.
func ReadLive(path string) ([]Scrape, error) {
	rows, _, err := readJournal(path)
	return rows, err
}
