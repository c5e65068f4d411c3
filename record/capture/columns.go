package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// A segment is read column by column, never through the body column, with
// one colCursor per column walking its pages in step, so memory is bounded by a
// page and not by a file. The string columns are dictionary-encoded: each
// distinct string (a series name, a label set) is interned once per
// dictionary, and a sample becomes four integers and a float.

// Strings interns strings: equal strings get equal ids. One goroutine
// makes ids (ID, IDString); Str may be called from others for an id handed
// to them after it was made (a channel send orders the two): the strings
// are kept in chunks that never move, found through a directory replaced
// whole when it grows.
type Strings struct {
	ids map[string]int32
	n   int32
	dir atomic.Pointer[[]*[strChunk]string]
}

// strChunk is how many strings a chunk of Strings holds.
const strChunk = 1 << 10

// Str is the string of id.
func (t *Strings) Str(id int32) string { return (*t.dir.Load())[id/strChunk][id%strChunk] }

func NewStrings() *Strings {
	t := &Strings{ids: make(map[string]int32)}
	t.dir.Store(&[]*[strChunk]string{})
	return t
}

// ID returns b's id; looking up a known string does not allocate.
func (t *Strings) ID(b []byte) int32 {
	if id, ok := t.ids[string(b)]; ok {
		return id
	}
	return t.add(string(b))
}

// IDString returns s's id.
func (t *Strings) IDString(s string) int32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	return t.add(s)
}

func (t *Strings) add(s string) int32 {
	id := t.n
	dir := *t.dir.Load()
	if int(id/strChunk) == len(dir) {
		// The directory readers hold stays as it is: a new one is
		// published with the new chunk.
		next := append(slices.Clip(dir), new([strChunk]string))
		t.dir.Store(&next)
		dir = next
	}
	dir[id/strChunk][id%strChunk] = s
	t.n++
	t.ids[s] = id
	return id
}

// Row is one scrape row as ids into the reader's Strings, and numbers. Its
// slices are valid until the next row (Value may be the page's own memory).
// Family and Type are empty when the reader's Known hook said the row does
// not need them.
type Row struct {
	Run, Target, Engine, Endpoint, Outcome int32
	Seq, Start, FirstByte                  int64 // a null time is 0
	Scheduled, End                         int64 // 0 when null or when the file lacks the column
	Err                                    int32 // the error text, -1 when null

	Family, Type, Name, Labels []int32
	Value                      []float64
	// Body is the row's body, read only for the rows the reader's
	// WantBody asks for (nil otherwise): the bodies are the bulk of a
	// segment and the cells never need them.
	Body []byte
	// Headers are the row's response headers as the capture stores them
	// (a JSON object), nil when null or not read (ColumnReader.Headers).
	Headers []byte

	// NameIdx and LabelsIdx are the row's names and labels as indexes
	// into their columns' dictionaries, Dict which dictionaries (it
	// changes when either does): set for the reader's Same hook, when
	// the row's samples lie in one dictionary page of each column; nil
	// otherwise. Valid until the next row.
	NameIdx, LabelsIdx []int32
	Dict               uint64

	// Rest are the columns only a whole row reads (ReadScrapes).
	Rest RowRest
}

// RowRest are the columns of a row that only a whole row needs
// (ReadScrapes): compaction, inspect, export, find. Zero when not read.
type RowRest struct {
	URL                      int32
	Status                   int32 // -1 when null
	ContentType, ContentEnc  int32 // -1 when null
	WireBytes                int64 // -1 when null
	BodyNull, ParseErrorNull bool
	ParseError               []byte
	Help                     []int32
	// Stamped says which samples carry an explicit timestamp (Stamp).
	Stamped []bool
	Stamp   []int64
}

// Column paths of the projection.
var columns = [...][]string{
	cRun: {"run_id"}, cTarget: {"target"}, cEngine: {"engine"}, cEndpoint: {"endpoint"}, cOutcome: {"outcome"},
	cSeq: {"seq"}, cStart: {"start_ns"}, cFirstByte: {"first_byte_ns"},
	cFamily: {"samples", "list", "element", "family"}, cType: {"samples", "list", "element", "type"},
	cName: {"samples", "list", "element", "name"}, cLabels: {"samples", "list", "element", "labels"},
	cValue:     {"samples", "list", "element", "value"},
	cScheduled: {"scheduled_ns"}, cEnd: {"end_ns"}, cError: {"error"}, cHeaders: {"headers"},
	cURL: {"url"}, cStatus: {"status"}, cContentType: {"content_type"}, cContentEnc: {"content_encoding"},
	cWireBytes: {"wire_bytes"}, cBody: {"body"}, cParseError: {"parse_error"},
	cHelp: {"samples", "list", "element", "help"}, cStamp: {"samples", "list", "element", "timestamp_ms"},
	cBodyDelta: {"body_delta"},
}

const (
	cRun = iota
	cTarget
	cEngine
	cEndpoint
	cOutcome
	cSeq
	cStart
	cFirstByte
	cFamily
	cType
	cName
	cLabels
	cValue
	cScheduled // the columns from here on are read when the file has them
	cEnd
	cError
	cHeaders // read only when ColumnReader.headers
	cURL     // the columns from here on are read only for whole rows (ReadScrapes)
	cStatus
	cContentType
	cContentEnc
	cWireBytes
	cBody
	cParseError
	cHelp
	cStamp
	cBodyDelta
	nColumns
)

// firstWhole is the first column only a whole row reads.
const firstWhole = cURL

// valueOnly are the repeated columns read by value count, not by level:
// ended cannot count them.
func valueOnly(i int) bool {
	return i == cFamily || i == cType || i == cLabels || i == cValue || i == cHelp
}

// firstOptional is the first column a segment may lack: the times and
// error the run findings use. Without them those findings know less; the
// cells are the same.
const firstOptional = cScheduled

// kinds are the columns' physical types.
var kinds = [nColumns]parquet.Kind{
	cRun: parquet.ByteArray, cTarget: parquet.ByteArray, cEngine: parquet.ByteArray, cEndpoint: parquet.ByteArray,
	cOutcome: parquet.ByteArray, cSeq: parquet.Int64, cStart: parquet.Int64, cFirstByte: parquet.Int64,
	cFamily: parquet.ByteArray, cType: parquet.ByteArray, cName: parquet.ByteArray, cLabels: parquet.ByteArray,
	cValue: parquet.Double, cScheduled: parquet.Int64, cEnd: parquet.Int64, cError: parquet.ByteArray,
	cHeaders: parquet.ByteArray, cURL: parquet.ByteArray, cStatus: parquet.Int32, cContentType: parquet.ByteArray,
	cContentEnc: parquet.ByteArray, cWireBytes: parquet.Int64, cBody: parquet.ByteArray, cParseError: parquet.ByteArray,
	cHelp: parquet.ByteArray, cStamp: parquet.Int64, cBodyDelta: parquet.ByteArray,
}

