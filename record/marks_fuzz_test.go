package record

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// FuzzMarks feeds arbitrary bytes to the marks file's reader and to the
// mark endpoint's request parser: neither panics, every mark read or taken
// has a name CheckMarkName accepts (and a time, when read), and the reader
// keeps to its bounds.
func FuzzMarks(f *testing.F) {
	f.Add([]byte(`{"t_ns": 1764000000000000000, "time": "x", "name": "load-8", "end": false, "source": "cli"}`+"\n"+`{"t_ns": 17, "na`),
		"name=load-8&end=1", "")
	f.Add([]byte("\n\n{}\n"), "", `{"name": "load-8", "end": true}`)
	f.Add([]byte(`{"t_ns": -1, "name": "a\u0000"}`), "end=maybe", "plain name")
	f.Fuzz(func(t *testing.T, file []byte, query, body string) {
		marks, bad := capture.ParseMarks("marks.jsonl", file)
		if len(marks) > capture.MaxMarks || len(bad) > maxBadLines {
			t.Fatalf("%d marks, %d bad lines", len(marks), len(bad))
		}
		for _, m := range marks {
			if err := capture.CheckMarkName(m.Name); err != nil || m.TNs <= 0 {
				t.Fatalf("read %+v: %v", m, err)
			}
		}
		r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/mark", RawQuery: query},
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		mk, err := markOf(r)
		if err == nil {
			if cerr := capture.CheckMarkName(mk.Name); cerr != nil {
				t.Fatalf("took %+v: %v", mk, cerr)
			}
		}
	})
}

// maxBadLines is what ParseMarks may name at most: its bound on bad lines,
// one for the lines past it, one for the bytes past its size bound and one
// for the marks past its count.
const maxBadLines = 20 + 3
