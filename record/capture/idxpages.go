package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"unsafe"

	"github.com/parquet-go/bitpack"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The samples' name and labels columns are dictionary indexes, one page of
// 630–720 k a 10-minute segment of 8 targets, and parquet-go decoded each
// page into page buffers it allocates: every level (repetition and
// definition) a byte, the indexes through a decoder that grows its output
// run by run. idxCol reads such a column chunk's pages itself when every
// data page is a version 2 page of RLE dictionary indexes, zstd or
// uncompressed (what the writer makes): its page decompressed into a
// buffer it keeps, the indexes unpacked straight into an []int32 sized
// by the page's stated count, the repetition levels into bytes only for
// the column that delimits the rows (names), the definition levels
// counted and made bytes only when some row has no samples. The
// dictionary page is parquet-go's (FilePages.ReadDictionary). A chunk
// with any other page is read by parquet-go whole.

// The buffers an idxCol hands out are the package's (see valpages.go's
// free lists): a page's indexes (2.9 MB for 720 k) and repetition levels
// (0.7 MB), and the pages as stored and decompressed. What two replaying
// workers hold at once, for the two columns read ahead: each a page being
// decoded, one sent ahead and one being read.
var (
	idxFree   = make(freeList[int32], 6) // pages' indexes
	lvFree    = make(freeList[byte], 4)  // pages' levels
	ixRawFree = make(freeList[byte], 4)  // pages as stored
	ixBufFree = make(freeList[byte], 4)  // pages decompressed
	holeFree  = make(freeList[int32], 4) // pages' levels below the maximum
)

// readIdxPages says idxCol reads the pages it can: false in tests that
// read the same pages through parquet-go to compare.
var readIdxPages = true

// idxPad is the room kept past a page's bytes for bitpack.Unpack, which
// may read that far past the values it unpacks.
const idxPad = bitpack.PaddingInt32

// idxCol reads the data pages of one dictionary-encoded string column
// chunk, one after the other.
type idxCol struct {
	r      io.ReaderAt
	zstd   bool // the pages are zstd-compressed (else not at all)
	maxDef int
	maxRep int
	// levels says the repetition and definition levels are handed out
	// (the column that delimits the rows), else only counted.
	levels bool
	pages  []v2Page
	next   int    // the next page to read
	hdr    []byte // page headers are read through it
	raw    []byte // the page's bytes as stored (ixRawFree's)
	buf    []byte // its values, decompressed (ixBufFree's)
}

// idxPage is a page read by an idxCol: its indexes and, for a column whose
// levels are handed out, its levels (defs nil when every level carries a
// value). n counts the levels.
type idxPage struct {
	idx        []int32
	reps, defs []byte
	n          int
	// holes are the levels of defs below the maximum, in order; nil when
	// defs is, or when there are more than a sixteenth of the levels.
	holes []int32
}

// drop gives the page's buffers back.
func (p *idxPage) drop() {
	idxFree.put(p.idx)
	lvFree.put(p.reps)
	lvFree.put(p.defs)
	holeFree.put(p.holes)
	*p = idxPage{}
}

// release gives x's buffers back.
func (x *idxCol) release() {
	ixRawFree.put(x.raw)
	ixBufFree.put(x.buf)
	x.raw, x.buf, x.r = nil, nil, nil
}

// reset makes x the reader of the column chunk md of a file read through
// r, keeping its buffers, and reports whether it reads every data page of
// it. The chunk's page headers are read here (two a 10-minute segment:
// the dictionary and one data page); a header the open's checks would
// refuse leaves the chunk to parquet-go, whose error it is.
func (x *idxCol) reset(r io.ReaderAt, md *format.ColumnMetaData, leaf parquet.LeafColumn, levels bool) bool {
	if md.DictionaryPageOffset <= 0 || md.DataPageOffset <= md.DictionaryPageOffset ||
		(md.Codec != format.Zstd && md.Codec != format.Uncompressed) || leaf.Node.Type().Kind() != parquet.ByteArray ||
		leaf.MaxRepetitionLevel > 1 || leaf.MaxDefinitionLevel > 8 {
		return false
	}
	if x.hdr == nil {
		x.hdr = make([]byte, 256)
	}
	*x = idxCol{r: r, zstd: md.Codec == format.Zstd, maxDef: leaf.MaxDefinitionLevel, maxRep: leaf.MaxRepetitionLevel,
		levels: levels, pages: x.pages[:0], hdr: x.hdr, raw: x.raw, buf: x.buf}
	pos, end := md.DictionaryPageOffset, md.DictionaryPageOffset+md.TotalCompressedSize
	if md.TotalCompressedSize < 0 || end < pos {
		return false
	}
	var ok bool
	x.pages, x.hdr, ok = v2Pages(r, pos, end, x.zstd, true, format.RLEDictionary, x.hdr, x.pages)
	return ok
}

