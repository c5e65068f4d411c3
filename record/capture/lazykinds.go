package capture

import (
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// A replay reads the family and type of a handful of rows a file (a
// target's first poll, a series that joins), but parquet-go decodes a page
// whole: the 10-minute page of 630 k dictionary indexes for one row (3.4 %
// of a serial replay of 1 h × 8). lazyCol reads such a column itself:
// the data pages' headers are walked, a page wholly before the values
// asked for is passed over by its values' count without being
// decompressed, and within a page the run-length/bit-packed indexes are
// passed over run by run and only those asked for are unpacked.

// errNotLazy is a page lazyCol does not read (not a version 2 page of
// RLE dictionary indexes): the column is read by its colCursor.
var errNotLazy = errors.New("page not read lazily")

// lazyCol reads a dictionary-encoded sample column of a row group by value
// position. done counts the values passed over or read.
type lazyCol struct {
	r      io.ReaderAt
	codec  compress.Codec
	maxDef int
	pos    int64 // the next page header
	end    int64 // the chunk's end
	hdr    []byte
	raw    []byte // the page's bytes as stored
	buf    []byte // its values' section, decompressed
	left   int    // values left in the current page
	idx    rleReader
	done   int
}

// reset makes l a lazyCol on the column chunk md of a file read through
// r, keeping its buffers, and reports whether it can read the chunk.
func (l *lazyCol) reset(r io.ReaderAt, md *format.ColumnMetaData, leaf parquet.LeafColumn) bool {
	if md.DictionaryPageOffset <= 0 || md.DataPageOffset <= md.DictionaryPageOffset || leaf.MaxDefinitionLevel <= 0 {
		return false
	}
	if l.hdr == nil {
		l.hdr = make([]byte, 256)
	}
	*l = lazyCol{r: r, codec: parquet.LookupCompressionCodec(md.Codec), maxDef: leaf.MaxDefinitionLevel,
		pos: md.DataPageOffset, end: md.DictionaryPageOffset + md.TotalCompressedSize,
		hdr: l.hdr, raw: l.raw, buf: l.buf}
	return true
}

// skip passes over the next n values.
func (l *lazyCol) skip(n int) error {
	for n > 0 {
		if l.left == 0 {
			passed, err := l.page(n)
			if err != nil {
				return err
			}
			n -= passed
			continue
		}
		k := min(n, l.left)
		if err := l.idx.skip(k); err != nil {
			return err
		}
		l.left, l.done, n = l.left-k, l.done+k, n-k
	}
	return nil
}

// read appends the dictionary indexes of the next n values to dst.
func (l *lazyCol) read(dst []int32, n int) ([]int32, error) {
	for n > 0 {
		if l.left == 0 {
			if _, err := l.page(0); err != nil {
				return dst, err
			}
			continue
		}
		k := min(n, l.left)
		var err error
		if dst, err = l.idx.read(dst, k); err != nil {
			return dst, err
		}
		l.left, l.done, n = l.left-k, l.done+k, n-k
	}
	return dst, nil
}

// page moves to the next data page holding a value, passing over whole
// the pages of at most pass values: passed of them (counted in done).
func (l *lazyCol) page(pass int) (passed int, err error) {
	for {
		if l.pos >= l.end {
			return passed, errFewValues
		}
		h, n, hdr, err := readPageHeader(l.r, l.pos, l.end, l.hdr)
		l.hdr = hdr
		if err != nil {
			return passed, fmt.Errorf("%w: page header at byte %d: %v", ErrDamaged, l.pos, err)
		}
		data, size := l.pos+int64(n), int64(h.CompressedPageSize)
		if size < 0 || data+size > l.end {
			return passed, fmt.Errorf("%w: a page of %d bytes at byte %d past its chunk's end %d", ErrDamaged, size, data, l.end)
		}
		l.pos = data + size
		if h.Type == format.DictionaryPage || h.Type == format.IndexPage {
			continue
		}
		v := &h.DataPageHeaderV2
		if h.Type != format.DataPageV2 || !v.Valid || v.V.Encoding != format.RLEDictionary {
			return passed, errNotLazy
		}
		rl, dl := int64(v.V.RepetitionLevelsByteLength), int64(v.V.DefinitionLevelsByteLength)
		if rl < 0 || dl < 0 || rl+dl > size {
			return passed, fmt.Errorf("%w: levels of %d and %d bytes in a page of %d", ErrDamaged, rl, dl, size)
		}
		l.raw = grow(l.raw, int(size))
		if _, err := l.r.ReadAt(l.raw, data); err != nil {
			return passed, fmt.Errorf("read page at byte %d: %w", data, err)
		}
		// The values are the definition levels at the maximum.
		levels := rleReader{b: l.raw[rl : rl+dl], width: uint(bits.Len(uint(l.maxDef)))}
		vals, err := levels.count(int(v.V.NumValues), int32(l.maxDef))
		if err != nil {
			return passed, fmt.Errorf("%w: definition levels: %v", ErrDamaged, err)
		}
		if vals == 0 {
			continue
		}
		if vals <= pass {
			// A page wholly passed over is never decompressed.
			l.done += vals
			pass -= vals
			passed += vals
			continue
		}
		body := l.raw[rl+dl:]
		if !v.V.IsCompressed.Valid || v.V.IsCompressed.V {
			if l.buf, err = l.codec.Decode(l.buf[:0], body); err != nil {
				return passed, fmt.Errorf("%w: page at byte %d: %v", ErrDamaged, data, err)
			}
			body = l.buf
		}
		if len(body) == 0 || body[0] > 32 {
			return passed, fmt.Errorf("%w: a dictionary page's indexes without their bit width", ErrDamaged)
		}
		l.idx = rleReader{b: body[1:], width: uint(body[0])}
		l.left = vals
		return passed, nil
	}
}

// grow returns b with length n, reusing its memory when it can.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// rleReader reads Parquet's run-length/bit-packed hybrid encoding of
// width-bit values run by run, passing over runs without unpacking them.
type rleReader struct {
	b     []byte
	width uint
	// The current run: n values left; an RLE run's value val, or a
	// bit-packed run's bytes packed from value i on.
	n      int
	packed bool
	val    int32
	pack   []byte
	i      int
}

// run reads the next run's header.
func (d *rleReader) run() error {
	h, k := uvarint(d.b)
	if k <= 0 {
		return errors.New("a run without its header")
	}
	d.b = d.b[k:]
	if h&1 == 0 {
		w := int(d.width+7) / 8
		if len(d.b) < w || h>>1 > 1<<31 {
			return errors.New("a repeated run past the page")
		}
		var v uint32
		for j := range w {
			v |= uint32(d.b[j]) << (8 * j)
		}
		if d.width < 32 && v >= 1<<d.width {
			return fmt.Errorf("a repeated value %d wider than %d bits", v, d.width)
		}
		d.b = d.b[w:]
		d.n, d.packed, d.val = int(h>>1), false, int32(v)
		return nil
	}
	groups := h >> 1
	if groups > uint64(len(d.b)) || groups*uint64(d.width) > uint64(len(d.b)) {
		return errors.New("a bit-packed run past the page")
	}
	size := int(groups) * int(d.width)
	d.pack, d.b = d.b[:size], d.b[size:]
	d.n, d.packed, d.i = int(groups)*8, true, 0
	return nil
}

// skip passes over n values.
func (d *rleReader) skip(n int) error {
	for n > 0 {
		if d.n == 0 {
			if err := d.run(); err != nil {
				return err
			}
			continue
		}
		k := min(n, d.n)
		d.n, d.i, n = d.n-k, d.i+k, n-k
	}
	return nil
}

// read appends the next n values to dst.
func (d *rleReader) read(dst []int32, n int) ([]int32, error) {
	for n > 0 {
		if d.n == 0 {
			if err := d.run(); err != nil {
				return dst, err
			}
			continue
		}
		k := min(n, d.n)
		if !d.packed {
			for range k {
				dst = append(dst, d.val)
			}
		} else {
			for j := d.i; j < d.i+k; j++ {
				dst = append(dst, d.unpack(j))
			}
		}
		d.n, d.i, n = d.n-k, d.i+k, n-k
	}
	return dst, nil
}

// unpack is value j of the bit-packed run (LSB first); j < the run's
// values, so its bits lie in pack.
func (d *rleReader) unpack(j int) int32 {
	bit := j * int(d.width)
	var v uint64
	for k, at := 0, bit/8; k < 5 && at < len(d.pack); k, at = k+1, at+1 {
		v |= uint64(d.pack[at]) << (8 * k)
	}
	return int32(uint32(v>>(bit%8)) & uint32(1<<d.width-1))
}

// count reads n values and returns how many of them are want.
func (d *rleReader) count(n int, want int32) (int, error) {
	c := 0
	for n > 0 {
		if d.n == 0 {
			if err := d.run(); err != nil {
				return c, err
			}
			continue
		}
		k := min(n, d.n)
		if !d.packed {
			if d.val == want {
				c += k
			}
		} else {
			for j := d.i; j < d.i+k; j++ {
				if d.unpack(j) == want {
					c++
				}
			}
		}
		d.n, d.i, n = d.n-k, d.i+k, n-k
	}
	return c, nil
}

// uvarint is binary.Uvarint of at most 5 bytes (a run's header).
func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i := 0; i < len(b) && i < 5; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}
