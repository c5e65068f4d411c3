package render

import (
	"strings"

	"github.com/llmrec/llmrec/analyze"
)

// importedNote says, under an imported target's title, where its samples
// came from and each check that cannot apply, with why.
func importedNote(im *analyze.Imported) string {
	var b strings.Builder
	if im.Partial != "" {
		b.WriteString("PARTIAL import: " + im.Partial + ". ")
	}
	b.WriteString("Imported from " + im.Source + " at " + im.URL + " (types from " + im.Types + "): the bodies are absent. ")
	for i, c := range im.NotApplicable {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(c.Check + ": " + c.Status + " (" + c.Why + ").")
	}
	return b.String()
}

// importedAnswerNote names the imported targets under the answer, "" when
// none is.
func importedAnswerNote(ts []analyze.Target) string {
	var names []string
	var checks []string
	for i := range ts {
		im := ts[i].Imported
		if im == nil {
			continue
		}
		names = append(names, ts[i].Name)
		if checks == nil {
			for _, c := range im.NotApplicable {
				checks = append(checks, c.Check)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "Imported from a metrics store, bodies absent: " + strings.Join(names, ", ") + ". " +
		analyze.StatusImported + ": " + strings.Join(checks, ", ") + " (a count of 0 for these says nothing)."
}
