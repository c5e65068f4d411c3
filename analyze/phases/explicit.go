package phases

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/record/capture"
)

// ReadFile reads named phases from a file: CSV with the header
// name,start,end, or a JSON array of {"name", "start", "end"}, times in
// RFC 3339 or Unix seconds (a JSON number or string). Errors name the file
// and line.
func ReadFile(path string) ([]Phase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("phases: %w", err)
	}
	return Parse(data, path)
}

// Parse reads named phases from data (see ReadFile); file names it in
// errors.
func Parse(data []byte, file string) ([]Phase, error) {
	trim := bytes.TrimSpace(data)
	if len(trim) > 0 && trim[0] == '[' {
		return parseJSON(data, file)
	}
	return parseCSV(data, file)
}

func parseCSV(data []byte, file string) ([]Phase, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	r.Comment = '#'
	var out []Phase
	header := false
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", file, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if !header {
			for i := range rec {
				rec[i] = strings.ToLower(strings.TrimSpace(rec[i]))
			}
			if !slices.Equal(rec, []string{"name", "start", "end"}) {
				return nil, fmt.Errorf("%s:%d: want the header name,start,end, got %q", file, line, strings.Join(rec, ","))
			}
			header = true
			continue
		}
		if len(rec) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields (name,start,end), got %d", file, line, len(rec))
		}
		p, err := phaseOf(rec[0], rec[1], rec[2])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		p.Why = fmt.Sprintf("%s:%d", file, line)
		out = append(out, p)
	}
	if !header {
		return nil, fmt.Errorf("%s:1: empty: want the header name,start,end", file)
	}
	return out, nil
}

func parseJSON(data []byte, file string) ([]Phase, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", file, lineAt(dec.InputOffset()), err)
	}
	var out []Phase
	for dec.More() {
		// The element starts after the separator the decoder has passed.
		start := dec.InputOffset()
		for start < int64(len(data)) && strings.IndexByte(", \t\r\n", data[start]) >= 0 {
			start++
		}
		line := lineAt(start)
		var raw struct {
			Name  *string         `json:"name"`
			Start json.RawMessage `json:"start"`
			End   json.RawMessage `json:"end"`
		}
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, line, err)
		}
		if raw.Name == nil {
			return nil, fmt.Errorf("%s:%d: a phase without a name", file, line)
		}
		s, err := jsonTime(raw.Start)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: start: %w", file, line, err)
		}
		e, err := jsonTime(raw.End)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: end: %w", file, line, err)
		}
		p, err := phaseOf(*raw.Name, s, e)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		p.Why = fmt.Sprintf("%s:%d", file, line)
		out = append(out, p)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", file, lineAt(dec.InputOffset()), err)
	}
	return out, nil
}

// jsonTime turns a JSON number or string into the text parseTime reads.
func jsonTime(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("missing")
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	return string(raw), nil
}

// phaseOf checks and makes one named phase.
func phaseOf(name, start, end string) (Phase, error) {
	name = strings.TrimSpace(name)
	if err := capture.CheckMarkName(name); err != nil {
		return Phase{}, errors.New(strings.TrimPrefix(err.Error(), "mark: "))
	}
	s, err := parseTime(start)
	if err != nil {
		return Phase{}, fmt.Errorf("start: %w", err)
	}
	e, err := parseTime(end)
	if err != nil {
		return Phase{}, fmt.Errorf("end: %w", err)
	}
	if e <= s {
		return Phase{}, fmt.Errorf("phase %q ends (%s) before it starts (%s)", name, end, start)
	}
	return Phase{Name: name, Kind: KindNamed, Source: SourceFile, Start: s, End: e}, nil
}

// parseTime reads RFC 3339 or Unix seconds.
func parseTime(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return float64(t.UnixNano()) / 1e9, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q is neither RFC 3339 nor Unix seconds", s)
	}
	return v, nil
}

