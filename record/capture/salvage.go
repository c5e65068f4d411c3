package capture

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
)

// Salvage of headers. A writer before MaxHeaderBytes counted no response
// headers: one target that sent megabytes of them a scrape made a headers
// page over MaxPageBytes, which every reader refuses, and with it every
// row of every target in that segment. SalvageHeaders rewrites such a
// segment without its headers column's values: every row comes back,
// every other column as it was; the headers of a row that had an answer
// become HeadersLost alone (a row without one has none).

// HeadersLost is the key of the headers a row has after SalvageHeaders
// dropped them (see HeadersOverCap for why it is no header's name).
const HeadersLost = "llmrec: headers lost"

// headersLostNote is the headers column's value of a row whose headers
// SalvageHeaders dropped.
var headersLostNote = "{" + jsonString(HeadersLost) + ":" + jsonString(
	fmt.Sprintf("dropped by llmrec repair: the segment's headers page was over the readers' page cap (%d bytes)", MaxPageBytes)) + "}"

// SalvageHeaders rewrites each segment of dir that every reader refuses
// only for its headers column (a page over the cap), as above, and
// returns what it did, one Recovery a file. A segment that reads, one
// damaged otherwise, one that differs from its seal and one of a run a
// live writer holds are left as they are. The rewritten file is sealed as
// every file is, before it replaces the old one: a crash leaves one or
// the other.
func SalvageHeaders(dir string) ([]Recovery, error) {
	names, err := folderNames(dir)
	if err != nil {
		return nil, err
	}
	live := liveRuns(dir, names)
	cov := covered(names)
	seals, _ := ReadSeals(dir) // a bad line leaves its file unverified
	var out []Recovery
	for _, name := range names {
		n, ok := parseOwnName(name)
		if !ok || n.kind != kindSegment || cov[name] || live[n.seg.run] {
			continue
		}
		path := filepath.Join(dir, name)
		seal, err := seals.Verify(path)
		if err != nil || !headersOnly(path) {
			continue
		}
		rows, lost, err := salvage(path, seal)
		if err != nil {
			return out, err
		}
		out = append(out, Recovery{Segment: name, Rows: int(rows),
			Note: fmt.Sprintf("headers page over the readers' cap: %d rows rewritten, every column but the headers kept; the headers of %d answered rows dropped and marked %q", rows, lost, HeadersLost)})
	}
	return out, nil
}

// headersOnly reports whether the segment at path is refused when opened,
// and opens when its headers column is not looked at.
func headersOnly(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	if _, err := openCapture(f, st.Size()); err == nil {
		return false
	}
	_, err = openCaptureWith(f, st.Size(), openOpts{skip: columns[cHeaders]})
	return err == nil
}

// salvage rewrites the segment at path (sealed as seal, nil when not)
// without its headers; it returns the rows written and those whose
// headers were dropped. The rows are read and written mergeBatch at a
// time, through the one reader, its headers column never read.
func salvage(path string, seal *Seal) (rows, lost int64, err error) {
	r := NewColumnReader(NewStrings())
	r.whole, r.noHeaders = true, true
	var e encoder
	_, err = e.write(path, func(pw *parquet.GenericWriter[Scrape]) error {
		batch := make([]Scrape, 0, mergeBatch)
		flush := func() error {
			_, err := pw.Write(batch)
			batch = batch[:0]
			return err
		}
		err := r.read(path, func(w *Row) error {
			var s Scrape
			r.scrape(w, &s)
			// Only an answer has headers.
			if s.FirstByteNs != 0 {
				s.Headers = &headersLostNote
				lost++
			}
			rows++
			if batch = append(batch, s); len(batch) == cap(batch) {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err == nil {
			err = seal.CheckRows(path, rows)
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("salvage headers: %w", err)
	}
	return rows, lost, nil
}
