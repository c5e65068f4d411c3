package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// withFooter is data (a Parquet file) with its footer replaced by footer.
func withFooter(t *testing.T, data, footer []byte) []byte {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	out := slices.Concat(data[:len(data)-8-n], footer)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// footerOf is the thrift footer of a Parquet file.
func footerOf(data []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	return data[len(data)-8-n : len(data)-8]
}

// A file that states sizes its bytes do not hold is damaged, and reading
// it allocates about what reading the intact file does, not what it
// states. The first case is what FuzzReadSegment found: one flip in the
// footer's length made parquet-go allocate 3.6 GB before reading it, twice
// at once in a fuzz worker of two readers, which died of it ("fuzzing
// process hung or terminated unexpectedly: exit status 2"; the input read
// fine alone, on a machine with the memory). Before the checks of guard.go
// each case here allocated 1.4 GB or more (the encrypted tails: 3.5 GB).
func TestReadSegmentStatedSizesAllocateLittle(t *testing.T) {
	data, err := os.ReadFile(shippedSegment)
	if err != nil {
		t.Fatal(err)
	}
	const huge = 0xd87730c8 // the length FuzzReadSegment's input stated
	footer := footerOf(data)
	// A second row_groups field (4, a list of structs) of 16 M elements,
	// stated in six bytes, before the footer's stop byte.
	lying := slices.Concat(footer[:len(footer)-1], []byte{0x09, 0x08, 0xfc, 0x80, 0x80, 0x80, 0x08, 0x00, 0x00})
	cases := []struct {
		name string
		data []byte
	}{
		{"footer length", append(binary.LittleEndian.AppendUint32(slices.Clone(data[:len(data)-8]), huge), "PAR1"...)},
		{"footer length, 12 bytes", append(binary.LittleEndian.AppendUint32([]byte("PAR1"), huge), "PAR1"...)},
		{"footer list", withFooter(t, data, lying)},
		// What FuzzReadSegment found next: parquet-go takes "PARE" (an
		// encrypted footer) as a tail magic and allocates its length
		// before it asks for a key.
		{"encrypted tail, 12 bytes", append(binary.LittleEndian.AppendUint32([]byte("PAR1"), huge), "PARE"...)},
		{"encrypted tail", append(slices.Clone(data[:len(data)-4]), "PARE"...)},
	}
	dir := t.TempDir()
	intact := filepath.Join(dir, runR+"-000001.parquet")
	if err := os.WriteFile(intact, data, 0o644); err != nil {
		t.Fatal(err)
	}
	base := allocated(func() { readDamaged(t, intact); sealOf(intact) })
	for i, c := range cases {
		path := filepath.Join(dir, runR+"-00000"+string(rune('2'+i))+".parquet")
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		var rerr, serr error
		got := allocated(func() {
			_, rerr = readDamaged(t, path)
			_, serr = sealOf(path)
		})
		if !errors.Is(rerr, ErrDamaged) || !errors.Is(serr, ErrDamaged) {
			t.Errorf("%s: read %v, seal %v; want both damaged", c.name, rerr, serr)
		}
		if got > base+16<<20 {
			t.Errorf("%s: reading it allocated %d MB, the intact file %d MB", c.name, got>>20, base>>20)
		}
	}
}

// allocated is how many bytes fn allocated on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A page header's sizes and counts are checked against the chunk and the
// caps before parquet-go allocates for them.
func TestCheckPage(t *testing.T) {
	ok := format.PageHeader{Type: format.DataPage, UncompressedPageSize: 4 << 20, CompressedPageSize: 1000}
	ok.DataPageHeader.Valid, ok.DataPageHeader.V.NumValues = true, 1<<20
	if err := checkPage(&ok, 1000); err != nil {
		t.Fatalf("a page within bounds: %v", err)
	}
	for name, change := range map[string]func(h *format.PageHeader){
		"compressed over the chunk": func(h *format.PageHeader) { h.CompressedPageSize = 1001 },
		"compressed negative":       func(h *format.PageHeader) { h.CompressedPageSize = -1 },
		"uncompressed over the cap": func(h *format.PageHeader) { h.UncompressedPageSize = maxPageBytes + 1 },
		"values over the cap":       func(h *format.PageHeader) { h.DataPageHeader.V.NumValues = maxPageValues + 1 },
		"v2 levels over the page": func(h *format.PageHeader) {
			h.DataPageHeader.Valid = false
			h.DataPageHeaderV2.Valid = true
			h.DataPageHeaderV2.V.DefinitionLevelsByteLength = 1001
		},
	} {
		h := ok
		change(&h)
		if err := checkPage(&h, 1000); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The decompressed size a page's data states (a zstd frame's content size,
// snappy's leading length) may not exceed the page's uncompressed size.
func TestCheckFrames(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.Repeat([]byte("vllm:num_requests_running 3\n"), 40)
	frame := enc.EncodeAll(src, nil)
	// A frame header stating 2 GB: single segment, a 4-byte content size.
	lie := binary.LittleEndian.AppendUint32([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xa0}, 1<<31)
	skippable := binary.LittleEndian.AppendUint32([]byte{0x50, 0x2a, 0x4d, 0x18}, 3)
	snappy := binary.AppendUvarint(nil, 1<<31)
	// A frame of incompressible bytes, longer than the 64 bytes read at
	// a time: its block is passed over, and what follows it is read.
	noise := make([]byte, len(src))
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	raw := enc.EncodeAll(noise, nil)
	cases := []struct {
		name  string
		codec format.CompressionCodec
		data  []byte
		ok    bool
	}{
		{"zstd frame", format.Zstd, frame, true},
		{"zstd frame stating 2 GB", format.Zstd, lie, false},
		{"skippable frame, then one stating 2 GB", format.Zstd, slices.Concat(skippable, []byte("abc"), lie), false},
		{"a frame of noise", format.Zstd, raw, true},
		{"a frame of noise, then a frame", format.Zstd, slices.Concat(raw, frame), true},
		{"a frame of noise, then one stating 2 GB", format.Zstd, slices.Concat(raw, lie), false},
		{"a frame of noise cut short", format.Zstd, raw[:len(raw)-10], false},
		{"snappy stating 2 GB", format.Snappy, snappy, false},
		{"the same bytes uncompressed", format.Uncompressed, snappy, true},
	}
	for _, c := range cases {
		h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: int32(len(src)), CompressedPageSize: int32(len(c.data))}
		err := checkFrames(bytes.NewReader(c.data), c.codec, &h, 0, make([]byte, 64))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// The skim refuses a thrift struct whose lengths exceed its bytes, asks
// for more bytes when they may follow, and measures what it skims.
func TestSkim(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		room int64
		want error // nil: fine; errSkimShort; else any error
	}{
		{"empty struct", []byte{0}, 1, nil},
		{"i32 field, bool fields, string", []byte{0x15, 0x04, 0x11, 0x12, 0x18, 2, 'h', 'i', 0}, 9, nil},
		{"list of 3 i32", []byte{0x19, 0x35, 1, 2, 3, 0}, 6, nil},
		{"string longer than the room", []byte{0x18, 0x7f, 0}, 3, errRefused},
		{"string longer than the bytes read", []byte{0x18, 0x05, 'a'}, 100, errSkimShort},
		{"list of 16 M structs in 6 bytes", []byte{0x19, 0xfc, 0x80, 0x80, 0x80, 0x08, 0, 0}, 8, errRefused},
		{"map of 2^31 entries", []byte{0x1b, 0xff, 0xff, 0xff, 0xff, 0x07, 0x55, 0}, 8, errRefused},
		{"type 13", []byte{0x1d, 0}, 2, errRefused},
		{"nested 40 deep", append(bytes.Repeat([]byte{0x1c}, 40), make([]byte, 41)...), 81, errRefused},
	}
	for _, c := range cases {
		s := skim{b: c.b, room: c.room}
		err := s.structure(0)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == errSkimShort && !errors.Is(err, errSkimShort):
			t.Errorf("%s: %v, want a short read", c.name, err)
		case c.want == errRefused && (err == nil || errors.Is(err, errSkimShort)):
			t.Errorf("%s: %v, want an error", c.name, err)
		case c.want == nil && s.i != len(c.b):
			t.Errorf("%s: skimmed %d of %d bytes", c.name, s.i, len(c.b))
		}
	}
}

// errRefused is any error: a case that must be refused.
var errRefused = errors.New("refused")
