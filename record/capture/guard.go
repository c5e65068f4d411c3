package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// MaxPageBytes is the most a page of a segment may hold, compressed or
// not: every reader refuses a larger one (see OpenParquet).
const MaxPageBytes = 128 << 20

// MaxBodyBytes is the largest max_body_bytes the recorder takes: a page of
// the body column holds what the page buffer had (under pageBufferSize),
// then one write batch (under writeBatchBytes before its last row) and
// that row's body, which must stay under MaxPageBytes.
const MaxBodyBytes = MaxPageBytes - pageBufferSize - writeBatchBytes - 16<<20

// parquet-go trusts the sizes a file states: it allocates a footer, a page
// header's strings and lists, a page, its decompressed form and its values
// at the sizes read, before reading the bytes they describe. One flipped
// bit in a file without a seal made it allocate 3.5 GB for a 130 KB file
// (the footer's length), and a fuzz worker that ran two such files at once
// died of it: "out of memory" is a fatal error, not a panic a recover
// catches. So every size parquet-go will trust is checked first, against
// the bytes it describes and against the caps below; a file over them is
// damaged. A sealed file whose CRC checks out passes as a matter of course.
// maxPageBytes caps a page, compressed or not: a page holds at least one
// whole value, a body up to the 64 MiB cap, and the writer closes a page at
// 4 MiB of values (pageBufferSize). A variable for the tests.
var maxPageBytes int32 = MaxPageBytes

const (
	// maxFooterBytes caps the footer: llmrec's are a few KB (one row
	// group per merged segment, some 30 columns).
	maxFooterBytes = 16 << 20
	// maxPageValues caps the values a page states: parquet-go allocates
	// levels and offsets for each (up to some 20 bytes a value) before
	// decoding. A page of 4 MiB holds at most a million dictionary ids.
	maxPageValues = 1 << 23
	// maxListWeight caps what the lists of one footer or page header
	// may make the thrift decoder allocate: a list states its length
	// first, and each element of a struct list is a Go struct of up to
	// some 600 bytes however few bytes encode it.
	maxListWeight = 64 << 20
)

// OpenParquet opens a Parquet file of size bytes for reading, after checking
// that nothing in it makes parquet-go allocate more than its bytes and the
// caps above allow (see the top of this file): its footer, then the header
// of every page of every column chunk. It does not decode a page. Anything
// out of bounds is an error wrapping ErrDamaged; a panic of parquet-go over
// the bytes is one too. The file is opened without its page index and
// bloom filters, which nothing here reads.
func OpenParquet(r io.ReaderAt, size int64) (pf *parquet.File, err error) {
	return openParquet(r, size, openOpts{})
}

// openOpts relax OpenParquet's checks for a caller that makes up for
// them.
type openOpts struct {
	// skip is the path of a column whose pages are not checked: the
	// caller never reads them (SalvageHeaders).
	skip []string
	// sealed says the file matched its seal (Seals.Verify): its every
	// byte is as written, and the pages' checksums are not checked again.
	sealed bool
	// footer, when set, is the file's footer opened already from the
	// same bytes (Seals.verifyRead): not opened again.
	footer *footer
}

// openParquet is OpenParquet with the checks o relaxes.
func openParquet(r io.ReaderAt, size int64, o openOpts) (pf *parquet.File, err error) {
	var footer int64
	if o.footer != nil {
		pf, footer = o.footer.pf, o.footer.n
	} else if pf, footer, err = openFooter(r, size); err != nil {
		return nil, err
	}
	if err := checkRowCounts(pf); err != nil {
		return nil, err
	}
	if err := checkPages(r, size-8-footer, pf, o); err != nil {
		return nil, err
	}
	return pf, nil
}

// checkRowCounts checks the row counts a footer states against each other:
// the file's against its row groups', and each row group's against the
// values of every column chunk that is not a list (one value, or null, a
// row). A reader reads a row group's stated rows and stops: one flipped
// bit in a row group's count read 712 of 720 rows, without an error, in a
// file without a seal.
func checkRowCounts(pf *parquet.File) (err error) {
	defer recoverDamage(&err)
	md := pf.Metadata()
	var sum int64
	for g, rg := range md.RowGroups {
		sum += rg.NumRows
		for c, cc := range rg.Columns {
			leaf, ok := leafAt(pf, c)
			if !ok || leaf.MaxRepetitionLevel > 0 {
				continue
			}
			if cc.MetaData.NumValues != rg.NumRows {
				return fmt.Errorf("%w: row group %d states %d rows, its column %s %d values", ErrDamaged, g, rg.NumRows,
					colName(pf, c), cc.MetaData.NumValues)
			}
		}
	}
	if sum != md.NumRows {
		return fmt.Errorf("%w: the footer states %d rows, its row groups %d", ErrDamaged, md.NumRows, sum)
	}
	return nil
}

