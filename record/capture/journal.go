package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/llmrec/llmrec/record/expo"
)

// The journal is the open segment's write-ahead log: one framed record per
// scrape, appended with a single write(2) as soon as the scrape ends, so a
// SIGKILL at any moment loses at most the record being written. A record is
//
//	uint32 payload length | uint32 CRC-32C of payload | payload
//
// and the payload holds the row's fields without samples: samples are a
// pure function of the body and are parsed again on recovery. A damaged
// record is skipped to the next one that checks out; a damaged last record
// is a torn tail (see scanJournal).

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

// readAt reads back the record that append wrote at at, without samples
// (the caller parses it under its limits).
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
	s, err := decodeRecord(payload)
	if err != nil {
		return Scrape{}, fmt.Errorf("read journal %s at %d: %w", j.f.Name(), at, err)
	}
	return s, nil
}

func (j *journal) close() error { return j.f.Close() }

// readJournal returns the records of a journal with their samples parsed.
// tail is the size of a torn or damaged last record, dropped (see
// scanJournal).
func readJournal(path string) (rows []Scrape, tail int64, err error) {
	rows, st, err := scanJournal(path)
	parseRows(rows)
	return rows, st.Torn, err
}

// parseRows parses the rows read from a journal. A journal holds many
// targets' pages of a few shapes, in the order they came: each row is read
// against the shapes of the rows before it (expo.Shapes), a page of a new
// shape parsed in full, with the memory of one Interner at a time. Parsed
// each through expfmt in full, a crashed thousand-target recorder's journal
// took seconds a thousand rows.
func parseRows(rows []Scrape) {
	var sh expo.Shapes
	for i := range rows {
		ParseWith(&rows[i], &expo.Interner{Shapes: &sh})
	}
}

// journalStats is what reading a journal found besides its rows.
type journalStats struct {
	// Torn is the size of a damaged or incomplete last record (the record
	// being written at a crash): no good record follows it.
	Torn int64
	// Skipped is the bytes of damaged records between good ones, in
	// Damaged places: reading resumed at the next good record.
	Skipped int64
	Damaged int
	// Duplicates counts records identical to one before them (same run,
	// target, endpoint and seq, same content): dropped.
	Duplicates int
	// Conflicts names the (target, endpoint, seq) seen twice with different
	// content: both rows are kept.
	Conflicts []string
}

// scanJournal reads a journal's records without parsing their samples. A
// journal that does not start with the magic is an error; nothing in its
// records is. A record that does not check out (a length past the end or
// over maxRecord, a CRC mismatch, a payload that does not decode) is damage:
// reading resumes at the next offset where a whole record checks out, and
// the bytes in between are counted as skipped; with no good record after
// it, the damage is a torn tail. The rows' bodies share the file's memory.
func scanJournal(path string) ([]Scrape, journalStats, error) {
	data, hole, err := readJournalData(path)
	if err != nil {
		return nil, journalStats{}, fmt.Errorf("read journal: %w", err)
	}
	rows, st, err := parseJournal(path, data)
	st.Torn += hole
	return rows, st, err
}

// seekHole is lseek's SEEK_HOLE: the next offset that holds no data.
const seekHole = 4

// readJournalData reads a journal's data up to its first hole, and returns
// how many bytes past it the file states (counted as a torn tail). A
// journal is appended with write(2) and has no hole; a sparse file whose
// size states 8 GiB over 12 KB of data was read whole (and ran out of
// memory). A file system that cannot say where holes are reads as data
// only.
func readJournalData(path string) (data []byte, hole int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	end := st.Size()
	if h, err := f.Seek(0, seekHole); err == nil && h < end {
		end = h
	}
	data = make([]byte, end)
	n, err := io.ReadFull(io.NewSectionReader(f, 0, end), data)
	// A journal that shrank since (a seal removed it, a test cut it) is
	// read as far as it goes.
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return data[:n], st.Size() - end, nil
}

