package capture

import (
	"os"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// Every segment the writer seals names each column chunk's path in its
// metadata, the second and later ones too: readers other than llmrec's
// (pyarrow, Spark, parquet-tools) find a chunk's column by that path.
func TestEverySegmentNamesItsChunkPaths(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompactEvery(0)
	for seg := range 3 {
		for i := range 4 {
			if err := w.Append(row(runR, "a", seg*4+i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs := w.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want 3", len(segs))
	}
	for _, path := range segs {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			f.Close()
			t.Fatal(err)
		}
		cols := pf.Schema().Columns()
		for g, rg := range pf.Metadata().RowGroups {
			for c, ch := range rg.Columns {
				if got, want := strings.Join(ch.MetaData.PathInSchema, "."), strings.Join(cols[c], "."); got != want {
					t.Errorf("%s row group %d chunk %d: path %q, want %q", path, g, c, got, want)
				}
			}
		}
		f.Close()
	}
}