// ColumnReader is the column reader of the capture format: it reads
// segments (and live or crashed journals, through Journal) row by row into
// Rows, reusing its buffers, through the same checks as every reader
// (OpenParquet; ReadSealed adds the seal's). analyze replays a recording
// through it.
type ColumnReader struct {
	// Tab interns the rows' strings.
	Tab  *Strings
	cur  [nColumns]colCursor
	row  Row
	trow Row // scratch for journal rows

	// Known, when set, is asked of every row before it is delivered, its
	// samples read but not their family and type: true means the
	// consumer knows every series of the row already, and those two
	// columns are not decoded for it. A replay needs them once per
	// series, and decoding them for every sample was a third of the read.
	// A row group whose rows are all known never reads their pages.
	Known func(*Row) bool
	// vals counts the sample values of the row group's rows delivered so
	// far, kindsAt those the family and type cursors have passed.
	vals, kindsAt int
	// Same, when set, is asked of a row of samples whose names and labels
	// lie in one dictionary page of each column, before they are read as
	// strings, with Row.NameIdx, LabelsIdx and Dict set and Name and
	// Labels empty: true says the consumer knows the row's series from
	// those indexes (it had them under this Dict). The row is then
	// delivered with Name and Labels empty (Value holds its samples), its
	// family and type not read, Known not asked. Translating every
	// sample's name and labels into strings' ids was most of the reading
	// goroutine's own work. The indexes Same is handed are not checked
	// against the dictionaries yet (a damaged or crafted page may hold
	// one past them): Same may only compare them with indexes of rows
	// delivered before under the same Dict, which were (a row whose
	// indexes Same does not know is checked as it is read as strings).
	Same func(*Row) bool
	// Headers says whether the headers column is read (a target names a
	// process start header): Row.Headers is nil when it is not.
	Headers bool
	// WantBody, when set, is asked of every row before it is delivered:
	// true reads the row's body into Row.Body (an engine's error answer
	// may say what it is doing). bodyCol is the body column's index in
	// the file being read, -1 when it has none.
	WantBody func(*Row) bool
	bodyCol  int
	// deltaCol is the body_delta column's index, -1 when the file has
	// none; prevBody is the body of the row before, hasPrev whether it
	// had one (bodydelta.go).
	deltaCol int
	prevBody []byte
	hasPrev  bool
	// whole reads every column of a row (ReadScrapes) but those in omit.
	whole bool
	omit  Omit
	// noHeaders opens a file without checking its headers column, and
	// never reads it (SalvageHeaders).
	noHeaders bool
	// sealed says the file being read matched its seal (ReadSealed).
	sealed bool
	// pf and gi are the file and row group being read: the family and
	// type columns are read from their pages' bytes (lazyCol).
	pf *parquet.File
	gi int
	// next are the segments being opened ahead of their reads (Ahead),
	// in the order asked for: at most the one read next and the one
	// after it.
	next []*opened
	// bufs are the buffers sealed segments are read into (memread.go),
	// free for the next: fileBufs, every reader's.
	bufs chan []byte
}

// opened is a segment checked against its seal and opened on a goroutine
// of its own ahead of its ReadSealed (ColumnReader.Ahead).
type opened struct {
	path   string
	sealed []Seal        // the ledger's seals of the file, checked against
	done   chan struct{} // closed when the fields below are set
	seal   *Seal
	verr   error    // Seals.Verify's
	f      *os.File // nil when read into memory (mem)
	pf     *parquet.File
	leaves [nColumns]parquet.LeafColumn
	err    error // openSegment's
	panic  any   // raised again by the read
	// mem is the file's bytes when read into memory (verifyRead); buf
	// is the buffer given back to bufs once the file is closed.
	mem, buf []byte
	bufs     chan []byte
}

// maxAhead is how many files are opened ahead at a time: the one a
// replay reads next and the one after it. A replay asks for the file
// after the one it is about to read, and the read of a file not opened
// ahead let go the one opened ahead: every file was checked and opened
// twice, the second time on the reading goroutine.
const maxAhead = 2

// Ahead starts checking the segment at path against its seal and opening
// it on a goroutine of its own, for a ReadSealed of it that comes later:
// the check reads the whole file and the open checks every page's header,
// work the replay's reading goroutine need not wait for. A file asked for
// before stays opened ahead for its read, unless maxAhead are already:
// then the oldest is let go. A read of a file not opened ahead leaves
// them; a read of one lets go those asked for before it.
func (r *ColumnReader) Ahead(seals Seals, path string) {
	// SalvageHeaders opens with checks of its own.
	if r.noHeaders {
		r.dropAhead()
		return
	}
	for len(r.next) >= maxAhead {
		r.next[0].drop()
		r.next = r.next[1:]
	}
	a := &opened{path: path, sealed: seals[filepath.Base(path)], done: make(chan struct{})}
	r.next = append(r.next, a)
	go a.open(seals, r.bufs)
}

// takeAhead hands over the file opened ahead when it is path, waiting
// for it, else nil (the files opened ahead stay for their reads). The
// files asked for before it are let go, those after it stay. When checked
// (ReadSealed), the file must have been checked against the same seals
// too, else it is let go and nil returned.
func (r *ColumnReader) takeAhead(path string, seals Seals, checked bool) *opened {
	i := slices.IndexFunc(r.next, func(a *opened) bool { return a.path == path })
	if i < 0 {
		return nil
	}
	for _, b := range r.next[:i] {
		b.drop()
	}
	a := r.next[i]
	r.next = slices.Delete(r.next, 0, i+1)
	<-a.done
	if a.panic != nil {
		a.close()
		panic(a.panic)
	}
	if checked && !sameSeals(a.sealed, seals[filepath.Base(path)]) {
		a.close()
		return nil
	}
	return a
}

// dropAhead lets every file opened ahead go.
func (r *ColumnReader) dropAhead() {
	for _, a := range r.next {
		a.drop()
	}
	r.next = nil
}

// drop lets a file opened ahead go once its goroutine is done.
func (a *opened) drop() {
	<-a.done
	a.close()
}

// sameSeals says a and b are the same seals of a file (the same ledger's
// list, or none).
func sameSeals(a, b []Seal) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (a *opened) close() {
	if a.f != nil {
		a.f.Close()
		a.f = nil
	}
	putBuf(a.bufs, a.buf)
	a.buf, a.mem, a.pf = nil, nil, nil
}

// NewColumnReader makes a reader whose rows' strings are ids in tab.
func NewColumnReader(tab *Strings) *ColumnReader {
	r := &ColumnReader{Tab: tab, bufs: fileBufs}
	for i := range r.cur {
		r.cur[i].tab = tab
	}
	// Every row's headers differ (Date): they are not interned; nor are
	// bodies and parse errors.
	r.cur[cHeaders].raw = true
	r.cur[cBody].raw = true
	r.cur[cBodyDelta].raw = true
	r.cur[cParseError].raw = true
	// Every column the rows read is decoded ahead but family and type: a
	// replay reads them for a target's new series only (Known), and
	// decoding them ahead would decode what it passes over.
	for i := range r.cur {
		r.cur[i].ahead = i != cFamily && i != cType
	}
	return r
}

// ReadSealed reads the segment at path as Read does, after checking it
// against its seal in seals (Seals.Verify), and checks the rows read
// against the seal (Seal.CheckRows). It returns the rows delivered: with an
// error, 0 means the file was skipped whole, more that the rows before the
// damage were delivered.
func (r *ColumnReader) ReadSealed(seals Seals, path string, fn func(*Row)) (rows int64, err error) {
	a := r.takeAhead(path, seals, true)
	// A file not opened ahead is opened now, as it would have been.
	if a == nil {
		a = &opened{path: path, done: make(chan struct{})}
		a.open(seals, r.bufs)
		if a.panic != nil {
			a.close()
			panic(a.panic)
		}
	}
	seal, err := a.seal, a.verr
	if err != nil {
		a.close()
		return 0, err
	}
	// A file that matched its seal is as written, byte for byte.
	r.sealed = seal != nil
	defer func() { r.sealed = false }()
	err = r.readFrom(path, a, func(w *Row) error { rows++; fn(w); return nil })
	if err == nil {
		err = seal.CheckRows(path, rows)
	}
	return rows, err
}

