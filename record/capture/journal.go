package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The journal is the open segment's write-ahead log: one framed record per
// scrape, appended with a single write(2) as soon as the scrape ends, so a
// SIGKILL at any moment loses at most the record being written. A record is
//
//	uint32 payload length | uint32 CRC-32C of payload | payload
//
// and the payload holds the row's fields without samples: samples are a
// pure function of the body and are parsed again on recovery. A torn or
// corrupt tail ends the journal; everything before it is kept.

const journalMagic = "LLMRECJ1"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// maxRecord bounds a journal record so a corrupt length cannot ask for an
// absurd allocation: the body cap plus room for the other fields.
const maxRecord = 1 << 30

type journal struct {
	f    *os.File
	buf  []byte
	size int64 // bytes written: where the next record goes
}

func createJournal(path string) (*journal, error) {
	// Read as well as written: a seal reads back the rows whose bodies the
	// writer let go of (see Writer.Append).
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if _, err := f.Write([]byte(journalMagic)); err != nil {
		f.Close()
		return nil, fmt.Errorf("write journal %s: %w", path, err)
	}
	return &journal{f: f, size: int64(len(journalMagic))}, nil
}

func (j *journal) append(s *Scrape) error {
	_, err := j.appendAt(s)
	return err
}

// appendAt writes s as one record and returns where the record starts.
func (j *journal) appendAt(s *Scrape) (int64, error) {
	j.buf = j.buf[:0]
	j.buf = append(j.buf, 0, 0, 0, 0, 0, 0, 0, 0)
	j.buf = encodeScrape(j.buf, s)
	payload := j.buf[8:]
	binary.LittleEndian.PutUint32(j.buf[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(j.buf[4:8], crc32Sum(payload))
	at := j.size
	n, err := j.f.Write(j.buf)
	j.size += int64(n)
	if err != nil {
		return at, fmt.Errorf("write journal %s: %w", j.f.Name(), err)
	}
	if cap(j.buf) > 1<<20 {
		j.buf = nil // a huge body's buffer is not kept for the next row
	}
	return at, nil
}

// readAt reads back the record that append wrote at at.
func (j *journal) readAt(at int64) (Scrape, error) {
	var hdr [8]byte
	if _, err := j.f.ReadAt(hdr[:], at); err != nil {
		return Scrape{}, fmt.Errorf("read journal %s at %d: %w", j.f.Name(), at, err)
	}
	payload := make([]byte, binary.LittleEndian.Uint32(hdr[0:4]))
	if _, err := j.f.ReadAt(payload, at+8); err != nil {
		return Scrape{}, fmt.Errorf("read journal %s at %d: %w", j.f.Name(), at, err)
	}
	if crc32Sum(payload) != binary.LittleEndian.Uint32(hdr[4:8]) {
		return Scrape{}, fmt.Errorf("read journal %s at %d: checksum mismatch", j.f.Name(), at)
	}
	s, err := decodeScrape(payload)
	if err != nil {
		return Scrape{}, fmt.Errorf("read journal %s at %d: %w", j.f.Name(), at, err)
	}
	return s, nil
}

func (j *journal) close() error { return j.f.Close() }

// readJournal returns the complete records of a journal. A torn tail (the
// record being written at a crash) is not an error; tail reports whether one
// was dropped and how many bytes it had.
func readJournal(path string) (rows []Scrape, tail int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(journalMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		// Killed before the magic was written: an empty journal.
		return nil, 0, nil
	}
	if string(magic) != journalMagic {
		return nil, 0, fmt.Errorf("journal %s: bad magic %q", path, magic)
	}
	var hdr [8]byte
	for {
		n, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			return rows, 0, nil
		}
		if err != nil {
			return rows, int64(n), nil
		}
		size := binary.LittleEndian.Uint32(hdr[0:4])
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		if size > maxRecord {
			return rows, rest(r) + 8, nil
		}
		payload := make([]byte, size)
		if m, err := io.ReadFull(r, payload); err != nil {
			return rows, int64(m) + 8, nil
		}
		if crc32Sum(payload) != sum {
			return rows, rest(r) + 8 + int64(size), nil
		}
		s, err := decodeScrape(payload)
		if err != nil {
			return rows, 0, fmt.Errorf("journal %s record %d: %w", path, len(rows)+1, err)
		}
		rows = append(rows, s)
	}
}

func rest(r io.Reader) int64 {
	n, _ := io.Copy(io.Discard, r)
	return n
}

// Field encoding: strings and bytes as uvarint length + bytes, integers as
// varints, optional values behind a presence byte.

func putString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func putBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func putOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return putString(append(b, 1), *s)
}

func putOptInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, 0)
	}
	return binary.AppendVarint(append(b, 1), *v)
}

func encodeScrape(b []byte, s *Scrape) []byte {
	b = putString(b, s.RunID)
	b = putString(b, s.Target)
	b = putString(b, s.Engine)
	b = putString(b, s.Endpoint)
	b = putString(b, s.URL)
	b = binary.AppendVarint(b, s.Seq)
	b = putString(b, s.Outcome)
	b = binary.AppendVarint(b, s.ScheduledNs)
	b = binary.AppendVarint(b, s.StartNs)
	b = binary.AppendVarint(b, s.FirstByteNs)
	b = binary.AppendVarint(b, s.EndNs)
	if s.Status == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendVarint(append(b, 1), int64(*s.Status))
	}
	b = putOptString(b, s.Error)
	b = putOptString(b, s.ContentType)
	b = putOptString(b, s.ContentEncoding)
	b = putOptInt(b, s.WireBytes)
	if s.Body == nil {
		b = append(b, 0)
	} else {
		b = putBytes(append(b, 1), s.Body)
	}
	return b
}

var errShort = errors.New("record too short")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) present() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 {
		d.err = errShort
		return false
	}
	p := d.b[0]
	d.b = d.b[1:]
	return p == 1
}

func (d *decoder) optString() *string {
	if !d.present() {
		return nil
	}
	s := string(d.bytes())
	return &s
}

func (d *decoder) optInt() *int64 {
	if !d.present() {
		return nil
	}
	v := d.varint()
	return &v
}

func decodeScrape(p []byte) (Scrape, error) {
	d := &decoder{b: p}
	var s Scrape
	s.RunID = string(d.bytes())
	s.Target = string(d.bytes())
	s.Engine = string(d.bytes())
	s.Endpoint = string(d.bytes())
	s.URL = string(d.bytes())
	s.Seq = d.varint()
	s.Outcome = string(d.bytes())
	s.ScheduledNs = d.varint()
	s.StartNs = d.varint()
	s.FirstByteNs = d.varint()
	s.EndNs = d.varint()
	if d.present() {
		v := int32(d.varint())
		s.Status = &v
	}
	s.Error = d.optString()
	s.ContentType = d.optString()
	s.ContentEncoding = d.optString()
	s.WireBytes = d.optInt()
	if d.present() {
		s.Body = d.bytes()
		if s.Body == nil && d.err == nil {
			s.Body = []byte{}
		}
	}
	if d.err != nil {
		return Scrape{}, d.err
	}
	if len(d.b) != 0 {
		return Scrape{}, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	Parse(&s)
	return s, nil
}

func crc32Sum(p []byte) uint32 { return crc32.Checksum(p, crcTable) }
