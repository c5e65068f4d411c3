package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// The seal ledger. Parquet checks little of what it reads: a flipped bit in
// a footer can change a row group's row count, and the file then reads
// without an error, short of rows. So every Parquet file written (a sealed
// segment, a recovered journal, a compacted range) is first recorded in an
// append-only ledger beside it, one JSON line per file:
//
//	RUN.seals   {"file":"RUN-000001.parquet","rows":30,"bytes":48213,"crc32c":2914411529}
//
// The line is written and fsynced before the file is renamed into place, so
// a file in place always has its line. Readers check a file against the
// ledger before reading it (size, CRC-32C of the whole file, the footer's
// row count) and count the rows they read against it; a file that differs
// is damaged and skipped. A file without a line (recorded before the
// ledger existed) is read as it is, unverified. A name written twice (a
// seal interrupted before its rename, then redone) has several lines: the
// file is verified by the one it matches.

// sealsSuffix names a run's ledger: RUN.seals.
const sealsSuffix = ".seals"

// Seal is one line of the ledger: a Parquet file as it was written.
type Seal struct {
	File   string `json:"file"` // base name
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	CRC32C uint32 `json:"crc32c"` // of the whole file
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged marks a file that is not what was written: it differs from its
// seal, or parquet-go could not make sense of it. Readers skip it.
var ErrDamaged = errors.New("damaged file")

// recordSeal appends the seal of tmp, about to be renamed to path, to the
// ledger of path's run, and fsyncs the ledger. It is the hook of
// encoder.write: every Parquet file passes through it before its rename.
func recordSeal(tmp, path string) error {
	s, err := sealOf(tmp)
	if err != nil {
		return fmt.Errorf("seal %s: %w", path, err)
	}
	s.File = filepath.Base(path)
	line, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("seal %s: %w", path, err)
	}
	ledger := filepath.Join(filepath.Dir(path), ledgerRun(s.File)+sealsSuffix)
	f, err := os.OpenFile(ledger, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("seal %s: %w", path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("seal %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("seal %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("seal %s: %w", path, err)
	}
	return nil
}

// ledgerRun is the run whose ledger records the file name: the run of a
// segment name, else the name without its extension.
func ledgerRun(name string) string {
	if s, ok := parseSegName(name); ok {
		return s.run
	}
	return strings.TrimSuffix(name, filepath.Ext(name))
}

// sealOf measures a complete Parquet file: its size, CRC-32C and the row
// count its footer states.
func sealOf(path string) (Seal, error) {
	f, err := os.Open(path)
	if err != nil {
		return Seal{}, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	if err != nil {
		return Seal{}, err
	}
	rows, err := footerRows(f, n)
	if err != nil {
		return Seal{}, err
	}
	return Seal{Rows: rows, Bytes: n, CRC32C: h.Sum32()}, nil
}

// footerRows is the row count a Parquet file's footer states; the file's
// and its row groups' must agree.
func footerRows(r io.ReaderAt, size int64) (rows int64, err error) {
	rows, _, err = openedFooterRows(r, size)
	return rows, err
}

// openedFooterRows is footerRows that returns the footer it opened too, as
// openFooter opens it.
func openedFooterRows(r io.ReaderAt, size int64) (rows int64, ft *footer, err error) {
	defer recoverDamage(&err)
	pf, n, err := openFooter(r, size)
	if err != nil {
		return 0, nil, err
	}
	var sum int64
	for _, rg := range pf.RowGroups() {
		sum += rg.NumRows()
	}
	if sum != pf.NumRows() {
		return 0, nil, fmt.Errorf("%w: the footer states %d rows, its row groups %d", ErrDamaged, pf.NumRows(), sum)
	}
	return sum, &footer{pf, n}, nil
}

// footer is a file's footer opened and checked (openFooter): the file,
// and the footer's length.
type footer struct {
	pf *parquet.File
	n  int64
}

// CheckFooter refuses a footer whose column chunks name a codec llmrec never
// writes (it writes zstd; tests and tools write uncompressed, snappy or
// gzip pages). A flipped bit in a chunk's codec turns zstd pages into
// LZ4_RAW ones, and parquet-go's LZ4 decoder doubles its buffer on every
// failure until the process runs out of memory: a fatal error no recover
// catches. OpenParquet calls it after opening the footer, before the pages.
func CheckFooter(pf *parquet.File) (err error) {
	defer recoverDamage(&err)
	for g, rg := range pf.Metadata().RowGroups {
		for i, cc := range rg.Columns {
			switch c := cc.MetaData.Codec; c {
			case format.Uncompressed, format.Snappy, format.Gzip, format.Zstd:
			default:
				return fmt.Errorf("%w: row group %d, column %s: codec %v, which llmrec never writes", ErrDamaged, g, colName(pf, i), c)
			}
		}
	}
	return nil
}

// recoverDamage turns a panic of parquet-go over a file's bytes into an
// error: deferred by every function that hands file data to parquet-go, and
// by nothing that calls back into a reader's own code.
func recoverDamage(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: parquet-go panicked: %v", ErrDamaged, p)
	}
}

// Seals is what a folder's ledgers say: the seals of each file name, in
// the order written.
type Seals map[string][]Seal

// ReadSeals reads the ledgers (*.seals) of a run folder. A last line cut
// by a crash is dropped: its file was never renamed into place. Any other
// line that does not decode is damage: the seals read are returned all the
// same, with an error naming each bad line (the files it sealed read as
// unverified).
func ReadSeals(dir string) (Seals, error) {
	names, err := folderNames(dir)
	if err != nil {
		return nil, err
	}
	out := Seals{}
	var bad []error
	for _, name := range names {
		// Only a run's own ledger: another name is a foreign file.
		if n, ok := parseOwnName(name); !ok || n.kind != kindSeals {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, fmt.Errorf("read seals: %w", err))
			continue
		}
		// A crash inside the append leaves a last line without its
		// newline; no file in place depends on it.
		if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
			data = data[:i+1]
		}
		for ln, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			if len(data) == 0 {
				break
			}
			var s Seal
			if err := json.Unmarshal(line, &s); err != nil || s.File == "" {
				bad = append(bad, fmt.Errorf("%s:%d: %w: not a seal: %.80q", filepath.Join(dir, name), ln+1, ErrDamaged, line))
				continue
			}
			out[s.File] = append(out[s.File], s)
		}
	}
	return out, errors.Join(bad...)
}