// leafAt is the leaf column of chunk c of a row group, by its place in the
// schema: files an earlier writer made after its first one state no path
// in their column chunks' metadata (parquet-go's GenericWriter.Reset left
// it empty), so a lookup by that path finds nothing in them.
func leafAt(pf *parquet.File, c int) (parquet.LeafColumn, bool) {
	cols := pf.Schema().Columns()
	if c >= len(cols) {
		return parquet.LeafColumn{}, false
	}
	return pf.Schema().Lookup(cols[c]...)
}

// colName names chunk c's column: its path in the schema.
func colName(pf *parquet.File, c int) string {
	cols := pf.Schema().Columns()
	if c >= len(cols) {
		return fmt.Sprintf("#%d", c)
	}
	return strings.Join(cols[c], ".")
}

// openFooter opens a file's footer once its length and lists are checked,
// and refuses codecs llmrec never writes (CheckFooter). It returns the
// footer's length.
func openFooter(r io.ReaderAt, size int64) (pf *parquet.File, footer int64, err error) {
	defer recoverDamage(&err)
	if footer, err = checkFooterBytes(r, size); err != nil {
		return nil, 0, err
	}
	// Nothing here reads the page index or the bloom filters; the page
	// index's length, from the footer, was allocated and zeroed whole
	// before anything checked it (a flipped bit: 2 GB).
	pf, err = parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, 0, err
	}
	if err := CheckFooter(pf); err != nil {
		return nil, 0, err
	}
	return pf, footer, nil
}

