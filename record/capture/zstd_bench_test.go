package capture

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

var zstdSegment = flag.String("zstd.segment", "",
	"segment whose largest zstd page BenchmarkZstdPage decodes (default: the first of ../shared's real run a-baseline)")

// largestPage is the compressed bytes of the largest zstd data page of the
// segment at path (a V2 page's levels, stored uncompressed, cut off), and
// its uncompressed size.
func largestPage(tb testing.TB, path string) (src []byte, size int) {
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("no segment to read (%v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 4096)
	for _, rg := range pf.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			md := &cc.MetaData
			if md.Codec != format.Zstd {
				continue
			}
			pos := md.DataPageOffset
			if md.DictionaryPageOffset != 0 {
				pos = md.DictionaryPageOffset
			}
			stop := pos + md.TotalCompressedSize
			for pos < stop {
				var h format.PageHeader
				var n int
				h, n, buf, err = readPageHeader(f, pos, stop, buf)
				if err != nil {
					tb.Fatal(err)
				}
				data := pos + int64(n)
				pos = data + int64(h.CompressedPageSize)
				levels := int64(0)
				if v := h.DataPageHeaderV2; v.Valid {
					levels = int64(v.V.DefinitionLevelsByteLength + v.V.RepetitionLevelsByteLength)
					if v.V.IsCompressed.Valid && !v.V.IsCompressed.V {
						continue
					}
				}
				if u := int(int64(h.UncompressedPageSize) - levels); u > size {
					size = u
					src = make([]byte, int64(h.CompressedPageSize)-levels)
					if _, err := f.ReadAt(src, data+levels); err != nil {
						tb.Fatal(err)
					}
				}
			}
		}
	}
	if src == nil {
		tb.Skip("no zstd page")
	}
	return src, size
}

// BenchmarkZstdPage decodes a segment's largest page (what parquet-go's
// reader does for every page, in its decompress) four ways: through the
// codec the reader uses (a pooled decoder, a destination of the page's
// exact size); through one long-lived decoder into the exact size; the
// same into a destination with 256 KiB of spare capacity (klauspost's
// decoder chose its unchecked sequence loop by spare capacity, once); and
// with a new decoder each page (the pool emptied by a collection).
func BenchmarkZstdPage(b *testing.B) {
	path := *zstdSegment
	if path == "" {
		m, _ := filepath.Glob("../../../shared/real-runs/llamacpp-b4748/a-baseline/rec/*-000001.parquet")
		if len(m) == 0 {
			b.Skip("../shared's real runs are absent")
		}
		path = m[0]
	}
	src, size := largestPage(b, path)
	b.Logf("%s: page of %d bytes, %d compressed", filepath.Base(path), size, len(src))
	want, err := zstdDecode.Decode(make([]byte, size), src)
	if err != nil {
		b.Fatal(err)
	}
	long, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(false))
	if err != nil {
		b.Fatal(err)
	}
	defer long.Close()
	for _, c := range []struct {
		name   string
		spare  int
		decode func(dst []byte) ([]byte, error)
	}{
		{"codec", 0, func(dst []byte) ([]byte, error) { return zstdDecode.Decode(dst, src) }},
		{"long-lived", 0, func(dst []byte) ([]byte, error) { return long.DecodeAll(src, dst[:0]) }},
		{"long-lived-spare", 256 << 10, func(dst []byte) ([]byte, error) { return long.DecodeAll(src, dst[:0]) }},
		{"new-each", 0, func(dst []byte) ([]byte, error) {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
			if err != nil {
				return nil, err
			}
			defer d.Close()
			return d.DecodeAll(src, dst[:0])
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, size, size+c.spare)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				got, err := c.decode(dst)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != size {
					b.Fatalf("%d bytes, want %d", len(got), size)
				}
			}
			// CPU time is the figure other work on the machine does not
			// dilute (it still shares caches).
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			got, _ := c.decode(dst)
			if !slices.Equal(got, want) {
				b.Fatal("decoded differently")
			}
		})
	}
}

// processCPU is the process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
