package capture

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// leftovers records segs single segments of 3 rows each of run into dir,
// the last one sealed by Close, with a writer that merges every 100 (never
// here), and writes a manifest saying every (nil: no compact_every).
func leftovers(t *testing.T, dir, run string, segs int, every any) {
	t.Helper()
	w, err := NewWriter(dir, run, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(100)
	for seg := range segs {
		for i := range 3 {
			if err := w.Append(row(run, "a", seg*3+i)); err != nil {
				t.Fatal(err)
			}
		}
		if seg < segs-1 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"interval": "2s"}
	if every != nil {
		cfg["compact_every"] = every
	}
	if err := WriteManifest(dir, Manifest{RunID: run, Config: cfg}); err != nil {
		t.Fatal(err)
	}
}

// parquetNames lists the *.parquet files in dir.
func parquetNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := folderNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".parquet") || strings.HasSuffix(n, ".tmp") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Close seals the open segment and merges nothing: the segments sealed
// since the last merge stay single (the code before merged them at Close,
// for as long as that took). Reads read them as they are and change
// nothing; Recover merges them, once.
func TestCloseLeavesLeftoversToRecover(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(3)
	for i := range 9 {
		if err := w.Append(row(runR, "a", i)); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 && i < 8 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two sealed, the third sealed by Close: a group of compact_every.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	single := []string{runR + "-000001.parquet", runR + "-000002.parquet", runR + "-000003.parquet"}
	if got := parquetNames(t, dir); !slices.Equal(got, single) {
		t.Fatalf("after Close: %v, want %v", got, single)
	}
	if err := WriteManifest(dir, Manifest{RunID: runR, Config: map[string]any{"compact_every": 3}}); err != nil {
		t.Fatal(err)
	}

	before := snapshot(t, dir)
	if got := seqs(readAll(t, dir)); len(got) != 9 {
		t.Fatalf("read %v, want 9 rows", got)
	}
	if r, err := Open(dir); err != nil || len(r.Recovered) != 0 {
		t.Fatalf("open: %v, recovered %v", err, r.Recovered)
	}
	if after := snapshot(t, dir); !mapsEqual(before, after) {
		t.Fatalf("a read changed the folder:\nbefore %v\nafter  %v", keys(before), keys(after))
	}

	recs, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	merged := runR + "-000001_000003.parquet"
	if len(recs) != 1 || recs[0].Name() != merged || !strings.Contains(recs[0].String(), "3 segments") {
		t.Fatalf("recover: %v", recs)
	}
	if got := parquetNames(t, dir); !slices.Equal(got, []string{merged}) {
		t.Fatalf("after Recover: %v", got)
	}
	if got := seqs(readAll(t, dir)); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("rows after the merge: %v", got)
	}
	if recs, err := Recover(dir); err != nil || len(recs) != 0 {
		t.Fatalf("second recover: %v %v", recs, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Recover merges runs of consecutive single segments as the writer would
// have: compact_every at a time (from the manifest's config, the default
// without one), none with compact_every = 1, around a merged file, a gap or
// a segment of the segment budget, and never a live writer's.
func TestRecoverMergesLeftovers(t *testing.T) {
	for _, c := range []struct {
		name  string
		segs  int
		every any
		big   int64 // bigSegmentBytes; 0: the default
		prep  func(t *testing.T, dir string)
		want  []string
	}{
		{name: "by compact_every", segs: 5, every: 2, want: []string{"000001_000002", "000003_000004", "000005"}},
		{name: "default without one", segs: 5, want: []string{"000001_000005"}},
		{name: "compact_every 1", segs: 3, every: 1, want: []string{"000001", "000002", "000003"}},
		{name: "a gap", segs: 5, every: 10,
			prep: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, runR+"-000003.parquet")) },
			want: []string{"000001_000002", "000004_000005"}},
		{name: "a merged file", segs: 4, every: 10,
			prep: func(t *testing.T, dir string) {
				writeSeg(t, dir, runR+"-000005_000006.parquet", row(runR, "a", 100))
				writeSeg(t, dir, runR+"-000007.parquet", row(runR, "a", 101))
			},
			want: []string{"000001_000004", "000005_000006", "000007"}},
		{name: "big segments stay", segs: 4, every: 10, big: 1, want: []string{"000001", "000002", "000003", "000004"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.big > 0 {
				old := bigSegmentBytes
				bigSegmentBytes = c.big
				defer func() { bigSegmentBytes = old }()
			}
			dir := t.TempDir()
			leftovers(t, dir, runR, c.segs, c.every)
			if c.prep != nil {
				c.prep(t, dir)
			}
			n := len(readAll(t, dir))
			if _, err := Recover(dir); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range c.want {
				want = append(want, runR+"-"+w+".parquet")
			}
			if got := parquetNames(t, dir); !slices.Equal(got, want) {
				t.Fatalf("after Recover: %v, want %v", got, want)
			}
			if got := len(readAll(t, dir)); got != n {
				t.Fatalf("%d rows after Recover, %d before", got, n)
			}
		})
	}

	t.Run("live writer", func(t *testing.T) {
		dir := t.TempDir()
		live, err := NewWriter(dir, runLive, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		live.SetCompactEvery(100)
		for i := range 3 {
			live.Append(row(runLive, "a", i))
			if err := live.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		live.Append(row(runLive, "a", 3))
		leftovers(t, dir, runR, 2, nil) // its NewWriter recovers too
		if _, err := Recover(dir); err != nil {
			t.Fatal(err)
		}
		want := []string{runR + "-000001_000002.parquet", runLive + "-000001.parquet", runLive + "-000002.parquet", runLive + "-000003.parquet"}
		if got := parquetNames(t, dir); !slices.Equal(got, want) {
			t.Fatalf("beside a live writer: %v, want %v", got, want)
		}
		if err := live.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A merge told to stop ends with errMergeStopped before it writes a row: its
// temporary file is removed and its sources stay as they were.
func TestMergeStops(t *testing.T) {
	dir := t.TempDir()
	leftovers(t, dir, runR, 3, nil)
	before := snapshot(t, dir)
	var stop atomic.Bool
	stop.Store(true)
	var e encoder
	if err := compact(&e, dir, runR, []int{1, 2, 3}, nil, &stop); !errors.Is(err, errMergeStopped) {
		t.Fatalf("compact with stop set: %v", err)
	}
	if after := snapshot(t, dir); !mapsEqual(before, after) {
		t.Fatalf("a stopped merge changed the folder:\nbefore %v\nafter  %v", keys(before), keys(after))
	}
}

// Close during a merge of large segments read back from their files stops
// it: Close returns no error, no temporary file is left, every row is in
// the folder once, and Recover merges what the stop left.
func TestCloseStopsMergeInFlight(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(3)
	w.keepBudget = 0 // the merge reads its sources back
	noise := make([]byte, 1<<20)
	seq := 0
	for seg := range 3 {
		for range 4 {
			s := row(runR, "a", seq)
			for k := 0; k+8 <= len(noise); k += 8 {
				noise[k] = byte(uint64(k*k+seq) * 0x9e3779b97f4a7c15 >> 56)
			}
			s.Body = append(s.Body, noise...)
			if err := w.Append(s); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		if seg < 2 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Rotate(); err != nil { // the third seal starts the merge
		t.Fatal(err)
	}
	w.Append(row(runR, "a", seq))
	seq++
	if err := w.Close(); err != nil {
		t.Fatalf("close during a merge: %v", err)
	}
	got := parquetNames(t, dir)
	t.Logf("after Close: %v", got)
	for _, n := range got {
		if strings.HasSuffix(n, ".tmp") {
			t.Errorf("%s left", n)
		}
	}
	if n := len(readAll(t, dir)); n != seq {
		t.Fatalf("%d rows after Close, want %d", n, seq)
	}
	if _, err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, dir)); n != seq {
		t.Fatalf("%d rows after Recover, want %d", n, seq)
	}
	if got := parquetNames(t, dir); len(got) != 1 || !strings.Contains(got[0], "_") {
		t.Fatalf("after Recover: %v, want one merged file", got)
	}
}