// checkFooterBytes checks the footer's stated length against the file and
// the lists in it against their bytes, and returns the length. A file
// without PAR1 at its head passes: parquet-go refuses it before it reads a
// length. One with PAR1 at its head and anything else at its tail is
// refused here: parquet-go takes "PARE" (an encrypted footer, which llmrec
// never writes) as a tail and allocates its stated length, up to 4 GB for
// a 45-byte file, before anything checks it.
func checkFooterBytes(r io.ReaderAt, size int64) (int64, error) {
	var head, tail [8]byte
	if _, err := r.ReadAt(head[:4], 0); err != nil || string(head[:4]) != "PAR1" {
		return 0, nil
	}
	if size < 12 {
		return 0, fmt.Errorf("%w: %d bytes, too short for a Parquet file", ErrDamaged, size)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return 0, fmt.Errorf("read footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return 0, fmt.Errorf("%w: the file ends in %q, not the magic PAR1 (llmrec writes no encrypted footer)", ErrDamaged, tail[4:])
	}
	footer := int64(binary.LittleEndian.Uint32(tail[:4]))
	if footer > size-12 || footer > maxFooterBytes {
		return 0, fmt.Errorf("%w: the footer states %d bytes, the file has %d (cap %d)", ErrDamaged, footer, size, maxFooterBytes)
	}
	b := make([]byte, footer)
	if _, err := r.ReadAt(b, size-8-footer); err != nil {
		return 0, fmt.Errorf("read footer: %w", err)
	}
	s := skim{b: b, room: footer}
	if err := s.structure(0); err != nil {
		return 0, fmt.Errorf("%w: footer: %v", ErrDamaged, err)
	}
	return footer, nil
}

// checkPages walks the pages of every column chunk, which must lie in the
// first end bytes of the file, reading their headers, and their data
// against the checksum a page states. A page is checked whether or not a
// command reads its column: a damaged page is refused by every command
// alike, not only by those that decode it.
func checkPages(r io.ReaderAt, end int64, pf *parquet.File, o openOpts) (err error) {
	defer recoverDamage(&err)
	md := pf.Metadata()
	buf := make([]byte, 4096)
	var sum []byte // nil: no checksum checked
	if !o.sealed {
		sum = make([]byte, 64<<10)
	}
	skip := o.skip
	var before int64 // rows of the row groups before
	for g, rg := range md.RowGroups {
		for c, cc := range rg.Columns {
			if cols := pf.Schema().Columns(); skip != nil && c < len(cols) && slices.Equal(cols[c], skip) {
				continue
			}
			// parquet-go decodes every chunk of a column with the codec
			// of its first.
			if first := md.RowGroups[0].Columns; c >= len(first) || cc.MetaData.Codec != first[c].MetaData.Codec {
				err = fmt.Errorf("codec %v, not the codec of the column's first chunk", cc.MetaData.Codec)
			} else {
				// A column of one value a row counts its rows by values.
				first := int64(-1)
				if leaf, ok := leafAt(pf, c); ok && leaf.MaxRepetitionLevel == 0 {
					first = before
				}
				buf, err = checkChunk(r, end, &cc.MetaData, buf, sum, first)
			}
			if err != nil {
				return fmt.Errorf("%w: row group %d, column %s: %v", ErrDamaged, g, colName(pf, c), err)
			}
		}
		before += rg.NumRows
	}
	return nil
}

// checkChunk checks the headers of a column chunk's pages, as parquet-go
// will read them: one after the other from the dictionary page (or the
// first data page) to the chunk's stated end; and each page's data against
// its checksum, read through sum. row is the file's row of the chunk's
// first value, -1 when its values are not one a row (a list's).
func checkChunk(r io.ReaderAt, end int64, md *format.ColumnMetaData, buf, sum []byte, row int64) ([]byte, error) {
	pos := md.DataPageOffset
	if md.DictionaryPageOffset != 0 {
		pos = md.DictionaryPageOffset
	}
	stop := pos + md.TotalCompressedSize
	if pos < 4 || md.TotalCompressedSize < 0 || stop > end || stop < pos {
		return buf, fmt.Errorf("pages at %d, %d bytes, outside the file's %d bytes of pages", pos, md.TotalCompressedSize, end)
	}
	for page := 0; pos < stop; page++ {
		var h format.PageHeader
		var n int
		var err error
		h, n, buf, err = readPageHeader(r, pos, stop, buf)
		if err != nil {
			return buf, fmt.Errorf("page %d at byte %d: header: %v", page, pos, err)
		}
		data := pos + int64(n)
		if err := checkPage(&h, stop-data); err != nil {
			return buf, fmt.Errorf("page %d at byte %d: %v", page, pos, err)
		}
		if err := checkFrames(r, md.Codec, &h, data, buf); err != nil {
			return buf, fmt.Errorf("page %d at byte %d: %v", page, pos, err)
		}
		if err := checkSum(r, &h, data, sum); err != nil {
			where := ""
			if row >= 0 && h.Type != format.DictionaryPage {
				where = fmt.Sprintf(" (rows from %d)", row)
			}
			return buf, fmt.Errorf("page %d at byte %d%s: %v", page, pos, where, err)
		}
		if row >= 0 {
			row += int64(pageValues(&h))
		}
		pos = data + int64(h.CompressedPageSize)
	}
	return buf, nil
}

// checkSum checks the page's data at data against the CRC-32 its header
// states, when it states one (llmrec's writer does), reading it through
// buf (nil: not checked): a damaged page is refused when the file is
// opened.
func checkSum(r io.ReaderAt, h *format.PageHeader, data int64, buf []byte) error {
	if h.CRC == 0 || buf == nil {
		return nil
	}
	crc := crc32.NewIEEE()
	if _, err := io.CopyBuffer(crc, io.NewSectionReader(r, data, int64(h.CompressedPageSize)), buf); err != nil {
		return err
	}
	if got := crc.Sum32(); got != uint32(h.CRC) {
		return fmt.Errorf("checksum %08x, the page states %08x", got, uint32(h.CRC))
	}
	return nil
}

// pageValues is the number of values a data page states (0 for another).
func pageValues(h *format.PageHeader) int32 {
	switch {
	case h.DataPageHeader.Valid:
		return h.DataPageHeader.V.NumValues
	case h.DataPageHeaderV2.Valid:
		return h.DataPageHeaderV2.V.NumValues
	}
	return 0
}

// readPageHeader reads the page header at pos, which with its strings and
// lists must end by stop, reading more while buf is too short for it.
func readPageHeader(r io.ReaderAt, pos, stop int64, buf []byte) (format.PageHeader, int, []byte, error) {
	var h format.PageHeader
	for {
		b := buf[:min(int64(len(buf)), stop-pos)]
		if _, err := r.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return h, 0, buf, err
		}
		s := skim{b: b, room: stop - pos}
		err := s.structure(0)
		if errors.Is(err, errSkimShort) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return h, 0, buf, err
		}
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[:s.i], &h); err != nil {
			return h, 0, buf, err
		}
		return h, s.i, buf, nil
	}
}