// Read calls fn with each row of the segment at path. Errors name the file
// and what is wrong with it (the row group and column where known); rows
// before the error have been delivered. A file parquet-go cannot make sense
// of, panicking, is an error wrapping ErrDamaged, and so is one whose
// columns hold more values than its row groups state rows.
func (r *ColumnReader) Read(path string, fn func(*Row)) (err error) {
	return r.read(path, func(w *Row) error { fn(w); return nil })
}

// stopped is an error of a consumer's fn: returned as it is, unwrapped.
type stopped struct{ err error }

func (s *stopped) Error() string { return s.err.Error() }

// read is Read with a fn that may stop the read with an error, returned
// as it is.
func (r *ColumnReader) read(path string, fn func(*Row) error) (err error) {
	return r.readFrom(path, r.takeAhead(path, nil, false), fn)
}

// readFrom is read of the file a opened ahead (nil: none, or a file not
// opened as the read would open it: it is let go).
func (r *ColumnReader) readFrom(path string, a *opened, fn func(*Row) error) (err error) {
	defer func() {
		if s, ok := errors.AsType[*stopped](err); ok {
			err = s.err
		}
	}()
	var (
		pf     *parquet.File
		leaves [nColumns]parquet.LeafColumn
	)
	// The file opened ahead was opened as this read would open it: with
	// the same seal, and the headers' checks (noHeaders never opens ahead,
	// and a file ReadSealed opened is opened again without them).
	if a != nil && (a.seal != nil) == r.sealed && a.verr == nil && !r.noHeaders {
		pf, leaves, err = a.pf, a.leaves, a.err
		defer a.close()
	} else {
		if a != nil {
			a.close()
		}
		o := openOpts{sealed: r.sealed}
		if r.noHeaders {
			o.skip = columns[cHeaders]
		}
		var f *os.File
		f, pf, leaves, err = openSegment(path, o)
		if err == nil {
			defer f.Close()
		}
	}
	if err != nil {
		return err
	}
	none := parquet.LeafColumn{ColumnIndex: -1}
	if !r.Headers || r.noHeaders {
		leaves[cHeaders] = none
	}
	for i := firstWhole; i < nColumns && !r.whole; i++ {
		leaves[i] = none
	}
	if r.omit&OmitBody != 0 {
		leaves[cBody] = none
		leaves[cBodyDelta] = none
	}
	if r.omit&OmitSamples != 0 {
		for _, i := range [...]int{cFamily, cType, cName, cLabels, cValue, cHelp, cStamp} {
			leaves[i] = none
		}
	}
	if r.omit&OmitHelp != 0 {
		leaves[cHelp] = none
	}
	r.bodyCol = -1
	if leaf, ok := pf.Schema().Lookup("body"); ok && !r.whole && leaf.Node.Type().Kind() == parquet.ByteArray && leaf.MaxRepetitionLevel == 0 {
		r.bodyCol = leaf.ColumnIndex
	}
	r.deltaCol = deltaColumn(pf)
	var before int64
	r.pf = pf
	defer func() { r.pf = nil }()
	for gi, rg := range pf.RowGroups() {
		r.gi = gi
		if err := r.rowGroup(rg, leaves[:], before, fn); err != nil {
			// Whatever stops the decoding of a file's rows is damage to
			// it, for every reader alike (compaction leaves a damaged
			// file single, a reader skips it).
			if !errors.Is(err, ErrDamaged) {
				err = fmt.Errorf("%w: %w", ErrDamaged, err)
			}
			return fmt.Errorf("segment %s: row group %d: %w", path, gi, err)
		}
		before += rg.NumRows()
	}
	return nil
}

// openSegment opens the segment at path and its columns (openColumns).
// An error names the file; the file is closed but when it is returned.
func openSegment(path string, o openOpts) (f *os.File, pf *parquet.File, leaves [nColumns]parquet.LeafColumn, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, nil, leaves, fmt.Errorf("open segment: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, leaves, fmt.Errorf("open segment: %w", err)
	}
	pf, leaves, err = openColumns(f, st.Size(), o)
	if err != nil {
		f.Close()
		return nil, nil, leaves, fmt.Errorf("segment %s: %w", path, err)
	}
	return f, pf, leaves, nil
}

// openColumns opens a segment's footer and finds the projection's leaf
// columns in its schema.
func openColumns(f io.ReaderAt, size int64, o openOpts) (pf *parquet.File, leaves [nColumns]parquet.LeafColumn, err error) {
	defer recoverDamage(&err)
	if pf, err = openCaptureWith(f, size, o); err != nil {
		return nil, leaves, err
	}
	for i, p := range columns {
		leaf, ok := pf.Schema().Lookup(p...)
		// An optional column the file lacks reads as null.
		if !ok && i >= firstOptional {
			leaves[i] = parquet.LeafColumn{ColumnIndex: -1}
			continue
		}
		if !ok {
			return nil, leaves, fmt.Errorf("no column %s", strings.Join(p, "."))
		}
		if k := leaf.Node.Type().Kind(); k != kinds[i] {
			return nil, leaves, fmt.Errorf("column %s is %v, want %v", strings.Join(p, "."), k, kinds[i])
		}
		leaves[i] = leaf
	}
	// The timestamps are read by their levels: a sample's optional value.
	if l := leaves[cStamp]; l.ColumnIndex >= 0 && (l.MaxRepetitionLevel != 1 || l.MaxDefinitionLevel != 2) {
		return nil, leaves, fmt.Errorf("column %s is not a sample's optional value", strings.Join(columns[cStamp], "."))
	}
	// Rows are delimited by the repeated name column's levels.
	if leaves[cName].MaxRepetitionLevel != 1 {
		return nil, leaves, fmt.Errorf("column %s is not a list of samples", strings.Join(columns[cName], "."))
	}
	return pf, leaves, nil
}

// openGroup opens a colCursor on each of the row group's leaf columns and
// returns its row count.
func (r *ColumnReader) openGroup(rg parquet.RowGroup, leaves []parquet.LeafColumn) (n int64, err error) {
	defer recoverDamage(&err)
	cc := rg.ColumnChunks()
	for i := range r.cur {
		if leaves[i].ColumnIndex < 0 {
			r.cur[i].openMissing()
			continue
		}
		if leaves[i].ColumnIndex >= len(cc) {
			return 0, fmt.Errorf("%w: column %s: chunk %d of %d", ErrDamaged, strings.Join(columns[i], "."), leaves[i].ColumnIndex, len(cc))
		}
		r.cur[i].open(cc[leaves[i].ColumnIndex], leaves[i])
	}
	// Whole rows are read by parquet-go alone.
	if r.pf == nil || r.whole || r.gi >= len(r.pf.Metadata().RowGroups) {
		return rg.NumRows(), nil
	}
	chunks := r.pf.Metadata().RowGroups[r.gi].Columns
	meta := func(i int) *format.ColumnMetaData {
		if k := leaves[i].ColumnIndex; k >= 0 && k < len(chunks) {
			return &chunks[k].MetaData
		}
		return nil
	}
	// The value column's pages are read by valCol when it can read them
	// all, else by parquet-go.
	if md, c := meta(cValue), &r.cur[cValue]; md != nil && c.vl.reset(r.pf, md, leaves[cValue]) {
		c.vals = &c.vl
	}
	// The names' and labels' pages are read by idxCol when it can read
	// them all, else by parquet-go; the names' levels delimit the rows.
	for _, i := range [...]int{cName, cLabels} {
		if md, c := meta(i), &r.cur[i]; md != nil && readIdxPages && c.ix.reset(r.pf, md, leaves[i], i == cName) {
			c.ixs = &c.ix
		}
	}
	// A replay reads the family and type of a few rows: from their
	// pages' bytes, by position.
	for _, i := range [...]int{cFamily, cType} {
		if md, c := meta(i), &r.cur[i]; md != nil && c.lz.reset(r.pf, md, leaves[i]) {
			c.lazy = &c.lz
		}
	}
	return rg.NumRows(), nil
}

