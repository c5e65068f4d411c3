package capture

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
)

// JournalCache keeps what parsing the records of live journals gave, so
// that a reader that reads the same journals again and again while they
// grow (llmrec top) parses only the records it has not seen: the rows it
// returns are the rows ReadLive returns. Its memory is one journal's
// samples per journal read last; a journal not read any more is dropped
// at the next Forget.
type JournalCache struct {
	mu    sync.Mutex
	paths map[string]map[journalKey]parsed
}

// journalKey is a record's identity and the inputs of its parse: the same
// key is the same parse.
type journalKey struct {
	run, target, endpoint, outcome, contentType string
	seq                                         int64
	size                                        int
	sum                                         uint32
}

type parsed struct {
	samples    []Sample
	parseError *string
	outcome    string
}

// NewJournalCache is an empty cache.
func NewJournalCache() *JournalCache {
	return &JournalCache{paths: map[string]map[journalKey]parsed{}}
}

// ReadLive is [ReadLive] through the cache: each record is scanned as
// ReadLive scans it, and parsed only when the cache has no parse of the
// same record (run, target, endpoint, seq, outcome, content type and
// body's size and CRC-32C). A nil cache is ReadLive.
func (c *JournalCache) ReadLive(path string) ([]Scrape, error) {
	if c == nil {
		return ReadLive(path)
	}
	rows, _, err := scanJournal(path)
	c.mu.Lock()
	old := c.paths[path]
	c.mu.Unlock()
	now := make(map[journalKey]parsed, len(rows))
	for i := range rows {
		s := &rows[i]
		k := journalKey{run: s.RunID, target: s.Target, endpoint: s.Endpoint, outcome: s.Outcome, seq: s.Seq,
			size: len(s.Body), sum: crc32.Checksum(s.Body, crcTable)}
		if s.ContentType != nil {
			k.contentType = *s.ContentType
		}
		if p, ok := old[k]; ok {
			s.Samples, s.ParseError, s.Outcome = p.samples, p.parseError, p.outcome
		} else {
			Parse(s)
		}
		now[k] = parsed{s.Samples, s.ParseError, s.Outcome}
	}
	c.mu.Lock()
	c.paths[path] = now
	c.mu.Unlock()
	return rows, err
}

// Forget drops the parses of every journal but keep's: those no longer
// live (sealed, or gone).
func (c *JournalCache) Forget(keep []string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.paths {
		found := false
		for _, k := range keep {
			found = found || k == p
		}
		if !found {
			delete(c.paths, p)
		}
	}
}

// ReadJournalFrom reads the whole records of a journal from byte off on
// (0: from its start, checking its magic), parsed, and returns the offset
// after the last whole record: a reader that follows a live journal as it
// grows reads each record once. A record that does not check out ends the
// read there (a record being written reads whole later); unlike ReadLive
// it neither skips damage nor drops duplicates.
func ReadJournalFrom(path string, off int64) ([]Scrape, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, off, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, off, fmt.Errorf("read journal: %w", err)
	}
	if st.Size() <= off {
		return nil, off, nil
	}
	data := make([]byte, st.Size()-off)
	n, err := io.ReadFull(io.NewSectionReader(f, off, int64(len(data))), data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, off, fmt.Errorf("read journal %s: %w", path, err)
	}
	data = data[:n]
	pos := 0
	if off == 0 {
		// Killed before the magic was written: nothing yet.
		if len(data) < len(journalMagic) {
			return nil, 0, nil
		}
		if string(data[:len(journalMagic)]) != journalMagic {
			return nil, 0, fmt.Errorf("journal %s: bad magic %q, want %q", path, data[:len(journalMagic)], journalMagic)
		}
		pos = len(journalMagic)
	}
	var rows []Scrape
	for pos < len(data) {
		s, n, ok := frameAt(data, pos)
		if !ok {
			break
		}
		Parse(&s)
		rows = append(rows, s)
		pos += n
	}
	return rows, off + int64(pos), nil
}
