package render_test

import (
	"regexp"
	"strings"
	"testing"
)

// A table with only its header is not drawn: the report says in words
// that there is none, or what its notes say. The shipped recording has no
// plausibility cap configured, so its rollups table has no row.
func TestNoEmptyTables(t *testing.T) {
	html := htmlOf(t, findingsReport(t))
	if empty := regexp.MustCompile(`<tbody>\s*</tbody>`).FindAllStringIndex(html, -1); len(empty) > 0 {
		for _, at := range empty {
			t.Errorf("a table with no row: %q", html[max(0, at[0]-300):at[1]])
		}
	}
	want := `<p class="note empty"><strong>Plausibility: published values above the cap (must be 0) next to naive Δ/Δt</strong>: no plausibility cap configured (llmrec analyze --cap)</p>`
	if !strings.Contains(html, want) {
		t.Errorf("the rowless rollups table is not said in words: no %q", want)
	}
}
