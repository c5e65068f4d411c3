package capture

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/bytestreamsplit"
	"github.com/parquet-go/parquet-go/format"
)

// The value column is most of what a replay decodes (5.7 MB of doubles a
// 10-minute segment of 8 targets), and parquet-go decodes each page into
// page buffers it allocates (a quarter of a replay's allocated bytes),
// checks the levels it then hands over as bytes, and leaves the doubles
// to be read from its page. valCol reads a value column chunk's pages
// itself when every one of them is a version 2 data page of
// byte-stream-split doubles (what the writer makes): its page decompressed
// into a buffer it keeps, the doubles split straight into a []float64 the
// cursor reuses, the levels only counted. A chunk with any other page (a
// version 1 page, a dictionary, another encoding or codec: older
// recordings) is read by parquet-go whole.

// The buffers a valCol decodes into are kept by the package, not by a
// reader: a replay makes a reader of its own, and buffers kept by the
// reader were a replay's first touch of some 18 MB (raw, decompressed and
// split pages), each 4 KiB of it a fault. Not a sync.Pool, which every
// garbage collection empties: a replay collects often, and parquet-go's
// pooled page buffers were 27 % of the bytes it allocated. A few of each
// are kept, what two replaying workers hold at once (a page read, one
// sent ahead, one being decoded): some 45 MB for 10-minute pages of 8
// targets, held after a replay; at most 64 MB (keepMax).
var (
	rawFree  = make(freeList[byte], 2)    // pages as stored
	zbufFree = make(freeList[byte], 2)    // pages decompressed
	f64Free  = make(freeList[float64], 4) // pages' doubles
)

// freeList keeps buffers given back for the next get.
type freeList[T any] chan []T

