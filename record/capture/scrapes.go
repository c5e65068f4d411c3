package capture

import (
	"errors"
	"iter"
)

// A whole row of a segment is read by the same column reader that analyze
// replays a recording with (ColumnReader), with every column: there is one
// decoder of the capture format, with one set of checks, whatever a
// command reads a segment for.

// Omit names columns a read of whole rows leaves out (ReadScrapes): they
// read as null (no body, no headers) or empty (no samples, no help text).
type Omit uint8

const (
	// OmitBody leaves out the bodies, the bulk of a segment.
	OmitBody Omit = 1 << iota
	// OmitHeaders leaves out the response headers.
	OmitHeaders
	// OmitSamples leaves out the parsed samples (their help text too).
	OmitSamples
	// OmitHelp leaves out the samples' help text, their longest string.
	OmitHelp
)

// ReadScrapes calls fn with each row of the segment at path as a Scrape,
// without the columns in omit. Each row is fn's to keep: nothing in it is
// reused. Errors are those of ColumnReader.Read: they name the file, the
// row group, the row and the column; rows before the error have been
// delivered. An error of fn stops the read and is returned as it is.
func ReadScrapes(path string, omit Omit, fn func(*Scrape) error) error {
	r := NewColumnReader(NewStrings())
	r.whole, r.omit, r.Headers = true, omit, omit&OmitHeaders == 0
	return r.read(path, func(w *Row) error {
		var s Scrape
		r.scrape(w, &s)
		return fn(&s)
	})
}

// ReadSegment reads every row of a segment, every column: ReadScrapes
// with nothing omitted. (Check a file against its seal first, with
// Seals.Verify, to read a damaged file not at all.)
func ReadSegment(path string, fn func(*Scrape) error) error {
	return ReadScrapes(path, 0, fn)
}

// Scrapes is ReadScrapes as an iterator; the read's error, if any, is the
// last pair.
func Scrapes(path string, omit Omit) iter.Seq2[*Scrape, error] {
	return func(yield func(*Scrape, error) bool) {
		errStop := errors.New("stopped")
		err := ReadScrapes(path, omit, func(s *Scrape) error {
			if !yield(s, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			yield(nil, err)
		}
	}
}

// scrape fills s from the whole row w, in memory of its own.
func (r *ColumnReader) scrape(w *Row, s *Scrape) {
	t, x := r.Tab, &w.Rest
	str := func(id int32) string {
		if id < 0 {
			return ""
		}
		return t.Str(id)
	}
	opt := func(id int32) *string {
		if id < 0 {
			return nil
		}
		v := t.Str(id)
		return &v
	}
	*s = Scrape{RunID: t.Str(w.Run), Target: t.Str(w.Target), Engine: t.Str(w.Engine), Endpoint: t.Str(w.Endpoint),
		URL: str(x.URL), Seq: w.Seq, Outcome: t.Str(w.Outcome), ScheduledNs: w.Scheduled, StartNs: w.Start,
		FirstByteNs: w.FirstByte, EndNs: w.End, Error: opt(w.Err), ContentType: opt(x.ContentType),
		ContentEncoding: opt(x.ContentEnc)}
	if x.Status >= 0 {
		v := x.Status
		s.Status = &v
	}
	if x.WireBytes >= 0 {
		v := x.WireBytes
		s.WireBytes = &v
	}
	if !x.BodyNull {
		s.Body = append(make([]byte, 0, len(w.Body)), w.Body...)
	}
	if !x.ParseErrorNull {
		v := string(x.ParseError)
		s.ParseError = &v
	}
	if w.Headers != nil {
		v := string(w.Headers)
		s.Headers = &v
	}
	if len(w.Name) == 0 {
		return
	}
	s.Samples = make([]Sample, len(w.Name))
	for i := range s.Samples {
		v := &s.Samples[i]
		v.Name, v.Labels, v.Value = t.Str(w.Name[i]), t.Str(w.Labels[i]), w.Value[i]
		if i < len(w.Family) {
			v.Family, v.Type = t.Str(w.Family[i]), t.Str(w.Type[i])
		}
		if i < len(x.Help) {
			v.Help = t.Str(x.Help[i])
		}
		if i < len(x.Stamped) && x.Stamped[i] {
			ts := x.Stamp[i]
			v.TimestampMs = &ts
		}
	}
}
