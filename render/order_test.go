package render

import (
	"testing"

	"github.com/llmrec/llmrec/analyze"
)

// A poll stamped before the poll ahead of it (a scrape that outlived the
// next one) is not drawn: a chart's x must grow; it is counted instead.
func TestInTimeOrder(t *testing.T) {
	polls := []analyze.Poll{{T: 1}, {T: 2}, {T: 1.5}, {T: 2}, {T: 3}}
	got, late := inTimeOrder(polls)
	if late != 2 || len(got) != 3 || got[2].T != 3 {
		t.Fatalf("drawn %v, late %d", got, late)
	}
}