// checkPage checks the sizes and counts of a page header whose page has
// room bytes left in its chunk.
func checkPage(h *format.PageHeader, room int64) error {
	if h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > room {
		return fmt.Errorf("%d bytes stated, %d left in the chunk", h.CompressedPageSize, room)
	}
	if h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes {
		return fmt.Errorf("%d bytes uncompressed stated (cap %d)", h.UncompressedPageSize, maxPageBytes)
	}
	var values []int32
	switch {
	case h.DataPageHeader.Valid:
		values = append(values, h.DataPageHeader.V.NumValues)
	case h.DictionaryPageHeader.Valid:
		values = append(values, h.DictionaryPageHeader.V.NumValues)
	case h.DataPageHeaderV2.Valid:
		v := &h.DataPageHeaderV2.V
		values = append(values, v.NumValues, v.NumNulls, v.NumRows)
		if v.RepetitionLevelsByteLength < 0 || v.DefinitionLevelsByteLength < 0 ||
			int64(v.RepetitionLevelsByteLength)+int64(v.DefinitionLevelsByteLength) > int64(h.CompressedPageSize) {
			return fmt.Errorf("levels of %d and %d bytes in a page of %d", v.RepetitionLevelsByteLength, v.DefinitionLevelsByteLength, h.CompressedPageSize)
		}
	}
	for _, v := range values {
		if v < 0 || v > maxPageValues {
			return fmt.Errorf("%d values stated (cap %d)", v, maxPageValues)
		}
	}
	return nil
}

// checkFrames checks that the compressed data of a page, at data, cannot
// decompress to more than the page's stated uncompressed size (with the
// slack frameLimit allows): the decoders grow their output as the data
// says, whatever the page header states. zstd: every frame is walked, block
// by block, without decoding (a frame's content size, when stated, and its
// blocks' sizes bound what it makes; a page with a second frame, or with
// thousands of 128 KiB blocks of one repeated byte, made 2 GB of 724 KB);
// snappy: the length that starts it; gzip: its one member is inflated into
// nothing up to the bound, and any member after it is refused (the decoder
// reads them all). Any codec else was refused with the footer.
func checkFrames(r io.ReaderAt, codec format.CompressionCodec, h *format.PageHeader, data int64, buf []byte) error {
	if h.Type != format.DataPage && h.Type != format.DataPageV2 && h.Type != format.DictionaryPage {
		return nil // parquet-go reads no other page's data
	}
	size, want := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if v := &h.DataPageHeaderV2; h.Type == format.DataPageV2 && v.Valid {
		levels := int64(v.V.RepetitionLevelsByteLength) + int64(v.V.DefinitionLevelsByteLength)
		data, size, want = data+levels, size-levels, want-levels
		if v.V.IsCompressed.Valid && !v.V.IsCompressed.V {
			return nil
		}
	}
	want = max(want, 0)
	switch codec {
	case format.Zstd:
		return zstdBound(&skipper{r: r, off: data, end: data + size, buf: buf}, size, want)
	case format.Gzip:
		return gzipBound(io.NewSectionReader(r, data, size), want)
	case format.Snappy:
		b := buf[:min(binary.MaxVarintLen64, size)]
		if _, err := r.ReadAt(b, data); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n, k := binary.Uvarint(b); k > 0 && n > uint64(want) {
			return fmt.Errorf("snappy block of %d bytes in a page of %d", n, want)
		}
	}
	return nil
}

// frameLimit is the most a page stated to hold want bytes may decompress
// to: a zstd frame's blocks bound its output only to 128 KiB each, so a
// frame of a few blocks, each short of the full size, is allowed twice its
// page's size.
func frameLimit(want int64) int64 { return 2*want + zstdBlockMax }

// zstdBlockMax is the most one compressed zstd block decompresses to.
const zstdBlockMax = 128 << 10