// read decodes the next page, or returns io.EOF after the last page.
func (x *idxCol) read() (out idxPage, err error) {
	if x.next >= len(x.pages) {
		return out, io.EOF
	}
	p := &x.pages[x.next]
	x.next++
	damaged := true // else the file could not be read
	defer func() {
		if err != nil {
			out.drop()
			if damaged {
				err = fmt.Errorf("%w: page at byte %d: %v", ErrDamaged, p.data, err)
			}
		}
	}()
	// Room past the bytes for bitpack.Unpack's reads.
	if cap(x.raw) < int(p.size)+idxPad {
		ixRawFree.put(x.raw)
		x.raw = ixRawFree.get(int(p.size) + idxPad)
	}
	x.raw = x.raw[:p.size]
	if _, err := x.r.ReadAt(x.raw, p.data); err != nil && !(errors.Is(err, io.EOF) && len(x.raw) == int(p.size)) {
		damaged = false
		return out, fmt.Errorf("read page at byte %d: %w", p.data, err)
	}
	// The page's checksum, as parquet-go checks it on every read.
	if p.crc != 0 && crc32.ChecksumIEEE(x.raw) != uint32(p.crc) {
		return out, fmt.Errorf("checksum %08x, the page states %08x", crc32.ChecksumIEEE(x.raw), uint32(p.crc))
	}
	want, err := x.readLevels(p, &out)
	if err != nil {
		return out, err
	}
	body := x.raw[p.rl+p.dl:]
	if p.compressed {
		// What the page's frames can make is bounded by its stated size
		// before any of it is made (guard.go): the file may have changed
		// since its open checked it.
		stated := max(int64(p.full)-int64(p.rl)-int64(p.dl), 0)
		sk := skipper{r: bytes.NewReader(body), end: int64(len(body)), buf: x.hdr}
		if err := zstdBound(&sk, int64(len(body)), stated); err != nil {
			return out, err
		}
		if cap(x.buf) < int(stated)+idxPad {
			ixBufFree.put(x.buf)
			x.buf = ixBufFree.get(int(stated) + idxPad)
		}
		if x.buf, err = zstdDecode.Decode(x.buf[:0], body); err != nil {
			return out, err
		}
		body = x.buf
	}
	// bitpack.Unpack's room past the bytes (the codec may have grown
	// the buffer to fit just the page).
	if cap(body)-len(body) < idxPad {
		x.buf = append(make([]byte, 0, len(body)+idxPad), body...)
		body = x.buf
	}
	// parquet-go's count: the values stated, less the nulls stated; the
	// definition levels must agree.
	size := int(p.values) - int(p.nulls)
	if p.nulls < 0 || size < 0 {
		return out, fmt.Errorf("%d nulls of %d values", p.nulls, p.values)
	}
	if err := count(size, want); err != nil {
		return out, err
	}
	// An empty page of indexes is none (parquet-go's: zeros).
	if len(body) == 0 {
		out.idx = idxFree.get(size)
		clear(out.idx)
		return out, nil
	}
	if body[0] > 32 {
		return out, fmt.Errorf("indexes of %d bits", body[0])
	}
	// Unpacked 8 at a time: room for a group past the count.
	out.idx = idxFree.get(size + 8)[:size]
	if err := unpackIdx(out.idx, body[1:], uint(body[0])); err != nil {
		return out, err
	}
	return out, nil
}