// rowGroup delivers the rows of one row group.
func (r *ColumnReader) rowGroup(rg parquet.RowGroup, leaves []parquet.LeafColumn, first int64, fn func(*Row) error) (err error) {
	k := int64(-1)
	defer func() {
		for i := range r.cur {
			r.cur[i].close()
		}
		if err != nil && k >= 0 {
			err = fmt.Errorf("row %d: %w", first+k, err)
		}
	}()
	n, err := r.openGroup(rg, leaves)
	if err != nil {
		return err
	}
	c := &r.cur
	w := &r.row
	r.vals, r.kindsAt = 0, 0
	r.hasPrev = false // a row group decodes alone
	for k = 0; k < n; k++ {
		if w.Run, err = c[cRun].str(); err != nil {
			return colErr(cRun, err)
		}
		if w.Target, err = c[cTarget].str(); err != nil {
			return colErr(cTarget, err)
		}
		if w.Engine, err = c[cEngine].str(); err != nil {
			return colErr(cEngine, err)
		}
		if w.Endpoint, err = c[cEndpoint].str(); err != nil {
			return colErr(cEndpoint, err)
		}
		if w.Outcome, err = c[cOutcome].str(); err != nil {
			return colErr(cOutcome, err)
		}
		if w.Seq, err = c[cSeq].int64(); err != nil {
			return colErr(cSeq, err)
		}
		if w.Start, err = c[cStart].int64(); err != nil {
			return colErr(cStart, err)
		}
		if w.FirstByte, err = c[cFirstByte].int64(); err != nil {
			return colErr(cFirstByte, err)
		}
		if w.Scheduled, err = c[cScheduled].int64(); err != nil {
			return colErr(cScheduled, err)
		}
		if w.End, err = c[cEnd].int64(); err != nil {
			return colErr(cEnd, err)
		}
		if w.Err, err = c[cError].optStr(); err != nil {
			return colErr(cError, err)
		}
		if w.Headers, err = c[cHeaders].optBytes(); err != nil {
			return colErr(cHeaders, err)
		}
		w.Name, w.Labels, w.Value, w.Family, w.Type = w.Name[:0], w.Labels[:0], w.Value[:0], w.Family[:0], w.Type[:0]
		w.NameIdx, w.LabelsIdx, w.Dict = nil, nil, 0
		// Whole rows read without their samples (OmitSamples) have none.
		if !c[cName].missing {
			m, same, err := r.series(w)
			if err != nil {
				return err
			}
			if w.Value, err = c[cValue].rowDoubles(m); err != nil {
				return colErr(cValue, err)
			}
			if m > 0 && !same && (r.Known == nil || !r.Known(w)) {
				if err := r.kinds(w); err != nil {
					return err
				}
			}
			r.vals += m
		}
		w.Body = nil
		if r.whole {
			if err := r.rest(w); err != nil {
				return err
			}
		} else if r.bodyCol >= 0 && r.WantBody != nil && r.WantBody(w) {
			if w.Body, err = bodyAt(rg, r.bodyCol, r.deltaCol, k); err != nil {
				return fmt.Errorf("column body: %w", err)
			}
		}
		if err := fn(w); err != nil {
			return &stopped{err}
		}
	}
	k = -1
	return r.ended(n)
}

// series reads the names and labels of the row's m samples into w,
// unless the Same hook knows them from their dictionary indexes (same):
// then Name and Labels stay empty.
func (r *ColumnReader) series(w *Row) (m int, same bool, err error) {
	name, labels := &r.cur[cName], &r.cur[cLabels]
	// The common row: in one dictionary page of each column, asked of
	// Same by its indexes, read as strings when not known.
	if r.Same != nil {
		if idx, ok := name.rowIdx(); ok {
			m = len(idx)
			lidx, lok := labels.valIdx(m)
			if lok && m > 0 {
				w.NameIdx, w.LabelsIdx, w.Dict = idx, lidx, uint64(name.dictGen)<<32|uint64(labels.dictGen)
				if r.Same(w) {
					return m, true, nil
				}
			}
			if w.Name, err = name.translate(w.Name, idx); err != nil {
				return m, false, colErr(cName, err)
			}
			if lok {
				if w.Labels, err = labels.translate(w.Labels, lidx); err != nil {
					return m, false, colErr(cLabels, err)
				}
			} else if w.Labels, err = labels.strs(w.Labels, m); err != nil {
				return m, false, colErr(cLabels, err)
			}
			return m, false, nil
		}
	}
	if w.Name, err = name.rowStrs(w.Name); err != nil {
		return 0, false, colErr(cName, err)
	}
	m = len(w.Name)
	if w.Labels, err = labels.strs(w.Labels, m); err != nil {
		return m, false, colErr(cLabels, err)
	}
	return m, false, nil
}

// ended checks that the columns that hold a value a row, and the one that
// delimits the rows' samples, hold no more than the row group's n rows: a
// row group whose stated count is short of its values (a flipped bit in a
// file without a seal) is damaged, not read short.
func (r *ColumnReader) ended(n int64) error {
	for i := range r.cur {
		c := &r.cur[i]
		if c.missing || valueOnly(i) {
			continue
		}
		if c.lv < c.nlv {
			return fmt.Errorf("%w: column %s: values past the row group's %d rows", ErrDamaged, strings.Join(columns[i], "."), n)
		}
		if err := c.load(); !errors.Is(err, errFewValues) {
			return fmt.Errorf("%w: column %s: a page past the row group's %d rows (%v)", ErrDamaged, strings.Join(columns[i], "."), n, err)
		}
	}
	return nil
}

// bodyAt reads the body of row k of a row group, nil when it is null.
// It is for the rare rows whose body matters: it seeks its own pages.
func bodyAt(rg parquet.RowGroup, col, deltaCol int, k int64) (_ []byte, err error) {
	defer recoverDamage(&err)
	cc := rg.ColumnChunks()
	if deltaCol >= 0 {
		return bodyChainAt(rg, col, deltaCol, k)
	}
	if col >= len(cc) {
		return nil, fmt.Errorf("%w: chunk %d of %d", ErrDamaged, col, len(cc))
	}
	pages := cc[col].Pages()
	defer pages.Close()
	if err := pages.SeekToRow(k); err != nil {
		return nil, err
	}
	page, err := pages.ReadPage()
	if err != nil {
		return nil, err
	}
	defer parquet.Release(page)
	var v [1]parquet.Value
	if n, err := page.Values().ReadValues(v[:]); n == 0 {
		return nil, fmt.Errorf("row %d: no value: %w", k, err)
	}
	if v[0].IsNull() {
		return nil, nil
	}
	return slices.Clone(v[0].ByteArray()), nil
}

