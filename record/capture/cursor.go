package capture

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Cursor reads a sealed segment a row at a time, the file held open
// between rows: a reader that follows a recording up to an instant stops
// at the first row after it and resumes there at its next instant,
// instead of reading the file again from its first row. Its rows are
// ReadSealed's, in the same order, through the same checks; it has a
// ColumnReader of its own (its Row stays valid while the cursor is not
// moved), and Known and WantBody are the cursor's.
type Cursor struct {
	r    *ColumnReader
	path string
	seal *Seal
	next func() (*Row, bool)
	stop func()
	rows int64
	err  error // the read's end: nil until it ended
	// body is the file opened again for BodyAt, kept until Close.
	body   *os.File
	bodyPF *parquet.File
}

// errCursorClosed ends the read of a Cursor closed before its end.
var errCursorClosed = errors.New("cursor closed")

// OpenCursor checks the segment at path against its seal in seals
// (Seals.Verify) and returns a cursor on its rows, for a reader that
// reads strings into tab and the headers column when headers is set.
// known and wantBody are the cursor's ColumnReader's Known and WantBody.
// The file is opened by the first Next.
func OpenCursor(tab *Strings, seals Seals, path string, headers bool, known, wantBody func(*Row) bool) (*Cursor, error) {
	seal, err := seals.Verify(path)
	if err != nil {
		return nil, err
	}
	r := NewColumnReader(tab)
	r.Headers, r.Known, r.WantBody = headers, known, wantBody
	// A file that matched its seal is as written, byte for byte.
	r.sealed = seal != nil
	c := &Cursor{r: r, path: path, seal: seal}
	c.next, c.stop = iter.Pull(func(yield func(*Row) bool) {
		err := r.read(path, func(w *Row) error {
			if !yield(w) {
				return errCursorClosed
			}
			return nil
		})
		if err == nil {
			err = io.EOF
		}
		c.err = err
	})
	return c, nil
}

// Sealed reports whether the file matched a seal of the ledger (nil when
// the ledger has none for it: an unverified file).
func (c *Cursor) Sealed() *Seal { return c.seal }

// Next returns the next row, valid until the next call (or Close). At the
// file's end it returns io.EOF, after checking the rows read against the
// seal (Seal.CheckRows); any other error names the file and what is wrong
// with it, as Read's do.
func (c *Cursor) Next() (*Row, error) {
	if w, ok := c.next(); ok {
		c.rows++
		return w, nil
	}
	if c.err == io.EOF {
		if err := c.seal.CheckRows(c.path, c.rows); err != nil {
			c.err = err
		}
	}
	return nil, c.err
}

// BodyAt reads the body of the file's row k (0 the first), nil when it is
// null or the file has no body column, as WantBody reads it: for a row
// Next returned without its body, whose body turns out to matter later.
func (c *Cursor) BodyAt(k int64) (body []byte, err error) {
	if c.body == nil {
		if c.body, c.bodyPF, _, err = openSegment(c.path, openOpts{sealed: c.seal != nil}); err != nil {
			return nil, err
		}
	}
	pf := c.bodyPF
	leaf, ok := pf.Schema().Lookup("body")
	if !ok || leaf.Node.Type().Kind() != parquet.ByteArray || leaf.MaxRepetitionLevel != 0 {
		return nil, nil
	}
	for gi, rg := range pf.RowGroups() {
		if n := rg.NumRows(); k >= n {
			k -= n
			continue
		}
		if body, err = bodyAt(rg, leaf.ColumnIndex, deltaColumn(pf), k); err != nil {
			return nil, fmt.Errorf("segment %s: row group %d: column body: %w", c.path, gi, err)
		}
		return body, nil
	}
	return nil, fmt.Errorf("segment %s: %w: no row %d", c.path, ErrDamaged, k)
}

// Rows is the number of rows Next returned.
func (c *Cursor) Rows() int64 { return c.rows }

// Close ends the read and closes the file.
func (c *Cursor) Close() {
	c.stop()
	if c.body != nil {
		c.body.Close()
		c.body, c.bodyPF = nil, nil
	}
}

// ReadKeys calls fn with each row of the segment at path without its
// samples, body or headers: its key columns (run, target, engine,
// endpoint, outcome, seq, the times and the error) only, a fraction of a
// read's cost. A reader that stops at an instant reads there where the
// rows after it begin.
func ReadKeys(tab *Strings, path string, fn func(*Row)) error {
	r := NewColumnReader(tab)
	r.omit = OmitSamples | OmitBody
	return r.Read(path, fn)
}
