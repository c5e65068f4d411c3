// Package capture owns the on-disk format of a recording: the Parquet schema
// of a scrape row, the append-only journal that makes the open segment
// crash-safe, segment rotation and recovery, the run manifest, and reading a
// run back. The recorder writes through it and the analyser reads through
// it; neither knows the other.
//
// A run folder holds, per recording session RUN:
//
//	RUN.manifest.json       what was recorded, how, and with which engines
//	RUN-000001.parquet      closed segments, one row per scrape attempt
//	RUN-000002.journal      the open segment's journal (only while recording or after a crash)
//
// Every *.parquet file is complete (footer written, fsynced, then renamed),
// so read_parquet('DIR/*.parquet') always opens.
package capture

import "github.com/llmrec/llmrec/record/expo"

// SchemaVersion is written into every segment's key/value metadata under
// the key "llmrec.schema_version". Bump it on any change to Scrape that a
// reader of the version before would misread; a new optional column is not
// one (an older reader does not read it, and a file without it reads as
// null: see Headers). Version 2 stores most bodies in body_delta, which a
// reader of version 1 would take for absent bodies; this package reads both.
const SchemaVersion = "2"

// readableVersion says whether this package reads segments and manifests
// of schema version v.
func readableVersion(v string) bool { return v == "1" || v == SchemaVersion }

// Outcome of one scrape attempt.
const (
	OutcomeOK         = "ok"          // 200 with a body that parsed
	OutcomeParseError = "parse_error" // 200, body kept byte-exact, parse failed
	OutcomeHTTPError  = "http_error"  // a status other than 200; body kept
	OutcomeError      = "error"       // no complete response: refused, timeout, body too large, ...
	OutcomeMissed     = "missed"      // the previous scrape of this target was still running at the tick
)

// EndpointMetrics is the Endpoint of the target's main /metrics capture.
const EndpointMetrics = "metrics"

// Scrape is one row: one scrape attempt of one endpoint of one target.
// Times are Unix nanoseconds derived from one wall-clock reading at the
// start of the run plus monotonic elapsed time, so a wall-clock step cannot
// reorder them. A time of 0 is written as null: the moment did not happen.
//
// Every column is zstd-compressed by the writer's codec (see zstdCodec),
// not by a tag: a tag's codec would override the writer's level.
type Scrape struct {
	RunID    string `parquet:"run_id,dict"`
	Target   string `parquet:"target,dict"`
	Engine   string `parquet:"engine,dict"`   // the configured engine hint, "" when none
	Endpoint string `parquet:"endpoint,dict"` // "metrics", or the extra endpoint's path
	URL      string `parquet:"url,dict"`      // credentials removed
	Seq      int64  `parquet:"seq,delta"`     // tick number k of this target and endpoint, from 0
	Outcome  string `parquet:"outcome,dict"`

	ScheduledNs int64 `parquet:"scheduled_ns,delta"`           // run start + k*interval
	StartNs     int64 `parquet:"start_ns,optional,delta"`      // request sent; null for a missed tick
	FirstByteNs int64 `parquet:"first_byte_ns,optional,delta"` // first response byte; null without response
	EndNs       int64 `parquet:"end_ns,optional,delta"`        // body read to the end or attempt abandoned

	Status          *int32  `parquet:"status,optional"`
	Error           *string `parquet:"error,optional,dict"`
	ContentType     *string `parquet:"content_type,optional,dict"`
	ContentEncoding *string `parquet:"content_encoding,optional,dict"`
	WireBytes       *int64  `parquet:"wire_bytes,optional"` // bytes on the wire, before decompression
	Body            []byte  `parquet:"body,optional"`       // exactly as received, after transport decompression
	ParseError      *string `parquet:"parse_error,optional"`

	Samples []Sample `parquet:"samples,list"`

	// Headers are the response's headers as a JSON object with sorted keys
	// (canonical names; a header sent twice has its values joined by ", "),
	// each value through redact.Header: the harmless ones in clear, every
	// other a digest that equal values share. Null without a response, and
	// in files recorded before the column existed. Last, so that the
	// columns before keep their places.
	Headers *string `parquet:"headers,optional"`

	// BodyDelta is the body as its lines' differences from the body of the
	// row before it (same target and endpoint, same row group), where Body
	// is then empty: see bodydelta.go. Readers of this package put the body
	// back in Body and leave this nil; files of schema version 1 lack it.
	BodyDelta *string `parquet:"body_delta,optional"`
}

// Sample is one parsed sample of a scrape's body. Its Parquet columns are
// declared on expo.Sample, the parser's own type, so parsing fills rows
// without a copy.
type Sample = expo.Sample

// Parse fills s.Samples and s.ParseError (and moves an ok outcome to
// parse_error) from s.Body. It is the one place a body becomes samples, used
// by the recorder and by journal recovery alike.
func Parse(s *Scrape) { ParseWith(s, nil) }

// Limits bound what parsing one page may cost (see expo.Limits).
type Limits = expo.Limits

// DefaultLimits hold a page of a million series (40 MB) to its raw body: it
// is stored unparsed, with a parse error that names the limit. At the
// limits a page parses into about 200 MB of parser objects for a moment
// and keeps 20 MB of samples plus its label sets (at most MaxLabelBytes).
// The largest engine pages seen hold a few thousand series.
var DefaultLimits = Limits{MaxSeries: 200_000, MaxLabelValueBytes: 16 << 10, MaxLabelBytes: 32 << 20}

// ParseWith is Parse with what the target's earlier pages left in in (see
// expo.Interner): the recorder keeps one per target endpoint.
func ParseWith(s *Scrape, in *expo.Interner) { ParseCapped(s, in, DefaultLimits) }

// ParseCapped is ParseWith with lim instead of DefaultLimits: a body over
// them keeps no sample and gets a parse error that names the limit.
func ParseCapped(s *Scrape, in *expo.Interner, lim Limits) {
	s.Samples = nil
	s.ParseError = nil
	// Only a complete 200 answer of the metrics endpoint is exposition text.
	if s.Endpoint != EndpointMetrics || s.Body == nil || (s.Outcome != OutcomeOK && s.Outcome != OutcomeParseError) {
		return
	}
	ct := ""
	if s.ContentType != nil {
		ct = *s.ContentType
	}
	err := lim.Check(s.Body)
	var ss []Sample
	if err == nil {
		ss, err = in.Parse(s.Body, ct)
	}
	if err != nil {
		msg := err.Error()
		s.ParseError = &msg
		s.Outcome = OutcomeParseError
		return
	}
	s.Outcome = OutcomeOK
	s.Samples = ss
}
