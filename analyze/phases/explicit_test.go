package phases

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
)

// A phases file is CSV with the header name,start,end or a JSON array of
// the same, times in RFC 3339 or Unix seconds; every error names the file
// and the line.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"name,start,end\nwarm,100,160.5\nload-8,2026-01-01T00:00:00Z,2026-01-01T00:01:00.5Z\n", "warm 100 160.5;load-8 1767225600 1767225660.5", ""},
		{"# a comment\nName, Start, End\na,1,2\n", "a 1 2", ""},
		{`[{"name": "a", "start": 1, "end": "2"},` + "\n" + ` {"name": "b", "start": "2026-01-01T00:00:00Z", "end": 1767225601}]`, "a 1 2;b 1767225600 1767225601", ""},
		{"", "", "f:1: empty"},
		{"start,end\n", "", "f:1: want the header name,start,end"},
		{"name,start,end\na,1,2\nb,3\n", "", "f:3: want 3 fields"},
		{"name,start,end\na,5,2\n", "", `f:2: phase "a" ends (2) before it starts (5)`},
		{"name,start,end\na,yesterday,2\n", "", `f:2: start: "yesterday" is neither RFC 3339 nor Unix seconds`},
		{"name,start,end\n,1,2\n", "", "f:2: empty phase name"},
		{"[{\"name\": \"a\", \"start\": 1, \"end\": 2},\n\n {\"name\": \"b\", \"start\": 1}]", "", "f:3: end: missing"},
		{"[{\"start\": 1, \"end\": 2}]", "", "f:1: a phase without a name"},
	} {
		ps, err := Parse([]byte(c.in), "f")
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Name+" "+secs(p.Start)+" "+secs(p.End))
			if p.Kind != KindNamed || p.Source != SourceFile || !strings.HasPrefix(p.Why, "f:") {
				t.Errorf("%+v", p)
			}
		}
		if strings.Join(got, ";") != c.want {
			t.Errorf("%q: %v, want %s", c.in, got, c.want)
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none.csv")); err == nil {
		t.Error("a missing file read")
	}
}

// Marks pair into phases: a phase ends at its own end mark, else at the
// next start of any phase, else at the end of the recording; a start of an
// open phase whose end mark comes later does not end it.
func TestFromMarks(t *testing.T) {
	mk := func(s float64, name string, end bool) capture.Mark {
		return capture.Mark{TNs: int64(s * 1e9), Name: name, End: end}
	}
	ps, bad := FromMarks([]capture.Mark{
		mk(10, "idle", false), mk(20, "load", false), mk(25, "inner", false), mk(30, "inner", true),
		mk(40, "load", true), mk(50, "tail", false), mk(55, "ghost", true),
	}, 100)
	var got []string
	for _, p := range ps {
		got = append(got, p.Name+" "+secs(p.Start)+"-"+secs(p.End))
	}
	if strings.Join(got, ";") != "idle 10-20;load 20-40;inner 25-30;tail 50-100" {
		t.Errorf("phases %v", got)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], `"ghost"`) {
		t.Errorf("bad %v", bad)
	}
}

// A torn last line (a crash mid-append) is skipped and named; the marks
// before it are read.
func TestTornMarks(t *testing.T) {
	dir := t.TempDir()
	if _, err := capture.AppendMark(dir, capture.Mark{Name: "a", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, capture.MarksFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t_ns": 17, "na`)
	f.Close()
	marks, bad, err := capture.ReadMarks(dir)
	if err != nil || len(marks) != 1 || len(bad) != 1 || !strings.Contains(bad[0], "marks.jsonl:2:") {
		t.Errorf("marks %v, bad %v, %v", marks, bad, err)
	}
	if _, err := capture.AppendMark(dir, capture.Mark{Name: strings.Repeat("x", 201)}); err == nil {
		t.Error("a 201-byte name was marked")
	}
}

func secs(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// A file's phases and the marks' naming the same stretches are one set:
// a marked phase of a file phase's name that overlaps it by 90 % of the
// shorter is listed once, with the file's bounds and the marks' offsets;
// a marked phase of another name, or of the same name elsewhere, stays.
func TestOneSet(t *testing.T) {
	file := []Phase{
		{Name: "idle", Kind: KindNamed, Source: SourceFile, Start: 100, End: 120, Why: "p.csv:2"},
		{Name: "load", Kind: KindNamed, Source: SourceFile, Start: 120, End: 180, Why: "p.csv:3"},
	}
	marked := []Phase{
		{Name: "idle", Kind: KindNamed, Source: SourceMark, Start: 100.012, End: 120.015, Why: "cli mark"},
		{Name: "load", Kind: KindNamed, Source: SourceMark, Start: 120.02, End: 180.01, Why: "cli mark"},
		{Name: "load", Kind: KindNamed, Source: SourceMark, Start: 300, End: 360, Why: "cli mark"},
		{Name: "cool", Kind: KindNamed, Source: SourceMark, Start: 180, End: 190, Why: "cli mark"},
	}
	got := OneSet(file, marked)
	var names []string
	for _, p := range got {
		names = append(names, p.Name+"/"+p.Source+"/"+strconv.FormatFloat(p.Start, 'g', -1, 64))
	}
	if want := "idle/file/100 load/file/120 load/mark/300 cool/mark/180"; strings.Join(names, " ") != want {
		t.Errorf("one set %q, want %q", strings.Join(names, " "), want)
	}
	if want := "p.csv:2; marked too, +12 ms at the start and +15 ms at the end (cli mark)"; got[0].Why != want {
		t.Errorf("why %q, want %q", got[0].Why, want)
	}
	if len(OneSet(nil, marked)) != len(marked) || len(OneSet(file, nil)) != len(file) {
		t.Error("one source alone is not kept whole")
	}
}
