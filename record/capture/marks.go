package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MarksFile is the run folder's phase marks: one JSON object a line,
// appended with one write(2) and an fsync each (see [AppendMark]). DuckDB
// reads it with read_json('DIR/marks.jsonl', format = 'newline_delimited').
const MarksFile = "marks.jsonl"

// MaxMarkName bounds a phase name, in bytes.
const MaxMarkName = 200

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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return m, fmt.Errorf("mark: %w", err)
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

// ReadMarks reads dir's marks in file order; none when the folder has no
// marks file. Lines that do not parse (a torn last line after a crash,
// an edit by hand) are skipped and named in bad as "FILE:LINE: why".
func ReadMarks(dir string) (marks []Mark, bad []string, err error) {
	path := filepath.Join(dir, MarksFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("marks: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		// Blank lines say nothing.
		if len(line) == 0 {
			continue
		}
		var m Mark
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: %v", path, n, err))
			continue
		}
		if err := CheckMarkName(m.Name); err != nil {
			bad = append(bad, fmt.Sprintf("%s:%d: %v", path, n, err))
			continue
		}
		if m.TNs <= 0 {
			bad = append(bad, fmt.Sprintf("%s:%d: mark without t_ns", path, n))
			continue
		}
		marks = append(marks, m)
	}
	if err := sc.Err(); err != nil {
		return marks, bad, fmt.Errorf("marks %s: %w", path, err)
	}
	return marks, bad, nil
}
