package openmetrics

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// record is one sample on its way to the output: its series, its time in
// milliseconds and its value.
type record struct {
	sid uint32
	ts  int64
	v   float64
}

const recordSize = 4 + 8 + 8

// sorter is an external merge sort of records: add fills a run in
// memory; a full run is sorted and spilled to a temporary file; merge
// sorts the last run in memory and merges it with the spilled ones.
// Memory: one run, plus one read buffer per spilled run while merging.
type sorter struct {
	dir   string
	max   int
	buf   []record
	files []*os.File
	runs  int
	less  func(a, b record) int
}

func newSorter(dir string, max int) *sorter { return &sorter{dir: dir, max: max} }

func (s *sorter) add(r record) error {
	if s.buf == nil {
		// The whole run at once: growing it by appending would hold the
		// old and the new array together (1.8 times the run). Pages not
		// written yet cost no memory.
		s.buf = make([]record, 0, s.max)
	}
	s.buf = append(s.buf, r)
	if len(s.buf) < s.max {
		return nil
	}
	return s.spill()
}

// spill sorts the run in memory and writes it to a temporary file. The
// order (less) depends only on what a series was at its first sighting,
// so a run can be sorted as soon as it is full.
func (s *sorter) spill() error {
	slices.SortFunc(s.buf, s.less)
	f, err := os.CreateTemp(s.dir, "llmrec-openmetrics-*.run")
	if err != nil {
		return fmt.Errorf("temporary file for sorting: %w", err)
	}
	// Removed at once: the open file is all that is needed, and nothing is
	// left behind by a crash.
	os.Remove(f.Name())
	s.files = append(s.files, f)
	s.runs++
	w := bufio.NewWriterSize(f, 1<<20)
	var b [recordSize]byte
	for _, r := range s.buf {
		binary.LittleEndian.PutUint32(b[0:], r.sid)
		binary.LittleEndian.PutUint64(b[4:], uint64(r.ts))
		binary.LittleEndian.PutUint64(b[12:], math.Float64bits(r.v))
		if _, err := w.Write(b[:]); err != nil {
			return fmt.Errorf("sorting: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("sorting: %w", err)
	}
	s.buf = s.buf[:0]
	return nil
}

func (s *sorter) close() {
	for _, f := range s.files {
		f.Close()
	}
	s.files = nil
}

// runReader reads one spilled run back.
type runReader struct {
	r   *bufio.Reader
	cur record
	b   [recordSize]byte
}

func (rr *runReader) next() (bool, error) {
	b := rr.b[:]
	if _, err := io.ReadFull(rr.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("sorting: reading a run back: %w", err)
	}
	rr.cur = record{sid: binary.LittleEndian.Uint32(b[0:]), ts: int64(binary.LittleEndian.Uint64(b[4:])),
		v: math.Float64frombits(binary.LittleEndian.Uint64(b[12:]))}
	return true, nil
}

// runHeap orders the runs by their current records.
type runHeap struct {
	rs   []*runReader
	less func(a, b record) int
}

func (h *runHeap) Len() int           { return len(h.rs) }
func (h *runHeap) Less(i, j int) bool { return h.less(h.rs[i].cur, h.rs[j].cur) < 0 }
func (h *runHeap) Swap(i, j int)      { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *runHeap) Push(x any)         { h.rs = append(h.rs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	x := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return x
}

// mergeBuffer is each spilled run's read buffer while merging.
const mergeBuffer = 64 << 10

// merge calls fn with every record added, in less order. A recording
// whose samples fit one run is sorted in memory and never spilled.
func (s *sorter) merge(fn func(record) error) error {
	if len(s.files) == 0 {
		slices.SortFunc(s.buf, s.less)
		for _, r := range s.buf {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.buf = nil // the memory of the last run is not needed any more
	h := &runHeap{less: s.less}
	for _, f := range s.files {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("sorting: %w", err)
		}
		rr := &runReader{r: bufio.NewReaderSize(f, mergeBuffer)}
		ok, err := rr.next()
		if err != nil {
			return err
		}
		if ok {
			h.rs = append(h.rs, rr)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		rr := h.rs[0]
		if err := fn(rr.cur); err != nil {
			return err
		}
		ok, err := rr.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}
