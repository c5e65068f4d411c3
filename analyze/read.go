package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// A segment is read column by column, never through the body column, with
// one cursor per column walking its pages in step, so memory is bounded by a
// page and not by a file. The string columns are dictionary-encoded: each
// distinct string (a series name, a label set) is interned once per
// dictionary, and a sample becomes four integers and a float.

// strtab interns strings: equal strings get equal ids.
type strtab struct {
	ids map[string]int32
	s   []string
}

func newStrtab() *strtab { return &strtab{ids: make(map[string]int32)} }

// id returns b's id; looking up a known string does not allocate.
func (t *strtab) id(b []byte) int32 {
	if id, ok := t.ids[string(b)]; ok {
		return id
	}
	return t.add(string(b))
}

// idString returns s's id.
func (t *strtab) idString(s string) int32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	return t.add(s)
}

func (t *strtab) add(s string) int32 {
	id := int32(len(t.s))
	t.s = append(t.s, s)
	t.ids[s] = id
	return id
}

// row is one scrape row as ids and numbers. Its slices are valid until the
// next row (value may be the page's own memory). family and typ are empty
// when the reader's known hook said the row does not need them.
type row struct {
	run, target, engine, endpoint, outcome int32
	seq, start, firstByte                  int64 // a null time is 0
	scheduled, end                         int64 // 0 when null or when the file lacks the column
	err                                    int32 // the error text, -1 when null

	family, typ, name, labels []int32
	value                     []float64
	// body is the row's body, read only for the rows the reader's
	// wantBody asks for (nil otherwise): the bodies are the bulk of a
	// segment and the cells never need them.
	body []byte
	// headers are the row's response headers as the capture stores them
	// (a JSON object), nil when null or not read (segReader.headers).
	headers []byte
}

// Column paths of the projection.
var columns = [...][]string{
	cRun: {"run_id"}, cTarget: {"target"}, cEngine: {"engine"}, cEndpoint: {"endpoint"}, cOutcome: {"outcome"},
	cSeq: {"seq"}, cStart: {"start_ns"}, cFirstByte: {"first_byte_ns"},
	cFamily: {"samples", "list", "element", "family"}, cType: {"samples", "list", "element", "type"},
	cName: {"samples", "list", "element", "name"}, cLabels: {"samples", "list", "element", "labels"},
	cValue:     {"samples", "list", "element", "value"},
	cScheduled: {"scheduled_ns"}, cEnd: {"end_ns"}, cError: {"error"}, cHeaders: {"headers"},
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
	cHeaders // read only when segReader.headers
	nColumns
)

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
	cHeaders: parquet.ByteArray,
}

// segReader reads segments row by row, reusing its buffers.
type segReader struct {
	tab  *strtab
	cur  [nColumns]cursor
	row  row
	trow row // scratch for journal rows

	// known, when set, is asked of every row before it is delivered, its
	// samples read but not their family and type: true means the
	// consumer knows every series of the row already, and those two
	// columns are not decoded for it. A replay needs them once per
	// series, and decoding them for every sample was a third of the read.
	// A row group whose rows are all known never reads their pages.
	known func(*row) bool
	// vals counts the sample values of the row group's rows delivered so
	// far, kindsAt those the family and type cursors have passed.
	vals, kindsAt int
	// headers says whether the headers column is read (a target names a
	// process start header): row.headers is nil when it is not.
	headers bool
	// wantBody, when set, is asked of every row before it is delivered:
	// true reads the row's body into row.body (an engine's error answer
	// may say what it is doing). bodyCol is the body column's index in
	// the file being read, -1 when it has none.
	wantBody func(*row) bool
	bodyCol  int
}

func newSegReader(tab *strtab) *segReader {
	r := &segReader{tab: tab}
	for i := range r.cur {
		r.cur[i].tab = tab
	}
	// Every row's headers differ (Date): they are not interned.
	r.cur[cHeaders].raw = true
	return r
}

