package capture

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// Compaction. A segment is sealed every rotate (60 s) so a reader sees a
// run minute by minute, but a minute holds only ~30 bodies of a target and
// each file repeats the samples' string dictionaries: one-minute files
// store an hour of a vLLM engine in about 1/24 of its raw bodies, ten-minute
// files in 1/31. So every CompactEvery sealed segments are merged, in the
// background, into one file named for the range it covers:
//
//	RUN-000001.parquet ... RUN-000010.parquet  →  RUN-000001_000010.parquet
//
// The merged file is written to a temporary name, fsynced and renamed
// before the sources are removed; a crash in between leaves both, and the
// sources are then removed by Recover (a file covered by a merged range is
// a duplicate). Readers skip covered files too.

// DefaultCompactEvery is how many sealed segments are merged into one.
const DefaultCompactEvery = 10

// segName is a parsed segment file name: RUN-FIRST.parquet, or
// RUN-FIRST_LAST.parquet for a merged range.
type segName struct {
	run         string
	first, last int
}

func (s segName) file() string {
	if s.first == s.last {
		return fmt.Sprintf("%s-%06d.parquet", s.run, s.first)
	}
	return fmt.Sprintf("%s-%06d_%06d.parquet", s.run, s.first, s.last)
}

// covered lists the .parquet files in names that a merged range in names
// covers: duplicates left by a crash during compaction.
func covered(names []string) map[string]bool {
	var merged []segName
	for _, n := range names {
		if s, ok := parseSegName(n); ok && s.first != s.last && strings.HasSuffix(n, ".parquet") {
			merged = append(merged, s)
		}
	}
	out := map[string]bool{}
	for _, n := range names {
		s, ok := parseSegName(n)
		if !ok || !strings.HasSuffix(n, ".parquet") {
			continue
		}
		for _, m := range merged {
			if m.run == s.run && m.first <= s.first && s.last <= m.last && m != s {
				out[n] = true
			}
		}
	}
	return out
}

// source is one sealed segment to merge: its rows, when the writer kept
// them in memory, else its file, decoded again.
type source struct {
	path string
	kept []keptRow // as sorted in the file; nil: read path
	g    *keptGroup
	seal *Seal // path's seal, when read from path and sealed
}

// merge hands the Parquet writer mergeBatch rows at a time. One row at a
// time, the body column's buffer grew a body at a time, and each growth past
// its pooled capacity copied it: that copying was 40 % of a merge. 32 vLLM
// bodies are 1.5 MB. (Batches of a whole page, 4 MiB, cost more: their
// rows' samples take fresh memory at every merge.) A variable for the
// tests.
var mergeBatch = 32

// errMergeStopped is a merge's error when its stop flag was set (the
// writer is closing): its temporary file is removed, its sources stay.
var errMergeStopped = errors.New("merge stopped: the writer is closing")

