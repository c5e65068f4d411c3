package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// MarksFile is the run folder's phase marks: one JSON object a line,
// appended with one write(2) and an fsync each (see [AppendMark]). DuckDB
// reads it with read_json('DIR/marks.jsonl', format = 'newline_delimited').
const MarksFile = "marks.jsonl"

// MaxMarkName bounds a phase name, in bytes.
const MaxMarkName = 200

// MaxMarks bounds a run folder's marks: [AppendMark] refuses the one past
// it and [ReadMarks] reads the first MaxMarks and names the rest. 50 k
// marks made render write 73 MB; 500 phases marked at both ends fit.
const MaxMarks = 1000

// MaxMarksBytes bounds the marks file: [AppendMark] refuses a line that
// would grow it past this and [ReadMarks] reads no further. MaxMarks lines
// of the longest names (200 bytes, each escaped to at most 6) fit.
const MaxMarksBytes = 2 << 20

// maxBadMarks bounds the lines [ParseMarks] names one by one; maxMarkSource
// a mark's source.
const maxBadMarks, maxMarkSource = 20, 64

// MarkHeader is the header every request to the recorder's mark endpoint
// must carry (any value): a web page cannot send it cross-site without a
// CORS preflight, which the endpoint never answers.
const MarkHeader = "X-Llmrec-Mark"

// Mark is the start or end of a named phase, as a load generator marked it
// while recording.
type Mark struct {
	// TNs is when the mark was made, Unix nanoseconds; Time the same in
	// RFC 3339 (UTC), for a reader.
	TNs  int64  `json:"t_ns"`
	Time string `json:"time"`
	// Name is the phase's name.
	Name string `json:"name"`
	// End is true when the mark ends the phase; a mark that does not end a
	// phase starts it (and ends a phase of the same name still open).
	End bool `json:"end"`
	// Source says who made it: "cli" (llmrec mark) or "http" (the
	// recorder's mark endpoint).
	Source string `json:"source"`
}

// CheckMarkName rejects a name that is empty, too long, not UTF-8 or
// holds a control character.
func CheckMarkName(name string) error {
	switch {
	case name == "":
		return errors.New("mark: empty phase name")
	case len(name) > MaxMarkName:
		return fmt.Errorf("mark: phase name of %d bytes (at most %d)", len(name), MaxMarkName)
	case !utf8.ValidString(name):
		return errors.New("mark: phase name is not UTF-8")
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return errors.New("mark: phase name holds a control character")
	}
	return nil
}

// markMu serialises a process's appends (the recorder's endpoint may get
// several at once); separate processes each append whole lines with one
// write(2) to a file opened O_APPEND.
var markMu sync.Mutex

// AppendMark appends m to dir's marks file, creating it, with one write and
// an fsync: a crash loses at most the mark being written, and a torn last
// line is skipped by [ReadMarks]. dir must exist. A zero TNs is now.
func AppendMark(dir string, m Mark) (Mark, error) {
	if err := CheckMarkName(m.Name); err != nil {
		return m, err
	}
	if st, err := os.Stat(dir); err != nil {
		return m, fmt.Errorf("mark: %w", err)
	} else if !st.IsDir() {
		return m, fmt.Errorf("mark: %s is not a folder", dir)
	}
	if m.TNs == 0 {
		m.TNs = time.Now().UnixNano()
	}
	m.Time = time.Unix(0, m.TNs).UTC().Format(time.RFC3339Nano)
	line, err := json.Marshal(m)
	if err != nil {
		return m, fmt.Errorf("mark: %w", err)
	}
	line = append(line, '\n')
	markMu.Lock()
	defer markMu.Unlock()
	path := filepath.Join(dir, MarksFile)
	// A symlink is refused, not followed: the marks go into the run folder
	// and nowhere else.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return m, fmt.Errorf("mark: %w", err)
	}
	if err := markRoom(f, path, len(line)); err != nil {
		f.Close()
		return m, err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return m, fmt.Errorf("mark: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return m, fmt.Errorf("mark: fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return m, fmt.Errorf("mark: %w", err)
	}
	return m, nil
}

// markRoom refuses a line of n bytes that would take the marks file f past
// [MaxMarksBytes] or [MaxMarks] lines, and a file that is not a regular one.
func markRoom(f *os.File, path string, n int) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("mark: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("mark: %s is not a regular file", path)
	}
	if st.Size()+int64(n) > MaxMarksBytes {
		return fmt.Errorf("mark: %s holds %d bytes; a mark more would pass %d", path, st.Size(), MaxMarksBytes)
	}
	lines, err := countLines(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return fmt.Errorf("mark: read %s: %w", path, err)
	}
	if lines >= MaxMarks {
		return fmt.Errorf("mark: %s holds %d marks (at most %d)", path, lines, MaxMarks)
	}
	return nil
}

// countLines counts the newlines r holds.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// ReadMarks reads dir's marks in file order; none when the folder has no
// marks file. Lines that do not parse (a torn last line after a crash,
// an edit by hand) are skipped and named in bad as "FILE:LINE: why".
func ReadMarks(dir string) (marks []Mark, bad []string, err error) {
	path := filepath.Join(dir, MarksFile)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("marks: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, nil, fmt.Errorf("marks: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("marks: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxMarksBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("marks: %w", err)
	}
	marks, bad = ParseMarks(path, data)
	return marks, bad, nil
}

// ParseMarks reads marks from the bytes of the marks file path (named in
// bad): at most [MaxMarks] marks from at most [MaxMarksBytes]. Lines that
// do not parse (a torn last line after a crash, an edit by hand) are
// skipped and named in bad as "FILE:LINE: why"; what lies past either
// bound is named once.
func ParseMarks(path string, data []byte) (marks []Mark, bad []string) {
	if len(data) > MaxMarksBytes {
		bad = append(bad, fmt.Sprintf("%s: longer than %d bytes; the rest is not read", path, MaxMarksBytes))
		data = data[:MaxMarksBytes]
	}
	n, unread := 0, 0
	// A file of nothing but bad lines names the first maxBadMarks of them.
	why := func(msg string) {
		if len(bad) < maxBadMarks {
			bad = append(bad, fmt.Sprintf("%s:%d: %s", path, n, msg))
		} else {
			unread++
		}
	}
	defer func() {
		if unread > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d more lines that do not read as marks", path, unread))
		}
	}()
	for len(data) > 0 {
		n++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		// Blank lines say nothing.
		if len(line) == 0 {
			continue
		}
		if len(marks) == MaxMarks {
			bad = append(bad, fmt.Sprintf("%s:%d: more than %d marks; this one and the rest are not read", path, n, MaxMarks))
			break
		}
		var m Mark
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			why(err.Error())
			continue
		}
		if err := CheckMarkName(m.Name); err != nil {
			why(err.Error())
			continue
		}
		if m.TNs <= 0 {
			why("mark without t_ns")
			continue
		}
		if len(m.Source) > maxMarkSource || strings.IndexFunc(m.Source, unicode.IsControl) >= 0 {
			why(fmt.Sprintf("mark source of %d bytes or with a control character", len(m.Source)))
			continue
		}
		// The time is the one t_ns says, whatever the line's own text.
		m.Time = time.Unix(0, m.TNs).UTC().Format(time.RFC3339Nano)
		marks = append(marks, m)
	}
	return marks, bad
}