// rest reads the columns of a whole row (ReadScrapes).
func (r *ColumnReader) rest(w *Row) (err error) {
	c, x := &r.cur, &w.Rest
	if x.URL, err = c[cURL].optStr(); err != nil {
		return colErr(cURL, err)
	}
	if x.Status, err = c[cStatus].optInt32(); err != nil {
		return colErr(cStatus, err)
	}
	if x.ContentType, err = c[cContentType].optStr(); err != nil {
		return colErr(cContentType, err)
	}
	if x.ContentEnc, err = c[cContentEnc].optStr(); err != nil {
		return colErr(cContentEnc, err)
	}
	if x.WireBytes, err = c[cWireBytes].optInt64(); err != nil {
		return colErr(cWireBytes, err)
	}
	var ok bool
	if w.Body, ok, err = c[cBody].optRaw(); err != nil {
		return colErr(cBody, err)
	}
	x.BodyNull = !ok
	if err := r.undelta(w); err != nil {
		return colErr(cBodyDelta, err)
	}
	if x.ParseError, ok, err = c[cParseError].optRaw(); err != nil {
		return colErr(cParseError, err)
	}
	x.ParseErrorNull = !ok
	m := len(w.Name)
	x.Help = x.Help[:0]
	if !c[cHelp].missing {
		if x.Help, err = c[cHelp].strs(x.Help, m); err != nil {
			return colErr(cHelp, err)
		}
	}
	x.Stamped, x.Stamp = x.Stamped[:0], x.Stamp[:0]
	if !c[cStamp].missing {
		if x.Stamped, x.Stamp, err = c[cStamp].stamps(x.Stamped, x.Stamp, m); err != nil {
			return colErr(cStamp, err)
		}
	}
	return nil
}

// kinds reads the family and type of the row's samples, passing over the
// values of the rows that did not need them.
func (r *ColumnReader) kinds(w *Row) (err error) {
	m, lag := len(w.Name), r.vals-r.kindsAt
	if w.Family, err = r.cur[cFamily].passRead(w.Family, lag, m); err != nil {
		return colErr(cFamily, err)
	}
	if w.Type, err = r.cur[cType].passRead(w.Type, lag, m); err != nil {
		return colErr(cType, err)
	}
	r.kindsAt = r.vals + m
	return nil
}

// passRead appends the next m values of a sample column to dst after
// passing over lag: from the pages' bytes when the column has a lazyCol
// that can read them, else page by page.
func (c *colCursor) passRead(dst []int32, lag, m int) ([]int32, error) {
	if c.lazy != nil {
		at, k := c.lazy.done, len(dst)
		dst, err := c.lazyRead(dst, lag, m)
		if !errors.Is(err, errNotLazy) {
			return dst, err
		}
		// A page lazyCol does not read: the cursor reads the column from
		// where lazyCol was (it had read none of it).
		c.lazy, dst = nil, dst[:k]
		if err := c.skip(at); err != nil {
			return dst, err
		}
	}
	if err := c.skip(lag); err != nil {
		return dst, err
	}
	return c.strs(dst, m)
}

// lazyRead is passRead through the column's lazyCol.
func (c *colCursor) lazyRead(dst []int32, lag, m int) (_ []int32, err error) {
	defer recoverDamage(&err)
	if c.dict == nil {
		fp, ok := c.pages.(*parquet.FilePages)
		if !ok {
			return dst, errNotLazy
		}
		d, err := fp.ReadDictionary()
		if err != nil {
			return dst, err
		}
		if d == nil {
			return dst, errNotLazy
		}
		c.setDict(d)
	}
	if err := c.lazy.skip(lag); err != nil {
		return dst, err
	}
	k := len(dst)
	if dst, err = c.lazy.read(dst, m); err != nil {
		return dst[:k], err
	}
	trans := c.trans
	for j, i := range dst[k:] {
		if uint32(i) >= uint32(len(trans)) {
			return dst[:k], errIndex(i, len(trans))
		}
		dst[k+j] = trans[i]
	}
	return dst, nil
}

func colErr(c int, err error) error {
	return fmt.Errorf("column %s: %w", strings.Join(columns[c], "."), err)
}

// colCursor walks one leaf column of a row group, page by page.
type colCursor struct {
	missing bool // the file lacks the column: every value is null
	// lazy, when set, reads the column's values from its pages' bytes
	// (passRead); the cursor has read none of them then. It is lz, whose
	// buffers serve the next row groups.
	lazy *lazyCol
	lz   lazyCol
	// vals, when set, reads the column's pages in parquet-go's place
	// (valpages.go); it is vl. own is the doubles' buffer of the page
	// being read (f64Free's).
	vals *valCol
	vl   valCol
	own  []float64
	// ixs, when set, reads the column's pages of dictionary indexes in
	// parquet-go's place (idxpages.go); it is ix. ixp is the page being
	// read (its buffers the package's).
	ixs    *idxCol
	ix     idxCol
	ixp    idxPage
	tab    *Strings
	leaf   parquet.LeafColumn
	maxDef byte
	pages  parquet.Pages
	page   parquet.Page
	// ahead says the column's pages are decoded one ahead of the cursor
	// on a goroutine of their own (readAhead), started by the first load:
	// decoding them is most of a read, and a replay's consumer is on
	// other cores. next is that goroutine's pages, stop ends it.
	ahead bool
	next  chan aheadPage
	stop  chan struct{}

	// raw keeps a plain page's strings as bytes (rv, ro) instead of
	// interning them: a column whose every value differs (optBytes).
	raw bool
	rv  []byte
	ro  []uint32

	defs, reps []byte // the current page's levels; nil for a required column
	lv, nlv    int    // next level, levels in the page
	// holes, when set, are the levels of defs below the maximum (an
	// idxCol's page); hole is the first not before the level read.
	holes []int32
	hole  int

	idx []int32   // the page's values: dictionary indexes (into trans),
	ids []int32   // string ids (a plain page, and trans),
	i32 []int32   // int32s,
	i64 []int64   // int64s,
	f64 []float64 // or doubles
	vi  int       // next value
	buf []float64 // rowDoubles' values that span pages

	dict    parquet.Dictionary
	dictGen uint32  // counts the dictionaries met: which one dict is
	trans   []int32 // the dictionary's entries as string ids; ids for a plain page
}

// at returns string value i of the page.
func (c *colCursor) at(i int) (int32, error) {
	if c.idx != nil {
		x := c.idx[i]
		if uint32(x) >= uint32(len(c.trans)) {
			return 0, errIndex(x, len(c.trans))
		}
		return c.trans[x], nil
	}
	return c.ids[i], nil
}

// errIndex is a dictionary index i outside its dictionary of n entries: a
// damaged or crafted page (a negative index is as far out as a large one).
func errIndex(i int32, n int) error {
	return fmt.Errorf("%w: dictionary index %d out of range [0,%d)", ErrDamaged, i, n)
}

// nstr is the number of string values in the page.
func (c *colCursor) nstr() int {
	if c.idx != nil {
		return len(c.idx)
	}
	return len(c.ids)
}