// readLevels checks the page's levels, as parquet-go decodes them, into
// out when x hands them out, and returns how many of its values are there
// (the definition levels at the maximum).
func (x *idxCol) readLevels(p *v2Page, out *idxPage) (int, error) {
	n := int(p.values)
	out.n = n
	if n == 0 {
		return 0, nil
	}
	rl, dl := x.raw[:p.rl], x.raw[p.rl:p.rl+p.dl]
	if x.maxRep > 0 {
		if p.rl == 0 {
			return 0, fmt.Errorf("no repetition levels for %d values", n)
		}
		if x.levels {
			out.reps = lvFree.get(n)
		}
		_, first, err := unpackLevels(out.reps, n, rl, uint(bits.Len(uint(x.maxRep))), -1, nil)
		if err != nil {
			return 0, fmt.Errorf("repetition levels: %v", err)
		}
		if first != 0 {
			return 0, fmt.Errorf("the first repetition level is %d", first)
		}
	}
	if x.maxDef == 0 {
		return n, nil
	}
	if p.dl == 0 {
		return 0, fmt.Errorf("no definition levels for %d values", n)
	}
	width := uint(bits.Len(uint(x.maxDef)))
	want, _, err := unpackLevels(nil, n, dl, width, x.maxDef, nil)
	if err != nil {
		return 0, fmt.Errorf("definition levels: %v", err)
	}
	// Every level carrying a value needs no bytes: the cursor reads a
	// column without definition levels so.
	if !x.levels || want == n {
		return want, nil
	}
	// The levels below the maximum too (holes), when they are few: the
	// cursor counts a row's values by them.
	out.defs, out.holes = lvFree.get(n), holeFree.get(n / 16)[:0]
	if _, _, err := unpackLevels(out.defs, n, dl, width, x.maxDef, &out.holes); err != nil {
		return 0, fmt.Errorf("definition levels: %v", err)
	}
	return want, nil
}

// unpackIdx decodes the run-length/bit-packed hybrid of width-bit values in
// src into dst, whose length is the count stated (its capacity has room for
// 8 more); src has idxPad bytes of room past its end. Values the runs lack
// are zeros (parquet-go's); the runs past the count are checked, not kept.
func unpackIdx(dst []int32, src []byte, width uint) error {
	n := len(dst)
	i, at := 0, 0
	for i < len(src) {
		var (
			count  uint64
			packed bool
		)
		if b := src[i]; b < 0x80 {
			count, packed = uint64(b>>1), b&1 != 0
			i++
		} else {
			c, p, k, err := runHeader(src, i)
			if err != nil {
				return err
			}
			count, packed = c, p
			i += k
		}
		// parquet-go passes over a run of none, its value's bytes not.
		if count == 0 {
			continue
		}
		if !packed {
			// A repeated value.
			w := int(width+7) / 8
			if i+w > len(src) {
				return errors.New("a repeated run past the page")
			}
			var v uint32
			for j := range w {
				v |= uint32(src[i+j]) << (8 * j)
			}
			i += w
			c := int(min(count, uint64(n-at)))
			fill(dst[at:at+c], int32(v))
			at += c
			continue
		}
		groups := count
		if groups > uint64(len(src)) || groups*uint64(width) > uint64(len(src)-i) {
			return errors.New("a bit-packed run past the page")
		}
		size := int(groups) * int(width)
		// Whole groups of 8 as far as the count, the last maybe past it
		// (into dst's room).
		c := min(int(groups)*8, (n-at+7)&^7)
		if c > 0 {
			out := dst[at : at+c : at+c]
			if width == 0 {
				clear(out)
			} else {
				bitpack.Unpack(out, src[i:i+size+idxPad], width)
			}
			at = min(at+c, n)
		}
		i += size
	}
	clear(dst[at:])
	return nil
}

// fill sets every element of s to v, two at a time.
func fill(s []int32, v int32) {
	if len(s) >= 2 {
		w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s))), len(s)/2)
		p := uint64(uint32(v)) * (1<<32 + 1)
		for j := range w {
			w[j] = p
		}
	}
	if len(s)%2 == 1 {
		s[len(s)-1] = v
	}
}

// ones is a run of repetition levels of 1 (a row's samples after its
// first), copied from.
var ones = bytes.Repeat([]byte{1}, 1024)

// fillBytes sets every byte of s to v: zeros and ones by memclr and
// memmove (a row's levels are runs of hundreds), others eight at a time.
func fillBytes(s []byte, v byte) {
	switch v {
	case 0:
		clear(s)
		return
	case 1:
		for k := 0; k < len(s); k += len(ones) {
			copy(s[k:], ones)
		}
		return
	}
	j := 0
	p := uint64(v) * 0x0101010101010101
	for ; j+8 <= len(s); j += 8 {
		binary.LittleEndian.PutUint64(s[j:], p)
	}
	for ; j < len(s); j++ {
		s[j] = v
	}
}

// runHeader reads the header of the run at src[i:] as parquet-go does
// (binary.Uvarint): its count and kind, and its bytes. A header of one
// byte is read inline by the callers; this is the rest.
func runHeader(src []byte, i int) (count uint64, packed bool, k int, err error) {
	h, k := binary.Uvarint(src[i:])
	if k <= 0 {
		return 0, false, 0, errors.New("a run without its header")
	}
	if h>>1 > math.MaxInt32 {
		return 0, false, 0, fmt.Errorf("a run of %d values", h>>1)
	}
	return h >> 1, h&1 != 0, k, nil
}