// merge writes the rows of the segments srcs (all of one run, each sorted
// by target, endpoint and seq, consecutive) into dst with e, in the same
// order: a k-way merge that holds a few rows per file it reads. It checks
// stop (nil: never) before each row and returns errMergeStopped once it is
// set; a merged file is never partly written (see encoder.write).
func merge(e *encoder, dst string, srcs []source, stop *atomic.Bool) (int64, error) {
	type cursor struct {
		name string
		file bool      // read from its file (next), not kept rows
		kept []keptRow // the rows not yet merged
		g    *keptGroup
		next func() (*Scrape, error, bool) // the file's next row
		stop func()
		row  *Scrape // the file's row read and not yet merged
		eof  bool    // the file has no more rows
		rows int64   // read from the file
		seal *Seal
	}
	var curs []*cursor
	defer func() {
		for _, c := range curs {
			if c.stop != nil {
				c.stop()
			}
		}
	}()
	for _, s := range srcs {
		if s.kept != nil {
			curs = append(curs, &cursor{name: s.path, kept: s.kept, g: s.g})
			continue
		}
		// A file is read through the one reader of the format, a row
		// at a time: each row is the merge's own.
		next, stop := iter.Pull2(Scrapes(s.path, 0))
		curs = append(curs, &cursor{name: s.path, file: true, next: next, stop: stop, seal: s.seal})
	}
	// head is c's next row, or nil when c is done.
	var flush func() error
	head := func(c *cursor) (*Scrape, error) {
		if !c.file {
			if len(c.kept) == 0 {
				return nil, nil
			}
			return &c.kept[0].row, nil
		}
		if c.row != nil || c.eof {
			return c.row, nil
		}
		row, err, ok := c.next()
		if err != nil {
			return nil, fmt.Errorf("compact: %w", err)
		}
		if !ok {
			// A source short of its sealed rows must not be laundered
			// into a merged file with a seal of its own.
			if err := c.seal.CheckRows(c.name, c.rows); err != nil {
				return nil, fmt.Errorf("compact: %w", err)
			}
			c.eof = true
			return nil, nil
		}
		c.rows++
		c.row = row
		return row, nil
	}
	less := func(a, b *Scrape) int {
		return cmp.Or(strings.Compare(a.Target, b.Target), strings.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.Seq, b.Seq))
	}
	return e.write(dst, func(pw *parquet.GenericWriter[Scrape]) error {
		// Each slot keeps its own samples' space from one batch to the next.
		batch, n := make([]Scrape, mergeBatch), 0
		var batchBytes int64
		var deltas bodyDeltas // one row group: the merged file's
		flush = func() error {
			if n == 0 {
				return nil
			}
			_, err := pw.Write(batch[:n])
			n, batchBytes = 0, 0
			return err
		}
		for {
			if stop != nil && stop.Load() {
				return errMergeStopped
			}
			var best *cursor
			var bestRow *Scrape
			for _, c := range curs {
				row, err := head(c)
				if err != nil {
					return err
				}
				if row != nil && (bestRow == nil || less(row, bestRow) < 0) {
					best, bestRow = c, row
				}
			}
			if best == nil {
				return flush()
			}
			slot := &batch[n]
			if !best.file {
				best.g.unpack(&best.kept[0], slot)
				best.kept = best.kept[1:]
			} else {
				*slot = *bestRow
				best.row = nil
			}
			// A batch of large bodies is cut at writeBatchBytes: a
			// stop waits for the batch being written.
			batchBytes += int64(len(slot.Body)) + int64(len(slot.Samples))*int64(unsafe.Sizeof(Sample{}))
			deltas.apply(slot)
			if n++; n == len(batch) || batchBytes >= writeBatchBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	})
}

// compact merges the sealed segments numbered segs (consecutive, of run) in
// dir into one file written with e, and removes them. kept.segs[i], if not
// nil, holds the rows of segs[i]: they are merged from memory, not the file.
// Setting stop (nil: never) ends the merge early with errMergeStopped,
// leaving the segments as they were.
func compact(e *encoder, dir, run string, segs []int, kept *keptGroup, stop *atomic.Bool) error {
	if len(segs) < 2 {
		return nil
	}
	srcs := make([]source, len(segs))
	var seals Seals
	for i, n := range segs {
		if stop != nil && stop.Load() { // checking a file's seal reads it whole
			return errMergeStopped
		}
		srcs[i].path = filepath.Join(dir, segName{run, n, n}.file())
		if kept != nil && i < len(kept.segs) {
			srcs[i].kept, srcs[i].g = kept.segs[i], kept
		}
		if srcs[i].kept != nil {
			continue
		}
		// A source read back from its file is checked against its seal
		// first: a damaged one stops the merge, and stays as it is.
		if seals == nil {
			seals, _ = ReadSeals(dir) // a bad line leaves its file unverified
		}
		s, err := seals.Verify(srcs[i].path)
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		srcs[i].seal = s
	}
	dst := filepath.Join(dir, segName{run, segs[0], segs[len(segs)-1]}.file())
	if _, err := merge(e, dst, srcs, stop); err != nil {
		return err
	}
	for _, s := range srcs {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("compact: remove merged source: %w", err)
		}
	}
	return syncDir(dir)
}

// runFiles lists the .parquet files of run in dir, covered ones excluded.
func runFiles(dir, run string) ([]string, error) {
	names, err := folderNames(dir)
	if err != nil {
		return nil, err
	}
	cov := covered(names)
	var out []string
	for _, n := range names {
		s, ok := parseSegName(n)
		if ok && s.run == run && strings.HasSuffix(n, ".parquet") && !cov[n] {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out, nil
}
