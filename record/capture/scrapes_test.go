package capture

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// variedRows are n rows in which every column takes each of its forms in
// turn: null, empty and present bodies, parse errors and headers; a
// status and a wire size or none; samples or none, with help text and
// with and without an explicit timestamp. Their bodies are large enough
// that the body column spans several pages.
func variedRows(n int) []Scrape {
	rows := make([]Scrape, n)
	for i := range rows {
		s := row(runR, []string{"a", "b", "c"}[i%3], i/3)
		switch i % 4 {
		case 0:
			s.Body = nil
		case 1:
			s.Body = []byte{}
		case 2:
			s.Body = []byte(strings.Repeat(fmt.Sprint(i), 20_000))
		}
		if i%5 == 0 {
			st, wire := int32(200+i%3), int64(i*7)
			s.Status, s.WireBytes = &st, &wire
		}
		if i%6 < 2 {
			pe := []string{"", "line 3: bad"}[i%2]
			s.ParseError = &pe
		}
		if i%7 < 3 {
			h := []string{"", "{}", `{"Date":"` + fmt.Sprint(i) + `"}`}[i%7]
			s.Headers = &h
		}
		if i%3 == 0 {
			s.Samples = nil
		} else {
			s.Samples = nil
			for k := range i % 11 {
				v := Sample{Family: "f" + fmt.Sprint(k%3), Type: "gauge", Help: "help " + fmt.Sprint(k), Name: "n" + fmt.Sprint(k),
					Labels: `{"i":"` + fmt.Sprint(i) + `"}`, Value: float64(i*k) / 3}
				if k%2 == 1 {
					ts := int64(i*1000 + k)
					v.TimestampMs = &ts
				}
				s.Samples = append(s.Samples, v)
			}
		}
		rows[i] = s
	}
	return rows
}

// Every column of every row comes back as written when read whole
// (ReadSegment), nulls as nulls and empty values as empty, across pages;
// and the columns a read omits come back null or empty, the others the
// same.
func TestReadSegmentWholeRows(t *testing.T) {
	rows := variedRows(900)
	path := writeWith(t, t.TempDir(), nil, rows)
	var got []Scrape
	if err := ReadSegment(path, func(s *Scrape) error { got = append(got, *s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		if !reflect.DeepEqual(got[i], rows[i]) {
			t.Fatalf("row %d came back as\n%+v\nwant\n%+v", i, got[i], rows[i])
		}
	}
	i := 0
	err := ReadScrapes(path, OmitBody|OmitHeaders|OmitHelp, func(s *Scrape) error {
		want := rows[i]
		want.Body, want.Headers = nil, nil
		want.Samples = append([]Sample(nil), want.Samples...)
		for k := range want.Samples {
			want.Samples[k].Help = ""
		}
		if !reflect.DeepEqual(*s, want) {
			t.Fatalf("row %d read without body, headers and help: %+v", i, *s)
		}
		i++
		return nil
	})
	if err != nil || i != len(rows) {
		t.Fatalf("%d rows, %v", i, err)
	}
}