// zstdBound walks the zstd frames of a page's size bytes, the page stated
// to hold want bytes, and refuses them when what they can decompress to
// exceeds frameLimit(want), or when they are not frames at all: skippable
// frames are passed over (64 at most), every other frame's blocks are
// summed (a raw or RLE block makes its stated size, a compressed one 128
// KiB at most), and a frame that states its content size may make no more.
func zstdBound(br *skipper, size, want int64) error {
	limit := frameLimit(want)
	var out int64
	for frames, skipped := 0, 0; size > 0; frames++ {
		hb, _ := br.Peek(int(min(int64(zstd.HeaderMaxSize), size)))
		var zh zstd.Header
		if err := zh.Decode(hb); err != nil {
			if frames == 0 {
				return nil // the decoder fails on it too, allocating nothing
			}
			return fmt.Errorf("zstd frame %d: %v", frames, err)
		}
		if zh.Skippable {
			if skipped++; skipped > 64 {
				return fmt.Errorf("more than %d skippable zstd frames", skipped-1)
			}
			n := int64(zh.HeaderSize) + int64(zh.SkippableSize)
			if _, err := br.Discard(int(min(n, size))); err != nil {
				return fmt.Errorf("zstd skippable frame %d: %v", frames, err)
			}
			size -= n
			continue
		}
		if zh.HasFCS && zh.FrameContentSize > uint64(want) {
			return fmt.Errorf("zstd frame of %d bytes in a page of %d", zh.FrameContentSize, want)
		}
		if _, err := br.Discard(zh.HeaderSize); err != nil {
			return fmt.Errorf("zstd frame %d: %v", frames, err)
		}
		size -= int64(zh.HeaderSize)
		var made int64
		for last := false; !last; {
			var bh [3]byte
			if _, err := io.ReadFull(br, bh[:]); err != nil {
				return fmt.Errorf("zstd frame %d: block header: %v", frames, err)
			}
			v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
			last = v&1 == 1
			n := int64(v >> 3)
			var in, makes int64
			switch (v >> 1) & 3 {
			case 0: // raw
				in, makes = n, n
			case 1: // RLE: one byte, repeated n times
				in, makes = 1, n
			case 2:
				in, makes = n, zstdBlockMax
			default:
				return fmt.Errorf("zstd frame %d: reserved block type", frames)
			}
			if made += makes; out+made > limit {
				return fmt.Errorf("zstd frames of over %d bytes in a page of %d", limit, want)
			}
			if _, err := br.Discard(int(in)); err != nil {
				return fmt.Errorf("zstd frame %d: block of %d bytes: %v", frames, in, err)
			}
			size -= 3 + in
		}
		if zh.HasFCS {
			made = min(made, int64(zh.FrameContentSize))
		}
		out += made
		if zh.HasCheckSum {
			if _, err := br.Discard(4); err != nil {
				return fmt.Errorf("zstd frame %d: checksum: %v", frames, err)
			}
			size -= 4
		}
	}
	return nil
}

// skipper reads the bytes from off to end of r through buf, as a
// bufio.Reader would, except that Discard past what buf holds moves on
// without reading: zstdBound reads a page's frame and block headers, not
// the blocks between them.
type skipper struct {
	r        io.ReaderAt
	off, end int64 // off: the offset of buf[0]
	buf      []byte
	i, n     int // buf[i:n] is unread
}

// fill reads more after the unread bytes, keeping them.
func (s *skipper) fill() error {
	k := copy(s.buf, s.buf[s.i:s.n])
	s.off, s.i, s.n = s.off+int64(s.i), 0, k
	want := min(int64(len(s.buf)-k), s.end-(s.off+int64(k)))
	if want <= 0 {
		return io.EOF
	}
	m, err := s.r.ReadAt(s.buf[k:k+int(want)], s.off+int64(k))
	s.n += m
	if m > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Peek returns the next n bytes unread, fewer at the end (with an error).
func (s *skipper) Peek(n int) ([]byte, error) {
	for s.n-s.i < n {
		if err := s.fill(); err != nil {
			return s.buf[s.i:s.n], err
		}
	}
	return s.buf[s.i : s.i+n], nil
}

// Discard passes over n bytes, fewer at the end (with io.EOF).
func (s *skipper) Discard(n int) (int, error) {
	if n <= s.n-s.i {
		s.i += n
		return n, nil
	}
	pos := s.off + int64(s.i)
	if left := s.end - pos; int64(n) > left {
		s.off, s.i, s.n = s.end, 0, 0
		return int(left), io.EOF
	}
	s.off, s.i, s.n = pos+int64(n), 0, 0
	return n, nil
}

// Read reads what buf holds, filling it first when it holds nothing.
func (s *skipper) Read(p []byte) (int, error) {
	if s.i == s.n {
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
	k := copy(p, s.buf[s.i:s.n])
	s.i += k
	return k, nil
}

// gzipBound inflates the gzip data of a page stated to hold want bytes
// into nothing, and refuses it when it makes more than frameLimit(want)
// or when anything follows its first member: the decoder reads members
// until the data ends, and a member states no size before its end.
func gzipBound(sr *io.SectionReader, want int64) error {
	// A byte reader: the inflater then reads no byte past the member.
	br := bufio.NewReaderSize(sr, 4096)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil // the decoder fails on it too, allocating nothing
	}
	zr.Multistream(false)
	limit := frameLimit(want)
	n, err := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
	if err != nil {
		return nil // the decoder fails on it too, having made at most this
	}
	if n > limit {
		return fmt.Errorf("gzip member of over %d bytes in a page of %d", limit, want)
	}
	if _, err := br.Peek(1); err == nil {
		return fmt.Errorf("gzip data after its first member (%d bytes made)", n)
	}
	return nil
}

// errSkimShort says a skim ran past its bytes with room for more: read more.
var errSkimShort = errors.New("short read")

// skim walks a thrift compact struct without decoding it, checking that
// every length it states fits in the room it has, so that decoding it
// allocates in proportion to its bytes. room is how far the struct may
// extend (the footer, a chunk's rest); b is its first bytes.
type skim struct {
	b      []byte
	i      int
	room   int64
	weight int64 // what decoding its lists allocates, about
}

// maxDepth caps the nesting of structs and lists; parquet's go 5 deep.
const maxDepth = 32

func (s *skim) short() error {
	if int64(len(s.b)) < s.room {
		return errSkimShort
	}
	return io.ErrUnexpectedEOF
}

func (s *skim) byte() (byte, error) {
	if s.i >= len(s.b) {
		return 0, s.short()
	}
	s.i++
	return s.b[s.i-1], nil
}

func (s *skim) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("varint over 64 bits")
}

