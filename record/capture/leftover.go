package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Leftover merging. A writer's Close merges nothing, so that a recorder
// stops within a bound (see Writer.Close): the segments sealed since its
// last merge, and those of a merge it stopped, stay single files, written
// with the fast codec; so do the segments of a crashed session. Recover
// merges them as the writer would have: runs of consecutive single
// segments, compact_every at a time, of runs no live writer holds. A
// segment of the segment budget or more stays as it is (the writer merges
// around it too), and so does every segment of a run recorded with
// compact_every = 1. Readers never merge: they read such a folder as it is.

// leftoverMerge is one merge Recover made, or could not make.
func leftoverMerge(dir, run string, segs []int) (Recovery, error) {
	var e encoder
	name := segName{run, segs[0], segs[len(segs)-1]}.file()
	err := compact(&e, dir, run, segs, nil, nil)
	switch {
	case err == nil:
		return Recovery{Segment: name, Note: fmt.Sprintf("%d segments left unmerged by a stop or a crash merged", len(segs))}, nil
	case errors.Is(err, ErrDamaged):
		// The damaged file is reported by every read; the others stay
		// single, as they read well.
		return Recovery{Segment: name, Note: fmt.Sprintf("%d segments left unmerged: %v", len(segs), err)}, nil
	default:
		return Recovery{}, err
	}
}

// mergeLeftovers merges the single segments in dir left unmerged (see
// above), after the journals were recovered.
func mergeLeftovers(dir string) ([]Recovery, error) {
	names, err := folderNames(dir)
	if err != nil {
		return nil, err
	}
	live := liveRuns(dir, names)
	cov := covered(names)
	singles := map[string][]int{}
	for _, name := range names {
		n, ok := parseOwnName(name)
		if !ok {
			continue
		}
		if n.kind == kindSegmentTmp && locked(filepath.Join(dir, name)) {
			// A seal or a merge being written now, by a writer closing.
			live[n.seg.run] = true
		}
		if n.kind != kindSegment || n.seg.first != n.seg.last || cov[name] {
			continue
		}
		singles[n.seg.run] = append(singles[n.seg.run], n.seg.first)
	}
	var out []Recovery
	for _, run := range slices.Sorted(maps.Keys(singles)) {
		every := compactEveryOf(dir, run)
		if live[run] || every <= 1 {
			continue
		}
		segs := singles[run]
		slices.Sort(segs)
		var group []int
		flush := func() error {
			for len(group) >= 2 {
				k := min(every, len(group))
				r, err := leftoverMerge(dir, run, group[:k])
				if err != nil {
					return err
				}
				out = append(out, r)
				group = group[k:]
			}
			group = nil
			return nil
		}
		for _, s := range segs {
			if len(group) > 0 && group[len(group)-1] != s-1 {
				if err := flush(); err != nil {
					return out, err
				}
			}
			if bigSegment(filepath.Join(dir, segName{run, s, s}.file())) {
				if err := flush(); err != nil {
					return out, err
				}
				continue
			}
			group = append(group, s)
		}
		if err := flush(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// bigSegmentBytes is DefaultSegmentBytes; a variable for the tests.
var bigSegmentBytes int64 = DefaultSegmentBytes

// bigSegment reports whether the segment at path holds the segment budget
// (bigSegmentBytes) or more, uncompressed (the row groups' sizes in its
// footer): a writer neither merges such a segment nor keeps its rows. A
// file whose footer does not read counts as big: it is left as it is.
func bigSegment(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return true
	}
	pf, err := openCapture(f, st.Size())
	if err != nil {
		return true
	}
	var n int64
	for _, rg := range pf.Metadata().RowGroups {
		n += rg.TotalByteSize
	}
	return n >= bigSegmentBytes
}

// compactEveryOf is the compact_every run was recorded with: its manifest
// holds it under "config". A manifest that is missing, does not decode or
// holds none (a generated recording) says the default.
func compactEveryOf(dir, run string) int {
	b, err := os.ReadFile(ManifestPath(dir, run))
	if err != nil {
		return DefaultCompactEvery
	}
	var m struct {
		Config struct {
			CompactEvery *int `json:"compact_every"`
		} `json:"config"`
	}
	if json.Unmarshal(b, &m) != nil || m.Config.CompactEvery == nil || *m.Config.CompactEvery == 0 {
		return DefaultCompactEvery
	}
	return *m.Config.CompactEvery
}
