package render_test

import (
	"regexp"
	"testing"

	"github.com/llmrec/llmrec/render"
)

// tablesOf is every table of the sections, depth first.
func tablesOf(ss []render.Section) []render.Table {
	var out []render.Table
	for _, s := range ss {
		out = append(out, s.Tables...)
		out = append(out, tablesOf(s.Sections)...)
	}
	return out
}

// One unit per quantity: in the report of the shipped recording a latency
// is in ms (or s) and a ratio in %, never a bare number of seconds or a
// 0..1 fraction, in the whole-recording medians, the phases and the fleet.
func TestOneUnitPerQuantity(t *testing.T) {
	r := findingsReport(t)
	unit := map[string]*regexp.Regexp{
		"TTFT p50": regexp.MustCompile(`^[\d.]+ m?s( ≠ published)?$`), "TPOT mean": regexp.MustCompile(`^[\d.]+ m?s( ≠ published)?$`),
		"KV-cache usage": regexp.MustCompile(`^\d+ %$`), "prefix-cache hits": regexp.MustCompile(`^\d+ %$`),
		"KV pressure, max": regexp.MustCompile(`^\d+ %$`),
	}
	checked := 0
	for _, tb := range tablesOf(r.Sections) {
		// Quantities as rows: the name in the first column, the value next.
		for _, row := range tb.Rows {
			if len(row) < 2 || row[1].Text == "—" || len(row[1].Text) > 0 && row[1].Text[0] == 0xe2 {
				continue
			}
			if re, ok := unit[row[0].Text]; ok && tb.Title != "Busy: the steady phases, from the engine's own counters" {
				checked++
				if !re.MatchString(row[1].Text) {
					t.Errorf("%s: %s is %q, not in its unit", tb.Title, row[0].Text, row[1].Text)
				}
			}
		}
		// Quantities as columns: the phases' TTFT.
		for i, c := range tb.Columns {
			if c.Title != "TTFT p50" {
				continue
			}
			for _, row := range tb.Rows {
				if txt := row[i].Text; txt != "—" && txt[0] != 0xe2 {
					checked++
					if !unit["TTFT p50"].MatchString(txt) {
						t.Errorf("%s: TTFT p50 is %q, not in ms", tb.Title, txt)
					}
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d values checked: the test looked at nothing", checked)
	}
}

// The findings under the answer come the most severe first: a warning
// (such as the client and the server disagreeing) never sits below a
// refused window or a note.
func TestFindingsBySeverity(t *testing.T) {
	for name, r := range map[string]render.Report{"shipped": findingsReport(t), "8 engines": fleetReport(t)} {
		vs := r.Verdicts
		if len(vs) < 3 {
			t.Fatalf("%s: %d findings, too few to judge an order", name, len(vs))
		}
		for i := 1; i < len(vs); i++ {
			if render.Severity(vs[i].Class) < render.Severity(vs[i-1].Class) {
				t.Errorf("%s: finding %q (%s) under %q (%s)", name, vs[i].Topic, vs[i].Class, vs[i-1].Topic, vs[i-1].Class)
			}
		}
	}
}
