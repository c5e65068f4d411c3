package expo

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// checkWith parses pages in turn through in and each alone with Parse,
// and fails on any difference (samples or error).
func checkWith(t *testing.T, in *Interner, pages ...[]byte) {
	t.Helper()
	for k, page := range pages {
		got, gerr := in.Parse(page, "text/plain")
		want, werr := Parse(page, "text/plain")
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("page %d: interned error %v, Parse's %v", k, gerr, werr)
		}
		if !slices.EqualFunc(got, want, sameSample) {
			for i := range min(len(got), len(want)) {
				if !sameSample(got[i], want[i]) {
					t.Fatalf("page %d: sample %d: interned %+v, Parse's %+v", k, i, got[i], want[i])
				}
			}
			t.Fatalf("page %d: %d samples interned, %d by Parse", k, len(got), len(want))
		}
	}
}

// A target's first page of a shape another target's first page had is
// read against that page by its values, and parses as Parse parses it:
// every real capture, its values changed (plus one, and each odd value in
// turn); a page of another shape is parsed in full.
func TestShapesRealCaptures(t *testing.T) {
	eachParsingCapture(t, func(t *testing.T, page []byte) {
		var sh Shapes
		a := &Interner{Shapes: &sh}
		checkWith(t, a, page)
		if sh.Len() == 0 {
			t.Skip("the page has no map (a timestamp, or a line the map cannot place)")
		}
		b := &Interner{Shapes: &sh}
		bumped := withValues(page, bump)
		checkWith(t, b, bumped, page)
		if b.shaped != 1 || b.reused != 2 {
			t.Errorf("target b: %d pages read against a shape, %d by values, want 1 and 2", b.shaped, b.reused)
		}
		for k, odd := range oddValues {
			changed := withValues(page, func(i int, old []byte) []byte {
				if (i+k)%3 != 0 {
					return old
				}
				return []byte(odd)
			})
			checkWith(t, &Interner{Shapes: &sh}, changed, bumped)
		}
		// Another shape: a line more.
		other := append([]byte("zz_other 1\n"), page...)
		c := &Interner{Shapes: &sh}
		checkWith(t, c, other)
		if c.shaped != 0 {
			t.Error("a page of another shape was read against a kept shape")
		}
	})
}

// Shapes are kept up to maxShapes, the newest replacing the oldest, and
// pages of the shapes still kept are read against them.
func TestShapesBounded(t *testing.T) {
	var sh Shapes
	page := func(i int) []byte {
		return []byte("# TYPE c counter\nc{x=\"" + string(rune('a'+i)) + "\"} 1\n")
	}
	for i := range maxShapes + 3 {
		checkWith(t, &Interner{Shapes: &sh}, page(i))
	}
	if sh.Len() != maxShapes {
		t.Fatalf("%d shapes kept, want %d", sh.Len(), maxShapes)
	}
	in := &Interner{Shapes: &sh}
	checkWith(t, in, bytes.Replace(page(maxShapes+2), []byte(" 1"), []byte(" 5"), 1))
	if in.shaped != 1 {
		t.Error("the newest shape was not read against")
	}
}

// Many targets' first pages at once, through one Shapes (go test -race).
func TestShapesConcurrent(t *testing.T) {
	a := []byte("# HELP c a counter\n# TYPE c counter\nc{x=\"1\"} 1\nc{x=\"2\"} 2\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.3\nh_count 2\n")
	var sh Shapes
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			in := &Interner{Shapes: &sh}
			p := withValues(a, func(j int, old []byte) []byte {
				if j == i%5 {
					return []byte("7")
				}
				return old
			})
			got, err := in.Parse(p, "text/plain")
			want, _ := Parse(p, "text/plain")
			if err != nil || !slices.EqualFunc(got, want, sameSample) {
				t.Errorf("target %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if sh.Len() == 0 {
		t.Error("no shape kept")
	}
}

// FuzzShapes: a page seen first by one target, then another target's first
// page with some values replaced, parse as Parse parses each.
func FuzzShapes(f *testing.F) {
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n"), []byte{1, 2, 3})
	f.Add([]byte("# TYPE s summary\ns{quantile=\"0.9\",a=\"b\"} 1\ns_sum 2\ns_count 1\nu 3\n"), []byte{5, 0, 9})
	f.Fuzz(func(t *testing.T, page, picks []byte) {
		if len(picks) == 0 {
			return
		}
		changed := pickValues(page, picks)
		var sh Shapes
		checkWith(t, &Interner{Shapes: &sh}, page)
		checkWith(t, &Interner{Shapes: &sh}, changed, page, changed)
	})
}

// BenchmarkParseVLLMV1Shaped parses a target's first page as the recorder
// does when another target's first page had its shape: read against it.
func BenchmarkParseVLLMV1Shaped(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(realDir, "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		b.Skipf("real capture absent: %v", err)
	}
	var sh Shapes
	if _, err := (&Interner{Shapes: &sh}).Parse(body, "text/plain"); err != nil {
		b.Fatal(err)
	}
	page := withValues(body, bump)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		in := &Interner{Shapes: &sh}
		if _, err := in.Parse(page, "text/plain"); err != nil || in.shaped != 1 {
			b.Fatalf("%v; read against a shape: %d", err, in.shaped)
		}
	}
}

// BenchmarkParseVLLMV1FewMoved parses the page as the recorder does at every
// scrape after the second when one value in ten moved from the page before
// (a real engine's page: most gauges and buckets stay).
func BenchmarkParseVLLMV1FewMoved(b *testing.B) {
	benchAlternating(b, func(body []byte) []byte {
		return withValues(body, func(i int, old []byte) []byte {
			if i%10 != 0 {
				return old
			}
			return bump(i, old)
		})
	})
}
