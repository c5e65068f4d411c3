package capture

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// zstdCodec is the zstd codec of the Parquet files written here. It differs
// from parquet-go's in two ways, both about memory, which costs time here:
// its encoder lives as long as the process, where parquet-go's sits in a
// sync.Pool that garbage collections empty, so each merged file allocated
// and faulted in a fresh 16 MB history; and its window is zstdWindow, not
// 8 MB: a page holds the consecutive bodies of a target, and a body's
// closest match is the body before it (measured: merged files come out
// slightly smaller than with the 8 MB window).
type zstdCodec struct {
	level zstd.EncoderLevel
	once  sync.Once
	enc   *zstd.Encoder
	err   error
}

// zstdWindow is the encoders' window: far more than the largest body
// seen (TGI's 99 KB), far less than the default history of 8 MB.
const zstdWindow = 1 << 20

var (
	// zstdFast writes one-minute segments that compaction will merge.
	zstdFast = &zstdCodec{level: zstd.SpeedFastest}
	// zstdBetter writes every file that stays.
	zstdBetter = &zstdCodec{level: zstd.SpeedBetterCompression}
	// zstdDecode decodes; nothing here reads through a writer's codec.
	zstdDecode = &pqzstd.Codec{}
)

var _ compress.Codec = (*zstdCodec)(nil)

func (c *zstdCodec) String() string { return "ZSTD" }

func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

// Encode is safe for concurrent use; calls take turns on the one encoder.
func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	c.once.Do(func() {
		c.enc, c.err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(c.level),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(zstdWindow),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false),
		)
	})
	if c.err != nil {
		return dst[:0], c.err
	}
	return c.enc.EncodeAll(src, dst[:0]), nil
}

func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) { return zstdDecode.Decode(dst, src) }