// get is a buffer of length n: one given back when it is long enough.
func (f freeList[T]) get(n int) []T {
	select {
	case b := <-f:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	// Segments grow as a run's series do: room for a quarter more.
	return make([]T, n, n+n/4)
}

// keepMax is the largest buffer a free list keeps, in bytes: a 10-minute
// page of 8 targets' doubles is 5.7 MB (with its quarter's room, 7.2);
// a larger one is let go, so that what the lists hold stays bounded
// whatever the pages.
const keepMax = 8 << 20

// put gives b back, unless f holds as many as it keeps or b is larger
// than keepMax.
func (f freeList[T]) put(b []T) {
	var zero T
	if b == nil || cap(b)*int(unsafe.Sizeof(zero)) > keepMax {
		return
	}
	select {
	case f <- b[:0]:
	default:
	}
}

// valCol reads the pages of one value column chunk, one after the other.
type valCol struct {
	r      io.ReaderAt
	zstd   bool // the pages are zstd-compressed (else not at all)
	maxDef int
	maxRep int
	pages  []v2Page
	next   int    // the next page to read
	hdr    []byte // page headers are read through it
	raw    []byte // the page's bytes as stored (rawFree's)
	buf    []byte // its values, decompressed (zbufFree's)
}

// release gives v's page buffers back to their pools.
func (v *valCol) release() {
	rawFree.put(v.raw)
	zbufFree.put(v.buf)
	v.raw, v.buf, v.r = nil, nil, nil
}

// v2Page is a version 2 data page of a column chunk, as its header states
// it (the pages valCol and idxCol read).
type v2Page struct {
	data          int64 // the page's bytes: its levels, then its values
	size          int32 // stored
	full          int32 // uncompressed (levels included)
	values, nulls int32 // levels, and those stated null
	rl, dl        int32 // the levels' bytes
	compressed    bool
	crc           int32 // 0: none stated
}

// v2Pages appends to pages the data pages of a chunk's bytes [pos, end),
// their headers read through r into hdr: each a version 2 page of
// encoding enc (index pages passed over, and dictionary pages where dict).
// It reports false for a header it cannot read, one the open's checks
// would refuse (checkPage) or any other page: the chunk is then
// parquet-go's, whose error it is.
func v2Pages(r io.ReaderAt, pos, end int64, zstd, dict bool, enc format.Encoding, hdr []byte, pages []v2Page) ([]v2Page, []byte, bool) {
	for pos < end {
		h, n, b, err := readPageHeader(r, pos, end, hdr)
		hdr = b
		if err != nil {
			return pages, hdr, false
		}
		data := pos + int64(n)
		if checkPage(&h, end-data) != nil {
			return pages, hdr, false
		}
		pos = data + int64(h.CompressedPageSize)
		if h.Type == format.IndexPage || (dict && h.Type == format.DictionaryPage) {
			continue
		}
		d := &h.DataPageHeaderV2
		if h.Type != format.DataPageV2 || !d.Valid || d.V.Encoding != enc {
			return pages, hdr, false
		}
		pages = append(pages, v2Page{data: data, size: h.CompressedPageSize, full: h.UncompressedPageSize,
			values: d.V.NumValues, nulls: d.V.NumNulls, rl: d.V.RepetitionLevelsByteLength, dl: d.V.DefinitionLevelsByteLength,
			compressed: zstd && (!d.V.IsCompressed.Valid || d.V.IsCompressed.V), crc: h.CRC})
	}
	return pages, hdr, true
}

// reset makes v the reader of the column chunk md of a file read through
// r, keeping its buffers, and reports whether it reads every page of it.
// The chunk's page headers are read here (one a 10-minute segment); a
// header the open's checks would refuse leaves the chunk to parquet-go,
// whose error it is.
func (v *valCol) reset(r io.ReaderAt, md *format.ColumnMetaData, leaf parquet.LeafColumn) bool {
	// A chunk of dictionary-encoded values, or not zstd: parquet-go's.
	if md.DictionaryPageOffset != 0 || (md.Codec != format.Zstd && md.Codec != format.Uncompressed) ||
		leaf.Node.Type().Kind() != parquet.Double {
		return false
	}
	if v.hdr == nil {
		v.hdr = make([]byte, 256)
	}
	*v = valCol{r: r, zstd: md.Codec == format.Zstd, maxDef: leaf.MaxDefinitionLevel, maxRep: leaf.MaxRepetitionLevel,
		pages: v.pages[:0], hdr: v.hdr}
	pos, end := md.DataPageOffset, md.DataPageOffset+md.TotalCompressedSize
	if pos < 4 || md.TotalCompressedSize < 0 || end < pos {
		return false
	}
	var ok bool
	v.pages, v.hdr, ok = v2Pages(r, pos, end, v.zstd, false, format.ByteStreamSplit, v.hdr, v.pages)
	return ok
}

// read decodes the next page's doubles into a buffer of f64Free, or
// returns io.EOF after the last page.
func (v *valCol) read() ([]float64, error) {
	if v.next >= len(v.pages) {
		return nil, io.EOF
	}
	p := &v.pages[v.next]
	v.next++
	if cap(v.raw) < int(p.size) {
		rawFree.put(v.raw)
		v.raw = rawFree.get(int(p.size))
	}
	v.raw = v.raw[:p.size]
	if _, err := v.r.ReadAt(v.raw, p.data); err != nil && !(errors.Is(err, io.EOF) && len(v.raw) == int(p.size)) {
		return nil, fmt.Errorf("read page at byte %d: %w", p.data, err)
	}
	// The page's checksum, as parquet-go checks it on every read.
	if p.crc != 0 && crc32.ChecksumIEEE(v.raw) != uint32(p.crc) {
		return nil, fmt.Errorf("%w: page at byte %d: checksum %08x, the page states %08x", ErrDamaged, p.data, crc32.ChecksumIEEE(v.raw), uint32(p.crc))
	}
	want, err := v.levels(p)
	if err != nil {
		return nil, fmt.Errorf("%w: page at byte %d: %v", ErrDamaged, p.data, err)
	}
	body := v.raw[p.rl+p.dl:]
	if p.compressed {
		// What the page's frames can make is bounded by its stated size
		// before any of it is made (guard.go): the file may have changed
		// since its open checked it.
		stated := max(int64(p.full)-int64(p.rl)-int64(p.dl), 0)
		sk := skipper{r: bytes.NewReader(body), end: int64(len(body)), buf: v.hdr}
		if err := zstdBound(&sk, int64(len(body)), stated); err != nil {
			return nil, fmt.Errorf("%w: page at byte %d: %v", ErrDamaged, p.data, err)
		}
		if v.buf == nil {
			v.buf = zbufFree.get(int(stated))
		}
		if v.buf, err = zstdDecode.Decode(v.buf[:0], body); err != nil {
			return nil, fmt.Errorf("%w: page at byte %d: %v", ErrDamaged, p.data, err)
		}
		body = v.buf
	}
	if len(body)%8 != 0 {
		return nil, fmt.Errorf("%w: page at byte %d: %d bytes of doubles", ErrDamaged, p.data, len(body))
	}
	if err := count(len(body)/8, want); err != nil {
		return nil, fmt.Errorf("%w: page at byte %d: %v", ErrDamaged, p.data, err)
	}
	var bss bytestreamsplit.Encoding
	return bss.DecodeDouble(f64Free.get(want)[:0], body)
}

// levels checks the page's levels, as parquet-go decodes them, and returns
// how many of its values are there (the definition levels at the maximum).
func (v *valCol) levels(p *v2Page) (int, error) {
	n := int(p.values)
	if n == 0 {
		return 0, nil
	}
	if v.maxRep > 0 {
		if p.rl == 0 {
			return 0, fmt.Errorf("no repetition levels for %d values", n)
		}
		reps := rleReader{b: v.raw[:p.rl], width: uint(bits.Len(uint(v.maxRep)))}
		var one [1]int32
		first, err := reps.read(one[:0], 1)
		if err == nil {
			err = reps.skip(n - 1)
		}
		if err != nil {
			return 0, fmt.Errorf("repetition levels: %v", err)
		}
		if first[0] != 0 {
			return 0, fmt.Errorf("the first repetition level is %d", first[0])
		}
	}
	if v.maxDef == 0 {
		return n, nil
	}
	if p.dl == 0 {
		return 0, fmt.Errorf("no definition levels for %d values", n)
	}
	defs := rleReader{b: v.raw[p.rl : p.rl+p.dl], width: uint(bits.Len(uint(v.maxDef)))}
	want, err := defs.count(n, int32(v.maxDef))
	if err != nil {
		return 0, fmt.Errorf("definition levels: %v", err)
	}
	return want, nil
}
