package capture

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmrec/llmrec/record/expo"
)

// Rows kept in the journal alone (the open segment over its budget while a
// seal runs) are parsed again at their seal with an Interner per target and
// the recording's shapes: their samples are Parse's, value for value, for
// targets sharing a page shape, a target of its own shape, a target whose
// page changes shape, and a page that does not parse; the targets' first
// pages of the shape kept are read against it (one shape is kept for them
// all).
func TestSealReadBackWithShapes(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, runR, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var sh expo.Shapes
	w.SetShapes(&sh)
	w.SetCompactEvery(0)
	w.SetSegmentBytes(1) // every row past the first is let go of while the seal is held
	hold := make(chan error, 1)
	w.sealing = hold
	other := func(i int) []byte {
		return fmt.Appendf(nil, "# TYPE other gauge\nother{x=\"y\"} %d\n", i)
	}
	var want []Scrape
	add := func(target string, seq int, b []byte) {
		t.Helper()
		s := row(runR, target, seq)
		s.Body = b
		want = append(want, s)
		// Appended unparsed: the seal parses what it reads back.
		s.Samples, s.Outcome = nil, OutcomeOK
		if err := w.Append(s); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range 5 {
		for _, tg := range []string{"a", "b", "c"} {
			add(tg, seq, body(seq*7+len(tg)))
		}
		add("d", seq, other(seq))
		switch {
		case seq < 2:
			add("e", seq, body(seq))
		case seq == 3:
			add("e", seq, []byte("not { exposition\n"))
		default:
			add("e", seq, other(seq))
		}
	}
	spilled := 0
	for _, r := range w.rows {
		if r.at >= 0 {
			spilled++
		}
	}
	if spilled < len(want)-1 {
		t.Fatalf("%d of %d rows kept in the journal alone", spilled, len(want))
	}
	hold <- nil
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	byKey := map[string]Scrape{}
	for _, g := range got {
		byKey[fmt.Sprintf("%s/%d", g.Target, g.Seq)] = g
	}
	for _, wnt := range want {
		key := fmt.Sprintf("%s/%d", wnt.Target, wnt.Seq)
		ParseCapped(&wnt, nil, DefaultLimits)
		g := byKey[key]
		if g.Outcome != wnt.Outcome || !slices.EqualFunc(g.Samples, wnt.Samples, func(a, b Sample) bool {
			return a.Name == b.Name && a.Labels == b.Labels && a.Family == b.Family && a.Type == b.Type &&
				a.Help == b.Help && math.Float64bits(a.Value) == math.Float64bits(b.Value) && (a.TimestampMs == nil) == (b.TimestampMs == nil)
		}) {
			t.Errorf("%s: stored %s with samples %v, Parse gives %s %v", key, g.Outcome, g.Samples, wnt.Outcome, wnt.Samples)
		}
	}
	// The shapes of body (a's first page) and other (d's): b's, c's and
	// e's first pages were read against a's.
	if sh.Len() != 2 {
		t.Errorf("%d shapes kept, want 2", sh.Len())
	}
}

// A journal's rows, many targets' pages of two shapes interleaved, a page
// that does not parse and one of no map, are parsed as Parse parses each
// (parseRows: against the shapes of the rows before).
func TestParseRowsAsParse(t *testing.T) {
	other := func(i int) []byte { return fmt.Appendf(nil, "# TYPE other gauge\nother{x=\"y\"} %d\n", i) }
	var rows []Scrape
	for seq := range 4 {
		for k, tg := range []string{"a", "b", "c", "d"} {
			s := row(runR, tg, seq)
			switch {
			case k == 3 && seq == 2:
				s.Body = []byte("not { exposition\n")
			case k == 3 && seq == 3:
				s.Body = []byte("t 1 1712345678000\n") // a timestamp: no map
			case k%2 == 1:
				s.Body = other(seq*10 + k)
			default:
				s.Body = body(seq*10 + k)
			}
			s.Samples = nil
			rows = append(rows, s)
		}
	}
	want := make([]Scrape, len(rows))
	for i := range rows {
		want[i] = rows[i]
		Parse(&want[i])
	}
	parseRows(rows)
	for i := range rows {
		g, w := rows[i], want[i]
		if g.Outcome != w.Outcome || !slices.EqualFunc(g.Samples, w.Samples, func(a, b Sample) bool {
			return a.Name == b.Name && a.Labels == b.Labels && a.Family == b.Family && a.Type == b.Type &&
				a.Help == b.Help && math.Float64bits(a.Value) == math.Float64bits(b.Value) &&
				(a.TimestampMs == nil) == (b.TimestampMs == nil) && (a.TimestampMs == nil || *a.TimestampMs == *b.TimestampMs)
		}) || (g.ParseError == nil) != (w.ParseError == nil) || (g.ParseError != nil && *g.ParseError != *w.ParseError) {
			t.Errorf("row %d (%s/%d): %s %v, Parse gives %s %v", i, g.Target, g.Seq, g.Outcome, g.Samples, w.Outcome, w.Samples)
		}
	}
}

// BenchmarkParseRows parses a journal's rows as a reader or Recover does:
// 100 targets' real vLLM V1 pages, each its own values, one row a target
// (the first pages after a crash). Parse is each parsed alone, through
// expfmt, as before parseRows.
func BenchmarkParseRows(b *testing.B) {
	page, err := os.ReadFile(filepath.Join("../../../shared/captures/real", "vllm-v1-armandossrecife-vllm-server-api-chat.txt"))
	if err != nil {
		b.Skipf("real capture absent: %v", err)
	}
	var rows []Scrape
	for k := range 100 {
		s := row(runR, fmt.Sprintf("t%03d", k), 0)
		s.Body = bytes.Replace(page, []byte(" 0\n"), fmt.Appendf(nil, " %d\n", k+1), -1)
		s.Samples = nil
		rows = append(rows, s)
	}
	for _, how := range []string{"parseRows", "Parse"} {
		b.Run(how, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				work := slices.Clone(rows)
				if how == "Parse" {
					for i := range work {
						Parse(&work[i])
					}
				} else {
					parseRows(work)
				}
				if work[99].Outcome != OutcomeOK {
					b.Fatalf("%s: %v", work[99].Outcome, work[99].ParseError)
				}
			}
		})
	}
}
