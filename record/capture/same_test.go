package capture

import (
	"fmt"
	"slices"
	"testing"
)

// A reader's Same hook is asked of a row of samples with its names and
// labels as dictionary indexes; a row it knows is delivered with its
// values only (no names, labels, family or type; Known not asked), any
// other as a reader without the hook delivers it. The indexes are the
// strings': the same indexes under one Dict are the same names.
func TestSameByIndexes(t *testing.T) {
	_, seg, _ := sealedSegment(t, 60, "a", "b")
	tab := NewStrings()
	type want struct {
		name, labels []int32
		values       []float64
	}
	var plain []want
	r := NewColumnReader(tab)
	if err := r.Read(seg, func(w *Row) {
		plain = append(plain, want{slices.Clone(w.Name), slices.Clone(w.Labels), slices.Clone(w.Value)})
	}); err != nil {
		t.Fatal(err)
	}
	r = NewColumnReader(tab)
	asked, known := 0, map[string][]int32{} // a Dict and index pair's string ids
	i := 0
	r.Same = func(w *Row) bool {
		asked++
		if len(w.Name) != 0 || len(w.Labels) != 0 || len(w.NameIdx) != len(w.LabelsIdx) || len(w.NameIdx) != len(plain[i].name) {
			t.Fatalf("row %d asked with %d names, %d labels, %d and %d indexes; %d samples", i, len(w.Name), len(w.Labels), len(w.NameIdx), len(w.LabelsIdx), len(plain[i].name))
		}
		for j, x := range w.NameIdx {
			k := fmt.Sprint(w.Dict, x, w.LabelsIdx[j])
			id := []int32{plain[i].name[j], plain[i].labels[j]}
			if was, ok := known[k]; ok && !slices.Equal(was, id) {
				t.Fatalf("row %d: indexes %s were %v, now %v", i, k, was, id)
			}
			known[k] = id
		}
		return i%2 == 0 // every other row known
	}
	r.Known = func(w *Row) bool {
		if i%2 == 0 && w.NameIdx != nil {
			t.Errorf("row %d: Known asked of a row Same knew", i)
		}
		return false
	}
	if err := r.Read(seg, func(w *Row) {
		p := plain[i]
		sameRow := w.NameIdx != nil && i%2 == 0
		switch {
		case !slices.Equal(w.Value, p.values):
			t.Errorf("row %d: values %v, want %v", i, w.Value, p.values)
		case sameRow && (len(w.Name) != 0 || len(w.Labels) != 0 || len(w.Family) != 0 || len(w.Type) != 0):
			t.Errorf("row %d known by Same: %d names, %d labels, %d families, %d types", i, len(w.Name), len(w.Labels), len(w.Family), len(w.Type))
		case !sameRow && (!slices.Equal(w.Name, p.name) || !slices.Equal(w.Labels, p.labels)):
			t.Errorf("row %d: names %v labels %v, want %v %v", i, w.Name, w.Labels, p.name, p.labels)
		case !sameRow && len(w.Name) > 0 && len(w.Family) != len(w.Name):
			t.Errorf("row %d: %d families for %d names", i, len(w.Family), len(w.Name))
		}
		i++
	}); err != nil {
		t.Fatal(err)
	}
	if i != len(plain) || asked < len(plain)/2 {
		t.Fatalf("%d rows of %d, Same asked of %d", i, len(plain), asked)
	}
}
