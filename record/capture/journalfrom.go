package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
)

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
