package expo

import (
	"bytes"
	"errors"
	"fmt"
)

// Limits bound what parsing one page may cost. A page of a million series
// (40 MB) becomes about a gigabyte of parser objects and samples; a page
// over a limit is refused by a pre-scan that costs a pass over its bytes,
// before expfmt sees it. A zero field is no limit.
type Limits struct {
	// MaxSeries bounds the sample lines of a page (a histogram bucket is a
	// line of its own).
	MaxSeries int
	// MaxLabelValueBytes bounds one label value, as written (escapes
	// included).
	MaxLabelValueBytes int
	// MaxLabelBytes bounds the label sets of a whole page: the bytes between
	// the braces of every sample line, braces included.
	MaxLabelBytes int64
}

// ErrOverLimit is what the error of a page over one of its Limits is
// (errors.Is).
var ErrOverLimit = errors.New("over a parse limit")

// limitError says which limit a page is over and by how much.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrOverLimit }

func overLimit(format string, args ...any) error {
	return &limitError{fmt.Sprintf(format, args...) + "; body stored unparsed"}
}

// Check pre-scans body against l without parsing it. It counts lines, not
// syntax: a malformed page within the limits passes, and the parser then
// says what is wrong with it.
func (l Limits) Check(body []byte) error {
	if l == (Limits{}) {
		return nil
	}
	var series int
	var labelBytes int64
	for rest := body; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		series++
		open := bytes.IndexByte(line, '{')
		if open < 0 {
			continue
		}
		end := bytes.LastIndexByte(line, '}')
		if end < open {
			end = len(line) - 1 // unclosed: the parser will say so
		}
		n := end - open + 1
		labelBytes += int64(n)
		if l.MaxLabelValueBytes > 0 && n > l.MaxLabelValueBytes {
			// Only a label set longer than the value limit can hold a value
			// over it: only those are looked into.
			if v := longestValue(line[open : end+1]); v > l.MaxLabelValueBytes {
				return overLimit("label value too long: %d bytes > %d (max_label_value_bytes)", v, l.MaxLabelValueBytes)
			}
		}
	}
	if l.MaxSeries > 0 && series > l.MaxSeries {
		return overLimit("too many series: %d > %d (max_series)", series, l.MaxSeries)
	}
	if l.MaxLabelBytes > 0 && labelBytes > l.MaxLabelBytes {
		return overLimit("too many label bytes: %d > %d (max_label_bytes)", labelBytes, l.MaxLabelBytes)
	}
	return nil
}

// longestValue is the length of the longest quoted string in a label set
// {k="v",...}, escapes included.
func longestValue(set []byte) int {
	longest := 0
	for i := 0; i < len(set); i++ {
		if set[i] != '"' {
			continue
		}
		start := i + 1
		for i = start; i < len(set) && set[i] != '"'; i++ {
			if set[i] == '\\' {
				i++
			}
		}
		longest = max(longest, min(i, len(set))-start)
	}
	return longest
}
