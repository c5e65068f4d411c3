package analyze

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/parquet-go/parquet-go"
)

// shippedSegment is a real merged segment, recorded by llmrec record
// (captures/findings): 120 s of two simulated engines.
const shippedSegment = "../captures/findings/run/20261202T125444Z-2ff2b5ba-000001_000002.parquet"

// rerecord writes the rows of the shipped segment again through the
// recorder's writer, in two one-minute segments merged into one sealed
// file, and returns the folder and the merged file.
func rerecord(t *testing.T) (dir, merged string) {
	t.Helper()
	var rows []capture.Scrape
	err := capture.ReadSegment(shippedSegment, func(s *capture.Scrape) error {
		c := *s
		c.Body = bytes.Clone(s.Body)
		c.Samples = slices.Clone(s.Samples)
		rows = append(rows, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	w, err := capture.NewWriter(dir, testRun, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(2)
	for i, r := range rows {
		r.RunID = testRun
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
		if i == len(rows)/2 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.CloseMerged(); err != nil { // Close leaves the pair unmerged
		t.Fatal(err)
	}
	merged = filepath.Join(dir, testRun+"-000001_000002.parquet")
	if _, err := os.Stat(merged); err != nil {
		t.Fatal(err)
	}
	return dir, merged
}

// groupRowsBit finds a bit of the footer of the Parquet file data whose
// flip changes the row count of its first row group by a little, the
// footer still parsing: what a reader without seals reads as fewer (or
// more) rows, silently.
func groupRowsBit(t *testing.T, data []byte) int {
	t.Helper()
	return rowsBit(t, data, func(n, want int64) bool { return n != want && n > want-8 && n < want+8 })
}

// fewerRowsBit finds a bit of the footer whose flip makes its first row
// group state fewer rows (by 16 at most): a reader stops short there.
func fewerRowsBit(t *testing.T, data []byte) int {
	t.Helper()
	return rowsBit(t, data, func(n, want int64) bool { return n < want && n >= want-16 })
}

// rowsBit finds the first bit of the footer of the Parquet file data
// whose flip makes its first row group's row count n, from want, such
// that ok(n, want), the footer still parsing.
func rowsBit(t *testing.T, data []byte, ok func(n, want int64) bool) int {
	t.Helper()
	rowsOf := func(b []byte) (n int64, ok bool) {
		defer func() { recover() }()
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		if err != nil || len(pf.RowGroups()) == 0 {
			return 0, false
		}
		return pf.RowGroups()[0].NumRows(), true
	}
	want, _ := rowsOf(data)
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	for bit := (len(data) - 8 - flen) * 8; bit < (len(data)-8)*8; bit++ {
		b := bytes.Clone(data)
		b[bit/8] ^= 1 << (bit % 8)
		if n, parsed := rowsOf(b); parsed && ok(n, want) {
			return bit
		}
	}
	t.Fatal("no bit of the footer changes the first row group's row count so")
	return 0
}

// Why item 5: one bit flipped in a merged file's footer used to be read as
// a row group of fewer rows, and analyze reported fewer polls, nothing
// else. Now the file differs from its seal: skipped whole, a problem named.
// The same for a seeded sample of the footer's other bits.
func TestFooterFlipIsNotASilentCount(t *testing.T) {
	dir, merged := rerecord(t)
	data, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	intact, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil || len(intact.Problems) != 0 {
		t.Fatalf("intact: %v, problems %+v", err, intact.Problems)
	}
	polls := func(res *Result) (n int) {
		for _, tg := range res.Targets {
			n += tg.Summary.Polls
		}
		return n
	}
	flen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	rng := rand.New(rand.NewPCG(5, 5))
	bits := []int{groupRowsBit(t, data)}
	for range 24 {
		bits = append(bits, (len(data)-8-flen)*8+rng.IntN((flen+8)*8))
	}
	for _, bit := range bits {
		b := bytes.Clone(data)
		b[bit/8] ^= 1 << (bit % 8)
		if err := os.WriteFile(merged, b, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Problems) == 0 {
			t.Errorf("bit %d flipped: no problem, %d polls (intact %d)", bit, polls(res), polls(intact))
			continue
		}
		p := res.Problems[0]
		if p.File != merged || p.Kind != ProblemSkipped || p.RowsRead != 0 || polls(res) != 0 {
			t.Errorf("bit %d flipped: problem %+v, %d polls; want the file skipped whole", bit, p, polls(res))
		}
	}
}

// A row group's count flipped in a file without a seal (recorded before
// seals, or its ledger lost) was read as fewer polls and no problem: 712 of
// 720 rows, exit 0. The reader now finds the count short of the columns'
// values: the file is a problem, named.
func TestUnsealedFooterFlipIsAProblem(t *testing.T) {
	dir, merged := rerecord(t)
	data, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	seals, err := filepath.Glob(filepath.Join(dir, "*.seals"))
	if err != nil || len(seals) != 1 {
		t.Fatalf("ledgers %v, %v", seals, err)
	}
	if err := os.Remove(seals[0]); err != nil {
		t.Fatal(err)
	}
	bit := fewerRowsBit(t, data)
	data[bit/8] ^= 1 << (bit % 8)
	if err := os.WriteFile(merged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].File != merged || !strings.Contains(res.Problems[0].Error, "damaged") {
		t.Fatalf("problems %+v; want the file named damaged", res.Problems)
	}
}