// read calls fn with each row of the segment at path. Errors name the file
// and what is wrong with it (the row group and column where known); rows
// before the error have been delivered. A file parquet-go cannot make sense
// of, panicking, is an error wrapping capture.ErrDamaged.
func (r *segReader) read(path string, fn func(*row)) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	pf, leaves, err := openSegment(f, st.Size())
	if err != nil {
		return fmt.Errorf("segment %s: %w", path, err)
	}
	if !r.headers {
		leaves[cHeaders] = parquet.LeafColumn{ColumnIndex: -1}
	}
	r.bodyCol = -1
	if leaf, ok := pf.Schema().Lookup("body"); ok && leaf.Node.Type().Kind() == parquet.ByteArray && leaf.MaxRepetitionLevel == 0 {
		r.bodyCol = leaf.ColumnIndex
	}
	for gi, rg := range pf.RowGroups() {
		if err := r.rowGroup(rg, leaves[:], fn); err != nil {
			return fmt.Errorf("segment %s: row group %d: %w", path, gi, err)
		}
	}
	return nil
}

// recoverDamage turns a panic of parquet-go over a file's bytes (or of
// this reader's decoding of them) into an error. It is deferred only by
// functions that do not call a reader's consumer.
func recoverDamage(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: parquet-go panicked: %v", capture.ErrDamaged, p)
	}
}

