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
// without decoding the others (leave out Body to skip the bodies).
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
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("segment %s: %w", path, err)
	}
	if v, ok := pf.Lookup("llmrec.schema_version"); ok && v != SchemaVersion {
		return fmt.Errorf("segment %s: schema version %s, this llmrec reads %s", path, v, SchemaVersion)
	}
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	buf := make([]T, 64)
	for {
		n, err := r.Read(buf)
		for i := range n {
			if ferr := fn(&buf[i]); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("segment %s: %w", path, err)
		}
		if n == 0 {
			return nil
		}
	}
}

// ReadLive reads the rows of a live journal without recovering it.
func ReadLive(path string) ([]Scrape, error) {
	rows, _, err := readJournal(path)
	return rows, err
}