// FromMarks pairs marks into named phases. A phase starts at a mark
// without --end and ends at the next --end mark of its name, or else at the
// next mark that starts any phase, or else at end (the recording's last
// poll). An --end mark with no phase of its name open is named in bad.
func FromMarks(marks []capture.Mark, end float64) (out []Phase, bad []string) {
	ms := slices.Clone(marks)
	slices.SortStableFunc(ms, func(a, b capture.Mark) int { return cmp.Compare(a.TNs, b.TNs) })
	// endMarked[i]: the next mark of ms[i]'s name is an end mark, so a
	// phase started at i is ended by it and not by the start of another.
	// One pass from the back: N log N in all with the sort (a scan per
	// open phase and start made 5,000 marks take 88 s).
	endMarked := make([]bool, len(ms))
	nextEnd := map[string]bool{}
	for i := len(ms) - 1; i >= 0; i-- {
		endMarked[i] = nextEnd[ms[i].Name]
		nextEnd[ms[i].Name] = ms[i].End
	}
	open := map[string]int{} // name → index in out
	var ending []int         // indices in out of open phases the next start ends, oldest first
	closeAt := func(name string, t float64, why string) {
		i := open[name]
		out[i].End = t
		out[i].Why += "; " + why
		delete(open, name)
	}
	for i, m := range ms {
		t := float64(m.TNs) / 1e9
		if m.End {
			if _, ok := open[m.Name]; !ok {
				bad = append(bad, fmt.Sprintf("an end mark of %q at %s with no such phase open", m.Name, m.Time))
				continue
			}
			closeAt(m.Name, t, "ended by its end mark at "+m.Time)
			continue
		}
		// A start ends every open phase that has no end mark of its own to
		// come (each such phase is in ending once).
		for _, j := range ending {
			// Ended since by its end mark or a restart, or restarted now.
			if k, ok := open[out[j].Name]; !ok || k != j || out[j].Name == m.Name {
				continue
			}
			closeAt(out[j].Name, t, "ended by the start of "+strconv.Quote(m.Name))
		}
		ending = ending[:0]
		if _, ok := open[m.Name]; ok {
			closeAt(m.Name, t, "ended by its own restart")
		}
		open[m.Name] = len(out)
		if !endMarked[i] {
			ending = append(ending, len(out))
		}
		out = append(out, Phase{Name: m.Name, Kind: KindNamed, Source: SourceMark, Start: t, End: math.Inf(1),
			Why: fmt.Sprintf("%s mark at %s", m.Source, m.Time)})
	}
	for _, i := range slices.Sorted(maps.Values(open)) {
		closeAt(out[i].Name, end, "open at the end of the recording")
	}
	out = slices.DeleteFunc(out, func(p Phase) bool { return !(p.End > p.Start) })
	return out, bad
}

// sameShare is the least share of the shorter of two phases of one name
// their overlap must cover for a file's and the marks' to be one phase.
const sameShare = 0.9

// OneSet joins the phases a file gives and those marked while recording:
// a marked phase of the name of a file's phase that overlaps it by at
// least sameShare of the shorter is that phase, listed once with the
// file's bounds (given explicitly) and the marks' offsets in its Why.
// The others stay, file's first.
func OneSet(file, marked []Phase) []Phase {
	out := slices.Clone(file)
	for _, m := range marked {
		i := slices.IndexFunc(out[:len(file)], func(f Phase) bool { return f.Name == m.Name && same(f, m) })
		// A marked phase no file phase matches is a phase of its own.
		if i < 0 {
			out = append(out, m)
			continue
		}
		out[i].Why = joinWhy(out[i].Why, fmt.Sprintf("marked too, %s at the start and %s at the end (%s)",
			offset(m.Start-out[i].Start), offset(m.End-out[i].End), m.Why))
	}
	return out
}

// same reports whether a and b overlap by at least sameShare of the
// shorter.
func same(a, b Phase) bool { return Same(a.Start, a.End, b.Start, b.End) }

// Same reports whether the stretches [a0, a1] and [b0, b1] are one phase:
// they overlap by at least 90 % of the shorter.
func Same(a0, a1, b0, b1 float64) bool {
	ov := min(a1, b1) - max(a0, b0)
	return ov > 0 && ov >= sameShare*min(a1-a0, b1-b0)
}

// offset says a signed time difference in milliseconds: "+13 ms".
func offset(d float64) string {
	return fmt.Sprintf("%+.0f ms", 1e3*d)
}

func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