// openSegment opens a segment's footer and finds the projection's leaf
// columns in its schema.
func openSegment(f io.ReaderAt, size int64) (pf *parquet.File, leaves [nColumns]parquet.LeafColumn, err error) {
	defer recoverDamage(&err)
	pf, err = capture.OpenParquet(f, size)
	if err != nil {
		return nil, leaves, err
	}
	if v, ok := pf.Lookup("llmrec.schema_version"); ok && v != capture.SchemaVersion {
		return nil, leaves, fmt.Errorf("schema version %s, this llmrec reads %s", v, capture.SchemaVersion)
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
	// Rows are delimited by the repeated name column's levels.
	if leaves[cName].MaxRepetitionLevel != 1 {
		return nil, leaves, fmt.Errorf("column %s is not a list of samples", strings.Join(columns[cName], "."))
	}
	return pf, leaves, nil
}

// openGroup opens a cursor on each of the row group's leaf columns and
// returns its row count.
func (r *segReader) openGroup(rg parquet.RowGroup, leaves []parquet.LeafColumn) (n int64, err error) {
	defer recoverDamage(&err)
	cc := rg.ColumnChunks()
	for i := range r.cur {
		if leaves[i].ColumnIndex < 0 {
			r.cur[i].openMissing()
			continue
		}
		if leaves[i].ColumnIndex >= len(cc) {
			return 0, fmt.Errorf("%w: column %s: chunk %d of %d", capture.ErrDamaged, strings.Join(columns[i], "."), leaves[i].ColumnIndex, len(cc))
		}
		r.cur[i].open(cc[leaves[i].ColumnIndex], leaves[i])
	}
	return rg.NumRows(), nil
}

// rowGroup delivers the rows of one row group.
func (r *segReader) rowGroup(rg parquet.RowGroup, leaves []parquet.LeafColumn, fn func(*row)) (err error) {
	defer func() {
		for i := range r.cur {
			r.cur[i].close()
		}
	}()
	n, err := r.openGroup(rg, leaves)
	if err != nil {
		return err
	}
	c := &r.cur
	w := &r.row
	r.vals, r.kindsAt = 0, 0
	for k := int64(0); k < n; k++ {
		if w.run, err = c[cRun].str(); err != nil {
			return colErr(cRun, err)
		}
		if w.target, err = c[cTarget].str(); err != nil {
			return colErr(cTarget, err)
		}
		if w.engine, err = c[cEngine].str(); err != nil {
			return colErr(cEngine, err)
		}
		if w.endpoint, err = c[cEndpoint].str(); err != nil {
			return colErr(cEndpoint, err)
		}
		if w.outcome, err = c[cOutcome].str(); err != nil {
			return colErr(cOutcome, err)
		}
		if w.seq, err = c[cSeq].int64(); err != nil {
			return colErr(cSeq, err)
		}
		if w.start, err = c[cStart].int64(); err != nil {
			return colErr(cStart, err)
		}
		if w.firstByte, err = c[cFirstByte].int64(); err != nil {
			return colErr(cFirstByte, err)
		}
		if w.scheduled, err = c[cScheduled].int64(); err != nil {
			return colErr(cScheduled, err)
		}
		if w.end, err = c[cEnd].int64(); err != nil {
			return colErr(cEnd, err)
		}
		if w.err, err = c[cError].optStr(); err != nil {
			return colErr(cError, err)
		}
		if w.headers, err = c[cHeaders].optBytes(); err != nil {
			return colErr(cHeaders, err)
		}
		w.name = w.name[:0]
		if w.name, err = c[cName].rowStrs(w.name); err != nil {
			return colErr(cName, err)
		}
		m := len(w.name)
		if w.labels, err = c[cLabels].strs(w.labels[:0], m); err != nil {
			return colErr(cLabels, err)
		}
		if w.value, err = c[cValue].rowDoubles(m); err != nil {
			return colErr(cValue, err)
		}
		w.family, w.typ = w.family[:0], w.typ[:0]
		if m > 0 && (r.known == nil || !r.known(w)) {
			if err := r.kinds(w); err != nil {
				return err
			}
		}
		r.vals += m
		w.body = nil
		if r.bodyCol >= 0 && r.wantBody != nil && r.wantBody(w) {
			if w.body, err = bodyAt(rg, r.bodyCol, k); err != nil {
				return fmt.Errorf("column body: %w", err)
			}
		}
		fn(w)
	}
	return nil
}

// bodyAt reads the body of row k of a row group, nil when it is null.
// It is for the rare rows whose body matters: it seeks its own pages.
func bodyAt(rg parquet.RowGroup, col int, k int64) (_ []byte, err error) {
	defer recoverDamage(&err)
	cc := rg.ColumnChunks()
	if col >= len(cc) {
		return nil, fmt.Errorf("%w: chunk %d of %d", capture.ErrDamaged, col, len(cc))
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

// kinds reads the family and type of the row's samples, passing over the
// values of the rows that did not need them.
func (r *segReader) kinds(w *row) (err error) {
	m, lag := len(w.name), r.vals-r.kindsAt
	for _, col := range [...]int{cFamily, cType} {
		if err := r.cur[col].skip(lag); err != nil {
			return colErr(col, err)
		}
	}
	if w.family, err = r.cur[cFamily].strs(w.family, m); err != nil {
		return colErr(cFamily, err)
	}
	if w.typ, err = r.cur[cType].strs(w.typ, m); err != nil {
		return colErr(cType, err)
	}
	r.kindsAt = r.vals + m
	return nil
}

func colErr(c int, err error) error {
	return fmt.Errorf("column %s: %w", strings.Join(columns[c], "."), err)
}

// cursor walks one leaf column of a row group, page by page.
type cursor struct {
	missing bool // the file lacks the column: every value is null
	tab     *strtab
	leaf    parquet.LeafColumn
	maxDef  byte
	pages   parquet.Pages
	page    parquet.Page

	// raw keeps a plain page's strings as bytes (rv, ro) instead of
	// interning them: a column whose every value differs (optBytes).
	raw bool
	rv  []byte
	ro  []uint32

	defs, reps []byte // the current page's levels; nil for a required column
	lv, nlv    int    // next level, levels in the page

	idx []int32   // the page's values: dictionary indexes (into trans),
	ids []int32   // string ids (a plain page, and trans),
	i64 []int64   // int64s,
	f64 []float64 // or doubles
	vi  int       // next value
	buf []float64 // rowDoubles' values that span pages

	dict  parquet.Dictionary
	trans []int32 // the dictionary's entries as string ids; ids for a plain page
}

// at returns string value i of the page.
func (c *cursor) at(i int) int32 {
	if c.idx != nil {
		return c.trans[c.idx[i]]
	}
	return c.ids[i]
}

// nstr is the number of string values in the page.
func (c *cursor) nstr() int {
	if c.idx != nil {
		return len(c.idx)
	}
	return len(c.ids)
}

// openMissing makes c a column the file lacks.
func (c *cursor) openMissing() {
	c.close()
	c.missing = true
}

func (c *cursor) open(cc parquet.ColumnChunk, leaf parquet.LeafColumn) {
	c.missing = false
	c.leaf, c.maxDef = leaf, byte(leaf.MaxDefinitionLevel)
	c.pages = cc.Pages()
	c.page, c.dict, c.trans = nil, nil, c.trans[:0]
	c.defs, c.reps, c.lv, c.nlv = nil, nil, 0, 0
	c.idx, c.ids, c.i64, c.f64, c.vi = nil, c.ids[:0], nil, nil, 0
}

func (c *cursor) close() {
	// The file was read, or failed already.
	defer func() { _ = recover() }()
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

// errShort is a column that ends before the row group does.
var errShort = errors.New("fewer values than rows")

// load reads the next page and decodes its values.
func (c *cursor) load() (err error) {
	defer recoverDamage(&err)
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	p, err := c.pages.ReadPage()
	if errors.Is(err, io.EOF) {
		return errShort
	}
	if err != nil {
		return err
	}
	c.page = p
	c.defs, c.reps = p.DefinitionLevels(), p.RepetitionLevels()
	c.lv, c.nlv, c.vi = 0, int(p.NumValues()), 0
	// The cursor walks the levels a column's schema says it has.
	if (c.maxDef > 0 && len(c.defs) != c.nlv) || (c.leaf.MaxRepetitionLevel > 0 && len(c.reps) != c.nlv) {
		return fmt.Errorf("%w: %d definition and %d repetition levels for %d values", capture.ErrDamaged, len(c.defs), len(c.reps), c.nlv)
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
		c.idx, c.ids, c.i64, c.f64 = nil, c.ids[:0], nil, nil
		return count(0, want)
	}
	// read checked each column's physical type.
	switch c.leaf.Node.Type().Kind() {
	case parquet.ByteArray:
		return c.loadStrings(p, &data, want)
	case parquet.Int64:
		c.i64 = data.Int64()
		return count(len(c.i64), want)
	default:
		c.f64 = data.Double()
		return count(len(c.f64), want)
	}
}

func count(got, want int) error {
	if got != want {
		return fmt.Errorf("%d values for %d present", got, want)
	}
	return nil
}

// loadStrings turns a page of a string column into string ids: through the
// dictionary for an indexed page, one by one for a plain one.
func (c *cursor) loadStrings(p parquet.Page, data *encoding.Values, want int) error {
	c.idx, c.ids = nil, c.ids[:0]
	if d := p.Dictionary(); d != nil {
		if d != c.dict {
			c.dict = d
			dd := d.Page().Data()
			vals, offs := dd.ByteArray()
			c.trans = c.trans[:0]
			for i := 0; i < d.Len(); i++ {
				c.trans = append(c.trans, c.tab.id(vals[offs[i]:offs[i+1]]))
			}
		}
		idx := data.Int32()
		if err := count(len(idx), want); err != nil {
			return err
		}
		// The largest index, unsigned (a negative one is larger than any),
		// is checked once; the one out of range is looked for only then.
		hi := uint32(0)
		for _, i := range idx {
			hi = max(hi, uint32(i))
		}
		if int64(hi) >= int64(len(c.trans)) {
			for _, i := range idx {
				if i < 0 || int(i) >= len(c.trans) {
					return fmt.Errorf("dictionary index %d out of range [0,%d)", i, len(c.trans))
				}
			}
		}
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
		c.ids = append(c.ids, c.tab.id(vals[offs[i]:offs[i+1]]))
	}
	return nil
}

// level advances one level and reports whether it carries a value.
func (c *cursor) level() (bool, error) {
	for c.lv >= c.nlv {
		if err := c.load(); err != nil {
			return false, err
		}
	}
	c.lv++
	return c.defs == nil || c.defs[c.lv-1] == c.maxDef, nil
}

// str reads a required string of the next row.
func (c *cursor) str() (int32, error) {
	ok, err := c.level()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errors.New("null in a required column")
	}
	c.vi++
	return c.at(c.vi - 1), nil
}

// optStr reads an optional string of the next row: -1 for null.
func (c *cursor) optStr() (int32, error) {
	// A column the file lacks is null.
	if c.missing {
		return -1, nil
	}
	ok, err := c.level()
	if err != nil || !ok {
		return -1, err
	}
	c.vi++
	return c.at(c.vi - 1), nil
}

// optBytes reads an optional string of the next row of a raw column,
// valid until the next: nil for null.
func (c *cursor) optBytes() ([]byte, error) {
	// A column the file lacks is null.
	if c.missing {
		return nil, nil
	}
	ok, err := c.level()
	if err != nil || !ok {
		return nil, err
	}
	c.vi++
	if c.idx != nil {
		return []byte(c.tab.s[c.at(c.vi-1)]), nil
	}
	if c.vi >= len(c.ro) {
		return nil, fmt.Errorf("%w: %d strings in the page, value %d asked for", capture.ErrDamaged, len(c.ro)-1, c.vi)
	}
	return c.rv[c.ro[c.vi-1]:c.ro[c.vi]], nil
}

// int64 reads an int64 of the next row, a null as 0.
func (c *cursor) int64() (int64, error) {
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
func (c *cursor) rowStrs(dst []int32) ([]int32, error) {
	started := false
	for {
		if c.lv >= c.nlv {
			err := c.load()
			// The row group's last row ends with its column.
			if errors.Is(err, errShort) && started {
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
			n = bytes.Count(c.defs[c.lv:end], []byte{c.maxDef})
		}
		dst = c.appendStrs(dst, n)
		c.lv = end
	}
}

// appendStrs appends the page's next n string values to dst.
func (c *cursor) appendStrs(dst []int32, n int) []int32 {
	if c.idx != nil {
		k := len(dst)
		dst = slices.Grow(dst, n)[:k+n]
		out, trans := dst[k:], c.trans
		for j, i := range c.idx[c.vi : c.vi+n] {
			out[j] = trans[i]
		}
	} else {
		dst = append(dst, c.ids[c.vi:c.vi+n]...)
	}
	c.vi += n
	return dst
}

// strs appends the next n values of a sample column.
func (c *cursor) strs(dst []int32, n int) ([]int32, error) {
	for n > 0 {
		if c.vi >= c.nstr() {
			if err := c.load(); err != nil {
				return dst, err
			}
			continue
		}
		k := min(n, c.nstr()-c.vi)
		dst = c.appendStrs(dst, k)
		n -= k
	}
	return dst, nil
}

// skip passes over the next n values of a sample column.
func (c *cursor) skip(n int) error {
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
func (c *cursor) rowDoubles(n int) (v []float64, err error) {
	if c.vi+n <= len(c.f64) {
		c.vi += n
		return c.f64[c.vi-n : c.vi : c.vi], nil
	}
	c.buf, err = c.doubles(c.buf[:0], n)
	return c.buf, err
}

// doubles appends the next n values of a double sample column.
func (c *cursor) doubles(dst []float64, n int) ([]float64, error) {
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

// journal delivers a live journal's rows.
func (r *segReader) journal(rows []capture.Scrape, fn func(*row)) {
	t := r.tab
	w := &r.trow
	for i := range rows {
		s := &rows[i]
		w.run, w.target, w.engine = t.idString(s.RunID), t.idString(s.Target), t.idString(s.Engine)
		w.endpoint, w.outcome = t.idString(s.Endpoint), t.idString(s.Outcome)
		w.seq, w.start, w.firstByte = s.Seq, s.StartNs, s.FirstByteNs
		w.scheduled, w.end, w.err = s.ScheduledNs, s.EndNs, -1
		if s.Error != nil {
			w.err = t.idString(*s.Error)
		}
		w.body = nil
		if r.wantBody != nil && r.wantBody(w) {
			w.body = s.Body
		}
		w.headers = nil
		if r.headers && s.Headers != nil {
			w.headers = []byte(*s.Headers)
		}
		w.family, w.typ, w.name, w.labels, w.value = w.family[:0], w.typ[:0], w.name[:0], w.labels[:0], w.value[:0]
		for j := range s.Samples {
			x := &s.Samples[j]
			w.family = append(w.family, t.idString(x.Family))
			w.typ = append(w.typ, t.idString(x.Type))
			w.name = append(w.name, t.idString(x.Name))
			w.labels = append(w.labels, t.idString(x.Labels))
			w.value = append(w.value, x.Value)
		}
		fn(w)
	}
}