// Verify checks the file at path against its seals: its size and CRC-32C,
// and the row count its footer states. It returns the seal the file
// matches, or nil when the ledger has none for its name (an unverified
// file, recorded before the ledger). A file that differs is an error
// wrapping ErrDamaged that names it and says how.
func (ss Seals) Verify(path string) (*Seal, error) {
	all := ss[filepath.Base(path)]
	if len(all) == 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify segment: %w", err)
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("verify segment %s: %w", path, err)
	}
	s, _, err := matchSeal(all, path, n, h.Sum32(), f)
	return s, err
}

// matchSeal is the seal of all that a file of n bytes and CRC-32C sum,
// read through r, matches, as Verify says it, and the file's footer it
// opened for the row count.
func matchSeal(all []Seal, path string, n int64, sum uint32, r io.ReaderAt) (*Seal, *footer, error) {
	var s *Seal
	for i := range all {
		if all[i].Bytes == n && all[i].CRC32C == sum {
			s = &all[i]
		}
	}
	if s == nil {
		last := all[len(all)-1]
		if last.Bytes != n {
			return nil, nil, fmt.Errorf("segment %s: %w: %d bytes, sealed with %d", path, ErrDamaged, n, last.Bytes)
		}
		return nil, nil, fmt.Errorf("segment %s: %w: CRC-32C %08x, sealed with %08x", path, ErrDamaged, sum, last.CRC32C)
	}
	rows, ft, err := openedFooterRows(r, n)
	if err != nil {
		return nil, nil, fmt.Errorf("segment %s: %w", path, err)
	}
	if rows != s.Rows {
		return nil, nil, fmt.Errorf("segment %s: %w: the footer states %d rows, sealed with %d", path, ErrDamaged, rows, s.Rows)
	}
	return s, ft, nil
}

// CheckRows compares the rows a reader got from a sealed file with its
// seal; s nil (an unverified file) always agrees.
func (s *Seal) CheckRows(path string, got int64) error {
	if s == nil || got == s.Rows {
		return nil
	}
	return fmt.Errorf("segment %s: %w: %d rows read, sealed with %d", path, ErrDamaged, got, s.Rows)
}