// openMissing makes c a column the file lacks.
func (c *colCursor) openMissing() {
	c.close()
	c.missing = true
}

func (c *colCursor) open(cc parquet.ColumnChunk, leaf parquet.LeafColumn) {
	c.missing = false
	c.leaf, c.maxDef = leaf, byte(leaf.MaxDefinitionLevel)
	c.pages = cc.Pages()
	c.page, c.dict, c.trans = nil, nil, c.trans[:0]
	c.dictGen++ // a new chunk's dictionary, even at the address of the last
	c.defs, c.reps, c.holes, c.lv, c.nlv = nil, nil, nil, 0, 0
	c.idx, c.ids, c.i32, c.i64, c.f64, c.vi = nil, c.ids[:0], nil, nil, nil, 0
}

func (c *colCursor) close() {
	// lz and vl keep their buffers, not the file (vl's once its
	// goroutine has ended).
	c.lazy, c.lz.r = nil, nil
	defer func() { c.vals = nil; c.vl.release(); c.ixs = nil; c.ix.release() }()
	c.ixp.drop()
	if c.own != nil {
		f64Free.put(c.own)
		c.own, c.f64 = nil, nil
	}
	// The file was read, or failed already.
	defer func() { _ = recover() }()
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.next != nil {
		// The pages are the goroutine's until it has ended.
		close(c.stop)
		for a := range c.next {
			a.drop()
		}
		c.next, c.stop = nil, nil
	}
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

// errFewValues is a column that ends before the row group does.
var errFewValues = errors.New("fewer values than rows")

// load reads the next page and decodes its values.
func (c *colCursor) load() (err error) {
	defer recoverDamage(&err)
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.vals != nil {
		return c.loadVals()
	}
	if c.ixs != nil {
		return c.loadIdx()
	}
	var p parquet.Page
	if c.ahead {
		p, err = c.readAhead()
	} else {
		p, err = c.pages.ReadPage()
	}
	if errors.Is(err, io.EOF) {
		return errFewValues
	}
	if err != nil {
		return err
	}
	c.page = p
	c.defs, c.reps, c.holes = p.DefinitionLevels(), p.RepetitionLevels(), nil
	c.lv, c.nlv, c.vi = 0, int(p.NumValues()), 0
	// The colCursor walks the levels a column's schema says it has.
	if (c.maxDef > 0 && len(c.defs) != c.nlv) || (c.leaf.MaxRepetitionLevel > 0 && len(c.reps) != c.nlv) {
		return fmt.Errorf("%w: %d definition and %d repetition levels for %d values", ErrDamaged, len(c.defs), len(c.reps), c.nlv)
	}
	want := c.nlv
	if len(c.defs) > 0 {
		if len(c.defs) != c.nlv || (len(c.reps) > 0 && len(c.reps) != c.nlv) {
			return fmt.Errorf("%d definition and %d repetition levels for %d values", len(c.defs), len(c.reps), c.nlv)
		}
		// The levels at the maximum carry a value.
		want = bytes.Count(c.defs, []byte{c.maxDef})
	}
	data := p.Data()
	// A page of nulls only may carry no values at all.
	if data.Kind() == encoding.Undefined {
		c.idx, c.ids, c.i32, c.i64, c.f64 = nil, c.ids[:0], nil, nil, nil
		return count(0, want)
	}
	// read checked each column's physical type.
	switch c.leaf.Node.Type().Kind() {
	case parquet.ByteArray:
		return c.loadStrings(p, &data, want)
	case parquet.Int64:
		c.i64 = data.Int64()
		return count(len(c.i64), want)
	case parquet.Int32:
		c.i32 = data.Int32()
		return count(len(c.i32), want)
	default:
		c.f64 = data.Double()
		return count(len(c.f64), want)
	}
}

// loadVals is load of a page valCol reads: its doubles only (the column
// is read by value count, its levels never walked).
func (c *colCursor) loadVals() error {
	if c.own != nil {
		f64Free.put(c.own)
		c.own, c.f64 = nil, nil
	}
	var (
		f   []float64
		err error
	)
	if c.ahead {
		a := c.nextAhead(func() aheadPage { f, err := readVals(c.vals); return aheadPage{vals: f, err: err} })
		f, err = a.vals, a.err
	} else {
		f, err = c.vals.read()
	}
	if errors.Is(err, io.EOF) {
		f64Free.put(f)
		return errFewValues
	}
	if err != nil {
		f64Free.put(f)
		return err
	}
	c.own, c.f64 = f, f
	c.defs, c.reps, c.holes, c.lv, c.nlv, c.vi = nil, nil, nil, 0, 0, 0
	return nil
}

// loadIdx is load of a page idxCol reads: its dictionary indexes, and its
// levels when the column delimits the rows.
func (c *colCursor) loadIdx() error {
	c.ixp.drop()
	c.idx, c.defs, c.reps, c.holes, c.lv, c.nlv, c.vi = nil, nil, nil, nil, 0, 0, 0
	// The chunk's dictionary, read by parquet-go before its first page.
	if c.dict == nil {
		fp, ok := c.pages.(*parquet.FilePages)
		if !ok {
			return fmt.Errorf("%w: a chunk of indexes not in a file", ErrDamaged)
		}
		d, err := fp.ReadDictionary()
		if err != nil {
			return err
		}
		if d == nil {
			return fmt.Errorf("%w: a chunk of indexes without its dictionary", ErrDamaged)
		}
		c.setDict(d)
	}
	var (
		p   idxPage
		err error
	)
	if c.ahead {
		a := c.nextAhead(func() aheadPage { p, err := readIdx(c.ixs); return aheadPage{ix: p, err: err} })
		p, err = a.ix, a.err
	} else {
		p, err = c.ixs.read()
	}
	if errors.Is(err, io.EOF) {
		return errFewValues
	}
	if err != nil {
		p.drop()
		return err
	}
	c.ixp, c.idx = p, p.idx
	if c.ixs.levels {
		c.reps, c.defs, c.holes, c.hole, c.nlv = p.reps, p.defs, p.holes, 0, p.n
	}
	return nil
}

// readIdx is x's next page; a panic is damage.
func readIdx(x *idxCol) (p idxPage, err error) {
	defer recoverDamage(&err)
	return x.read()
}

// readVals is v's next page; a panic is damage.
func readVals(v *valCol) (f []float64, err error) {
	defer recoverDamage(&err)
	return v.read()
}

// aheadPage is a page read ahead, or the error that ended the reading:
// parquet-go's page, or the doubles of a valCol's.
type aheadPage struct {
	page parquet.Page
	vals []float64
	ix   idxPage
	err  error
}

// readAhead returns the column's next page, read on the column's
// goroutine, which it starts on the first call. The pages come in their
// order, then the error that ended them (io.EOF at the chunk's end; a
// page parquet-go panicked on is damage, as on the cursor's own
// goroutine), then io.EOF.
func (c *colCursor) readAhead() (parquet.Page, error) {
	a := c.nextAhead(func() aheadPage { p, err := readPage(c.pages); return aheadPage{page: p, err: err} })
	return a.page, a.err
}

// nextAhead returns the next page read on the column's goroutine, which
// it starts with read on the first call (one page decoded while the
// cursor walks the one before); io.EOF once the goroutine has ended.
func (c *colCursor) nextAhead(read func() aheadPage) aheadPage {
	if c.next == nil {
		c.next, c.stop = make(chan aheadPage, 1), make(chan struct{})
		go sendAhead(read, c.next, c.stop)
	}
	a, ok := <-c.next
	if !ok {
		return aheadPage{err: io.EOF}
	}
	return a
}

// sendAhead sends the pages read makes to next until one fails or stop
// is closed; it closes next when it ends.
func sendAhead(read func() aheadPage, next chan<- aheadPage, stop <-chan struct{}) {
	defer close(next)
	for {
		a := read()
		select {
		case next <- a:
		case <-stop:
			a.drop()
			return
		}
		if a.err != nil {
			return
		}
	}
}

// drop gives a page's buffers back.
func (a aheadPage) drop() {
	release(a.page)
	f64Free.put(a.vals)
	a.ix.drop()
}

// readPage is pages' next page; a panic of parquet-go's is damage.
func readPage(pages parquet.Pages) (p parquet.Page, err error) {
	defer recoverDamage(&err)
	return pages.ReadPage()
}

// release gives a page's buffers back; a page of a damaged file may panic
// doing so.
func release(p parquet.Page) {
	if p == nil {
		return
	}
	defer func() { _ = recover() }()
	parquet.Release(p)
}

func count(got, want int) error {
	if got != want {
		return fmt.Errorf("%d values for %d present", got, want)
	}
	return nil
}

// loadStrings turns a page of a string column into string ids: through the
// dictionary for an indexed page, one by one for a plain one.
func (c *colCursor) loadStrings(p parquet.Page, data *encoding.Values, want int) error {
	c.idx, c.ids = nil, c.ids[:0]
	if d := p.Dictionary(); d != nil {
		if d != c.dict {
			c.setDict(d)
		}
		idx := data.Int32()
		if err := count(len(idx), want); err != nil {
			return err
		}
		// The indexes are checked against the dictionary as they are
		// read as strings (inRange), not here: the rows the Same hook
		// knows by their indexes, most of a replay's, never are, and a
		// check of every index of every page was 1.7 % of a replay.
		c.idx = idx
		return nil
	}
	vals, offs := data.ByteArray()
	if len(offs) != want+1 {
		return fmt.Errorf("%d byte-array offsets for %d values", len(offs), want)
	}
	if c.raw {
		c.rv, c.ro = vals, offs
		return nil
	}
	for i := 0; i < want; i++ {
		c.ids = append(c.ids, c.tab.ID(vals[offs[i]:offs[i+1]]))
	}
	return nil
}

// setDict makes d the page's dictionary, its entries string ids.
func (c *colCursor) setDict(d parquet.Dictionary) {
	c.dict = d
	c.dictGen++
	dd := d.Page().Data()
	vals, offs := dd.ByteArray()
	c.trans = c.trans[:0]
	for i := 0; i < d.Len(); i++ {
		c.trans = append(c.trans, c.tab.ID(vals[offs[i]:offs[i+1]]))
	}
}

// level advances one level and reports whether it carries a value.
func (c *colCursor) level() (bool, error) {
	for c.lv >= c.nlv {
		if err := c.load(); err != nil {
			return false, err
		}
	}
	c.lv++
	return c.defs == nil || c.defs[c.lv-1] == c.maxDef, nil
}

// str reads a required string of the next row.
func (c *colCursor) str() (int32, error) {
	ok, err := c.level()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errors.New("null in a required column")
	}
	c.vi++
	return c.at(c.vi - 1)
}