// unpackLevels decodes the run-length/bit-packed hybrid of width-bit levels
// (width ≤ 8) in src into the first n bytes of dst, as parquet-go decodes
// them: runs past n are dropped, fewer levels than n are an error. With
// dst nil nothing is written. It returns how many of the n levels are
// want (none counted when want < 0), and the first level; holes, when it
// points to a slice, gets the levels that are not want (addHoles).
func unpackLevels(dst []byte, n int, src []byte, width uint, want int, holes *[]int32) (match int, first byte, err error) {
	var scratch [64]byte // the levels of a bit-packed run counted, not kept
	i, at := 0, 0
	for i < len(src) {
		var (
			count  uint64
			packed bool
		)
		if b := src[i]; b < 0x80 {
			count, packed = uint64(b>>1), b&1 != 0
			i++
		} else {
			c, p, k, err := runHeader(src, i)
			if err != nil {
				return 0, 0, err
			}
			count, packed = c, p
			i += k
		}
		// parquet-go passes over a run of none, its value's bytes not.
		if count == 0 {
			continue
		}
		if !packed {
			var v byte
			if width > 0 {
				if i >= len(src) {
					return 0, 0, errors.New("a repeated run past the page")
				}
				v = src[i]
				i++
			}
			c := int(min(count, uint64(n-at)))
			if at == 0 && c > 0 {
				first = v
			}
			if int(v) == want {
				match += c
			} else {
				addHoles(holes, at, c, n)
			}
			if dst != nil {
				fillBytes(dst[at:at+c], v)
			}
			at += c
			continue
		}
		size := int(count) * int(width)
		if count > uint64(len(src)) || size > len(src)-i {
			return 0, 0, errors.New("a bit-packed run past the page")
		}
		pack := src[i : i+size]
		i += size
		c := min(int(count)*8, n-at)
		if c == 0 {
			continue
		}
		s := dst
		if s == nil {
			s = scratch[:]
		}
		for j0 := 0; j0 < c; j0 += 64 {
			part := s
			if dst != nil {
				part = dst[at+j0:]
			}
			part = part[:min(64, c-j0)]
			levelsAt(part, pack, j0, width)
			if at+j0 == 0 {
				first = part[0]
			}
			if want < 0 {
				continue
			}
			m := bytes.Count(part, []byte{byte(want)})
			match += m
			if m < len(part) && holes != nil && *holes != nil {
				for j, v := range part {
					if int(v) != want {
						addHoles(holes, at+j0+j, 1, n)
					}
				}
			}
		}
		at += c
	}
	if at < n {
		return 0, 0, fmt.Errorf("%d levels of %d", at, n)
	}
	return match, first, nil
}

// addHoles adds the c levels from at on to *holes, unless it is nil or
// they would make it longer than n/16: then it is nil (too many to keep).
func addHoles(holes *[]int32, at, c, n int) {
	if holes == nil || *holes == nil {
		return
	}
	if len(*holes)+c > n/16 {
		*holes = nil
		return
	}
	for j := range c {
		*holes = append(*holes, int32(at+j))
	}
}

// levelsAt unpacks the bit-packed levels of width bits j0 on into s.
func levelsAt(s, pack []byte, j0 int, width uint) {
	switch width {
	case 0:
		clear(s)
	case 1:
		// A byte's 8 levels at once (j0 is a multiple of 8).
		j := 0
		for ; j+8 <= len(s); j += 8 {
			binary.LittleEndian.PutUint64(s[j:], bits1[pack[(j0+j)/8]])
		}
		for ; j < len(s); j++ {
			s[j] = pack[(j0+j)/8] >> ((j0 + j) % 8) & 1
		}
	default:
		mask := uint64(1)<<width - 1
		for j := range s {
			bit := (j0 + j) * int(width)
			// width ≤ 8: a level lies in two bytes.
			v := uint64(pack[bit/8])
			if bit/8+1 < len(pack) {
				v |= uint64(pack[bit/8+1]) << 8
			}
			s[j] = byte(v >> (bit % 8) & mask)
		}
	}
}

// bits1 is each byte's 8 bits as 8 bytes, the lowest first.
var bits1 = func() (t [256]uint64) {
	for b := range t {
		for k := range 8 {
			t[b] |= uint64(b>>k&1) << (8 * k)
		}
	}
	return t
}()