// parseJournal reads the journal data read from path (see scanJournal).
func parseJournal(path string, data []byte) ([]Scrape, journalStats, error) {
	var st journalStats
	if len(data) < len(journalMagic) && journalMagic[:len(data)] == string(data) {
		// Killed before the magic was written: an empty journal.
		return nil, st, nil
	}
	if len(data) < len(journalMagic) || string(data[:len(journalMagic)]) != journalMagic {
		return nil, st, fmt.Errorf("journal %s: bad magic %q, want %q", path, data[:min(len(data), len(journalMagic))], journalMagic)
	}
	// Every record's payload starts with its run id: where to look for the
	// next good record after damage.
	var prefix []byte
	if s, ok := parseSegName(filepath.Base(path)); ok {
		prefix = runPrefix(s.run)
	}
	type key struct {
		run, target, endpoint string
		seq                   int64
	}
	seen := map[key][]byte{}
	var rows []Scrape
	for pos := len(journalMagic); pos < len(data); {
		s, n, ok := frameAt(data, pos)
		if !ok {
			next := resync(data, pos+1, prefix)
			if next < 0 {
				st.Torn = int64(len(data) - pos)
				break
			}
			st.Skipped += int64(next - pos)
			st.Damaged++
			pos = next
			continue
		}
		payload := data[pos+8 : pos+n]
		pos += n
		prefix = runPrefix(s.RunID)
		k := key{s.RunID, s.Target, s.Endpoint, s.Seq}
		if prev, ok := seen[k]; ok {
			if bytes.Equal(prev, payload) {
				st.Duplicates++
				continue
			}
			st.Conflicts = append(st.Conflicts, fmt.Sprintf("target %q endpoint %q seq %d", s.Target, s.Endpoint, s.Seq))
		} else {
			seen[k] = payload
		}
		rows = append(rows, s)
	}
	return rows, st, nil
}

// runPrefix is how a record's payload starts: its run id as a string.
func runPrefix(run string) []byte { return putString(nil, run) }

// frameAt decodes the record at data[pos:]: its row and its size with the
// header; ok is false when there is no whole, checked, decodable record.
func frameAt(data []byte, pos int) (s Scrape, n int, ok bool) {
	if len(data)-pos < 8 {
		return Scrape{}, 0, false
	}
	size := binary.LittleEndian.Uint32(data[pos : pos+4])
	sum := binary.LittleEndian.Uint32(data[pos+4 : pos+8])
	if size > maxRecord || uint64(size) > uint64(len(data)-pos-8) {
		return Scrape{}, 0, false
	}
	payload := data[pos+8 : pos+8+int(size)]
	if crc32Sum(payload) != sum {
		return Scrape{}, 0, false
	}
	s, err := decodeRecord(payload)
	if err != nil {
		return Scrape{}, 0, false
	}
	return s, 8 + int(size), true
}

// resync finds the first offset at or after from where a whole record
// checks out, or -1. With the run id a payload starts with, it looks only
// where that run id is; without, at every offset.
func resync(data []byte, from int, prefix []byte) int {
	if len(prefix) == 0 {
		for h := from; h+8 <= len(data); h++ {
			if _, _, ok := frameAt(data, h); ok {
				return h
			}
		}
		return -1
	}
	for at := from + 8; at < len(data); {
		i := bytes.Index(data[at:], prefix)
		if i < 0 {
			return -1
		}
		h := at + i - 8
		if _, _, ok := frameAt(data, h); ok {
			return h
		}
		at += i + 1
	}
	return -1
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
	// The headers came after the rest: a record without them is an older
	// one's, and reads as null.
	if s.Headers != nil {
		b = putOptString(b, s.Headers)
	}
	return b
}

var (
	errShort    = errors.New("record too short")
	errPresence = errors.New("presence byte neither 0 nor 1")
	errStatus   = errors.New("status out of range")
)

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
	if p > 1 {
		d.err = errPresence
	}
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

// decodeRecord decodes a record, the samples left unparsed. It is strict
// (a presence byte is 0 or 1, a status fits in 32 bits, nothing trails), so
// damage that the CRC missed is not taken for a row.
func decodeRecord(p []byte) (Scrape, error) {
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
		v := d.varint()
		if v < math.MinInt32 || v > math.MaxInt32 {
			return Scrape{}, errStatus
		}
		st := int32(v)
		s.Status = &st
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
	// Headers follow only when present: a 0 there is no record's.
	if d.err == nil && len(d.b) > 0 {
		if s.Headers = d.optString(); s.Headers == nil && d.err == nil {
			d.err = errPresence
		}
	}
	if d.err != nil {
		return Scrape{}, d.err
	}
	if len(d.b) != 0 {
		return Scrape{}, fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return s, nil
}

func crc32Sum(p []byte) uint32 { return crc32.Checksum(p, crcTable) }