// left is how many bytes may follow.
func (s *skim) left() uint64 { return uint64(s.room - int64(s.i)) }

func (s *skim) skip(n uint64) error {
	if n > s.left() {
		return fmt.Errorf("%d bytes stated, %d left", n, s.left())
	}
	if s.i+int(n) > len(s.b) {
		return s.short()
	}
	s.i += int(n)
	return nil
}

// structure skims a struct: fields until a stop byte.
func (s *skim) structure(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested over %d deep", maxDepth)
	}
	for {
		h, err := s.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil
		}
		if h>>4 == 0 { // the field id follows in full
			if _, err := s.uvarint(); err != nil {
				return err
			}
		}
		if t := h & 0xf; t != thriftTrue && t != thriftFalse { // a bool field's value is its type
			if err := s.value(t, depth); err != nil {
				return err
			}
		}
	}
}

// The compact protocol's types.
const (
	thriftTrue, thriftFalse = 1, 2
	thriftByte, thriftI16   = 3, 4
	thriftI32, thriftI64    = 5, 6
	thriftDouble, thriftBin = 7, 8
	thriftList, thriftSet   = 9, 10
	thriftMap, thriftStruct = 11, 12
)

// value skims a value of type t; a bool in a list or map is a byte.
func (s *skim) value(t byte, depth int) error {
	switch t {
	case thriftTrue, thriftFalse, thriftByte:
		return s.skip(1)
	case thriftI16, thriftI32, thriftI64:
		_, err := s.uvarint()
		return err
	case thriftDouble:
		return s.skip(8)
	case thriftBin:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		return s.skip(n)
	case thriftList, thriftSet:
		h, err := s.byte()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = s.uvarint(); err != nil {
				return err
			}
		}
		return s.elements(n, h&0xf, 0, depth)
	case thriftMap:
		n, err := s.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		return s.elements(n, kv>>4, kv&0xf, depth)
	case thriftStruct:
		return s.structure(depth + 1)
	}
	return fmt.Errorf("thrift type %d", t)
}

// elements skims n elements of type t (pairs of t and u when u is not 0).
// Each takes a byte at least, so n may not exceed the bytes left.
func (s *skim) elements(n uint64, t, u byte, depth int) error {
	if n > s.left() {
		return fmt.Errorf("%d elements stated, %d bytes left", n, s.left())
	}
	w := uint64(16)
	if t == thriftStruct || u == thriftStruct {
		w = 1 << 10
	}
	if s.weight += int64(n * w); s.weight > maxListWeight {
		return fmt.Errorf("lists of over %d bytes decoded", maxListWeight)
	}
	if depth > maxDepth {
		return fmt.Errorf("nested over %d deep", maxDepth)
	}
	for range n {
		if err := s.value(t, depth+1); err != nil {
			return err
		}
		if u == 0 {
			continue
		}
		if err := s.value(u, depth+1); err != nil {
			return err
		}
	}
	return nil
}