// optStr reads an optional string of the next row: -1 for null.
func (c *colCursor) optStr() (int32, error) {
	// A column the file lacks is null.
	if c.missing {
		return -1, nil
	}
	ok, err := c.level()
	if err != nil || !ok {
		return -1, err
	}
	c.vi++
	return c.at(c.vi - 1)
}

// optBytes reads an optional string of the next row of a raw column,
// valid until the next: nil for null.
func (c *colCursor) optBytes() ([]byte, error) {
	b, _, err := c.optRaw()
	return b, err
}

// optRaw is optBytes that says whether the value is there: an empty value
// is not a null one.
func (c *colCursor) optRaw() ([]byte, bool, error) {
	// A column the file lacks is null.
	if c.missing {
		return nil, false, nil
	}
	ok, err := c.level()
	if err != nil || !ok {
		return nil, false, err
	}
	c.vi++
	if c.idx != nil {
		id, err := c.at(c.vi - 1)
		if err != nil {
			return nil, false, err
		}
		return []byte(c.tab.Str(id)), true, nil
	}
	if c.vi >= len(c.ro) {
		return nil, false, fmt.Errorf("%w: %d strings in the page, value %d asked for", ErrDamaged, len(c.ro)-1, c.vi)
	}
	return c.rv[c.ro[c.vi-1]:c.ro[c.vi]], true, nil
}

// optInt32 reads an optional int32 of the next row: -1 for null (a status
// is never negative).
func (c *colCursor) optInt32() (int32, error) { return optional(c, func() []int32 { return c.i32 }) }

// optInt64 reads an optional int64 of the next row: -1 for null (a byte
// count is never negative).
func (c *colCursor) optInt64() (int64, error) { return optional(c, func() []int64 { return c.i64 }) }

// optional reads an optional value of the next row from the cursor's
// values (vals, asked after the level is read: reading it may load the
// next page): -1 for null.
func optional[T int32 | int64](c *colCursor, vals func() []T) (T, error) {
	// A column the file lacks is null.
	if c.missing {
		return -1, nil
	}
	ok, err := c.level()
	if err != nil || !ok {
		return -1, err
	}
	c.vi++
	return vals()[c.vi-1], nil
}

// stamps reads the optional int64 of each of a row's m samples, walking
// the column's levels: one a sample, or one for a row without samples
// (below the element's definition level: no value).
func (c *colCursor) stamps(set []bool, v []int64, m int) ([]bool, []int64, error) {
	set, v = set[:0], v[:0]
	for j := range max(m, 1) {
		ok, err := c.level()
		if err != nil {
			return set, v, err
		}
		rep, def := c.reps[c.lv-1], c.defs[c.lv-1]
		switch {
		case (j == 0) != (rep == 0):
			return set, v, fmt.Errorf("%w: sample %d at repetition level %d", ErrDamaged, j, rep)
		case (m > 0) != (def+1 >= c.maxDef):
			return set, v, fmt.Errorf("%w: %d samples in the row, a level of %d", ErrDamaged, m, def)
		case m == 0:
			return set, v, nil
		}
		set = append(set, ok)
		if !ok {
			v = append(v, 0)
			continue
		}
		c.vi++
		v = append(v, c.i64[c.vi-1])
	}
	return set, v, nil
}

// int64 reads an int64 of the next row, a null as 0.
func (c *colCursor) int64() (int64, error) {
	// A column the file lacks is null.
	if c.missing {
		return 0, nil
	}
	ok, err := c.level()
	if err != nil || !ok {
		return 0, err
	}
	c.vi++
	return c.i64[c.vi-1], nil
}

