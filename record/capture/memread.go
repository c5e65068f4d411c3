package capture

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// A sealed segment a replay reads is read from the disk once: its check
// against the seal reads every byte for the CRC, and its pages were then
// read again, a page header and a page at a time (some 180 preads for a
// file of a megabyte). Read into memory for the CRC, the file is opened
// and its pages read from those bytes; the buffer is the reader's again
// once the read is done.

// memMax is the largest sealed segment read into memory whole; a larger
// one is checked and read from the file, streaming, so that a replay
// holds at most a few of these at a time (one read, maxAhead opened
// ahead). A variable for the tests.
var memMax int64 = 16 << 20

// verifyRead is Seals.Verify of the segment at path reading it into buf
// (grown as needed): mem is the file's bytes, read once (the CRC is taken
// over them, the footer read from them), or nil when the file has no seal
// or is larger than memMax (then checked from the file as Verify does).
// mem is set, its buffer to be given back, even with an error but a
// read's.
func (ss Seals) verifyRead(path string, buf []byte) (seal *Seal, mem []byte, ft *footer, err error) {
	all := ss[filepath.Base(path)]
	// An unverified file is read from the disk.
	if len(all) == 0 {
		return nil, nil, nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("verify segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	// A file too large to hold, or one whose size is unknown, is checked
	// streaming.
	if err != nil || st.Size() > memMax {
		seal, err = ss.Verify(path)
		return seal, nil, nil, err
	}
	// One byte more than the file states: a file that grew since is
	// checked streaming, as Verify reads it to its end.
	size := int(st.Size())
	// A run's files grow as its series do: room for a quarter more, so
	// that the next file finds the buffer large enough (a new buffer's
	// every page is a fault).
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+1+size/4)
	}
	buf = buf[:size+1]
	n, err := io.ReadFull(f, buf)
	switch {
	case err == nil:
		seal, err = ss.Verify(path)
		return seal, nil, nil, err
	case !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF):
		return nil, nil, nil, fmt.Errorf("verify segment %s: %w", path, err)
	}
	mem = buf[:n]
	seal, ft, err = matchSeal(all, path, int64(n), crc32.Checksum(mem, castagnoli), bytes.NewReader(mem))
	return seal, mem, ft, err
}

// fileBufs are the buffers every reader reads sealed segments into: a
// replay makes a reader of its own, and a reader's own buffers were each
// replay's first touch of its first files (2.3 MB of fresh memory a
// replay of 1 h × 8). As many as two replaying workers hold at once; a
// file larger than keepMax is read into a buffer let go after it.
var fileBufs = make(chan []byte, 2*(maxAhead+1))

// getBuf is a buffer of bufs, or nil when none is free.
func getBuf(bufs chan []byte) []byte {
	select {
	case b := <-bufs:
		return b
	default:
		return nil
	}
}

// putBuf gives b back to bufs, or lets it go when bufs is full or b is
// larger than keepMax.
func putBuf(bufs chan []byte, b []byte) {
	if b == nil || cap(b) > keepMax {
		return
	}
	select {
	case bufs <- b[:0]:
	default:
	}
}

// open checks and opens a's segment against seals (Seals.Verify, then
// openSegment): from memory when verifyRead read it there, with a buffer
// of bufs. It closes a.done when done; a panic is a.panic.
func (a *opened) open(seals Seals, bufs chan []byte) {
	defer close(a.done)
	defer func() { a.panic = recover() }()
	a.bufs = bufs
	buf := getBuf(bufs)
	var ft *footer
	a.seal, a.mem, ft, a.verr = seals.verifyRead(a.path, buf)
	a.buf = a.mem
	if a.mem == nil {
		a.buf = buf
	}
	if a.verr != nil {
		return
	}
	o := openOpts{sealed: a.seal != nil}
	// Not read into memory: opened from the file.
	if a.mem == nil {
		a.f, a.pf, a.leaves, a.err = openSegment(a.path, o)
		return
	}
	// The footer the check opened is the one an open would.
	o.footer = ft
	if a.pf, a.leaves, a.err = openColumns(bytes.NewReader(a.mem), int64(len(a.mem)), o); a.err != nil {
		a.err = fmt.Errorf("segment %s: %w", a.path, a.err)
	}
}