// rowStrs appends the strings of the next row of the repeated column that
// delimits rows: its levels from one with repetition level 0 to the next.
func (c *colCursor) rowStrs(dst []int32) ([]int32, error) {
	started := false
	for {
		if c.lv >= c.nlv {
			err := c.load()
			// The row group's last row ends with its column.
			if errors.Is(err, errFewValues) && started {
				return dst, nil
			}
			if err != nil {
				return dst, err
			}
			continue
		}
		rep := c.reps[c.lv]
		if started && rep == 0 {
			return dst, nil // the next row starts here
		}
		if !started && rep != 0 {
			return dst, errors.New("a row does not start at repetition level 0")
		}
		started = true
		// The row's levels in this page run to the next repetition level 0;
		// their values are taken in one go.
		end := c.nlv
		if k := bytes.IndexByte(c.reps[c.lv+1:c.nlv], 0); k >= 0 {
			end = c.lv + 1 + k
		}
		n := end - c.lv
		if c.defs != nil {
			n = c.present(c.lv, end)
		}
		var err error
		if dst, err = c.appendStrs(dst, n); err != nil {
			return dst, err
		}
		c.lv = end
	}
}

// rowIdx returns the dictionary indexes of the next row of the repeated
// column that delimits rows, passing over them, when the row lies in the
// current page and the page is dictionary-encoded; else ok is false and
// nothing is passed over (rowStrs reads the row). The indexes are the
// page's, not checked against the dictionary (translate checks them).
func (c *colCursor) rowIdx() (idx []int32, ok bool) {
	if c.idx == nil || c.lv >= c.nlv || c.reps[c.lv] != 0 {
		return nil, false
	}
	k := bytes.IndexByte(c.reps[c.lv+1:c.nlv], 0)
	// The row may go on in the next page.
	if k < 0 {
		return nil, false
	}
	end := c.lv + 1 + k
	n := end - c.lv
	if c.defs != nil {
		n = c.present(c.lv, end)
	}
	if c.vi+n > len(c.idx) {
		return nil, false
	}
	idx = c.idx[c.vi : c.vi+n : c.vi+n]
	c.lv, c.vi = end, c.vi+n
	return idx, true
}

// present is how many of the page's levels lo to hi carry a value (at the
// maximum definition level): by the holes when the page has them, lo on
// from the last level read.
func (c *colCursor) present(lo, hi int) int {
	if c.holes == nil {
		return bytes.Count(c.defs[lo:hi], []byte{c.maxDef})
	}
	h := c.holes[c.hole:]
	k := 0
	for k < len(h) && int(h[k]) < lo {
		k++
	}
	c.hole += k
	n := hi - lo
	for _, x := range h[k:] {
		if int(x) >= hi {
			break
		}
		n--
	}
	return n
}

// valIdx returns the dictionary indexes of the next n values of a sample
// column, passing over them, when the current page holds them and is
// dictionary-encoded; else ok is false and nothing is passed over. The
// indexes are not checked against the dictionary (translate checks them).
func (c *colCursor) valIdx(n int) (idx []int32, ok bool) {
	if c.idx == nil || c.vi+n > len(c.idx) {
		return nil, false
	}
	idx = c.idx[c.vi : c.vi+n : c.vi+n]
	c.vi += n
	return idx, true
}

// translate appends the string ids of the page's dictionary indexes idx
// (rowIdx's, valIdx's) to dst; an index outside the dictionary is an
// error (dst is then cut back to what it was).
func (c *colCursor) translate(dst, idx []int32) ([]int32, error) {
	k := len(dst)
	dst = slices.Grow(dst, len(idx))[:k+len(idx)]
	// out as long as idx: its index needs no bounds check; the index
	// checked against trans's length as unsigned: trans[i] needs none.
	out, trans := dst[k:][:len(idx)], c.trans
	for j, i := range idx {
		if uint32(i) >= uint32(len(trans)) {
			return dst[:k], errIndex(i, len(trans))
		}
		out[j] = trans[i]
	}
	return dst, nil
}

// appendStrs appends the page's next n string values to dst.
func (c *colCursor) appendStrs(dst []int32, n int) ([]int32, error) {
	if c.idx != nil {
		var err error
		if dst, err = c.translate(dst, c.idx[c.vi:c.vi+n]); err != nil {
			return dst, err
		}
	} else {
		dst = append(dst, c.ids[c.vi:c.vi+n]...)
	}
	c.vi += n
	return dst, nil
}

// strs appends the next n values of a sample column.
func (c *colCursor) strs(dst []int32, n int) ([]int32, error) {
	for n > 0 {
		if c.vi >= c.nstr() {
			if err := c.load(); err != nil {
				return dst, err
			}
			continue
		}
		k := min(n, c.nstr()-c.vi)
		var err error
		if dst, err = c.appendStrs(dst, k); err != nil {
			return dst, err
		}
		n -= k
	}
	return dst, nil
}

// skip passes over the next n values of a sample column.
func (c *colCursor) skip(n int) error {
	for n > 0 {
		if c.vi >= c.nstr() {
			if err := c.load(); err != nil {
				return err
			}
			continue
		}
		k := min(n, c.nstr()-c.vi)
		c.vi += k
		n -= k
	}
	return nil
}

// rowDoubles returns the next n values of a double sample column, valid
// until the next call: in place when the page holds them all (a copy of
// every value was a tenth of the read), else copied into c.buf.
func (c *colCursor) rowDoubles(n int) (v []float64, err error) {
	if c.vi+n <= len(c.f64) {
		c.vi += n
		return c.f64[c.vi-n : c.vi : c.vi], nil
	}
	c.buf, err = c.doubles(c.buf[:0], n)
	return c.buf, err
}

// doubles appends the next n values of a double sample column.
func (c *colCursor) doubles(dst []float64, n int) ([]float64, error) {
	for n > 0 {
		if c.vi >= len(c.f64) {
			if err := c.load(); err != nil {
				return dst, err
			}
			continue
		}
		k := min(n, len(c.f64)-c.vi)
		dst = append(dst, c.f64[c.vi:c.vi+k]...)
		c.vi += k
		n -= k
	}
	return dst, nil
}

// Journal delivers the rows of a live or crashed journal (ReadLive).
func (r *ColumnReader) Journal(rows []Scrape, fn func(*Row)) {
	t := r.Tab
	w := &r.trow
	for i := range rows {
		s := &rows[i]
		w.Run, w.Target, w.Engine = t.IDString(s.RunID), t.IDString(s.Target), t.IDString(s.Engine)
		w.Endpoint, w.Outcome = t.IDString(s.Endpoint), t.IDString(s.Outcome)
		w.Seq, w.Start, w.FirstByte = s.Seq, s.StartNs, s.FirstByteNs
		w.Scheduled, w.End, w.Err = s.ScheduledNs, s.EndNs, -1
		if s.Error != nil {
			w.Err = t.IDString(*s.Error)
		}
		w.Body = nil
		if r.WantBody != nil && r.WantBody(w) {
			w.Body = s.Body
		}
		w.Headers = nil
		if r.Headers && s.Headers != nil {
			w.Headers = []byte(*s.Headers)
		}
		w.Family, w.Type, w.Name, w.Labels, w.Value = w.Family[:0], w.Type[:0], w.Name[:0], w.Labels[:0], w.Value[:0]
		for j := range s.Samples {
			x := &s.Samples[j]
			w.Family = append(w.Family, t.IDString(x.Family))
			w.Type = append(w.Type, t.IDString(x.Type))
			w.Name = append(w.Name, t.IDString(x.Name))
			w.Labels = append(w.Labels, t.IDString(x.Labels))
			w.Value = append(w.Value, x.Value)
		}
		fn(w)
	}
}
