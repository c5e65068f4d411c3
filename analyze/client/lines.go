package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// eachLine calls fn with each non-blank line of data and its 1-based
// number; blank lines inside the data are counted as skipped. It stops at
// the first error fn returns.
func eachLine(data []byte, run *Run, fn func(line []byte, n int) error) error {
	n := 0
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			// A final newline ends the last line; a blank line elsewhere
			// holds nothing, and is counted.
			if len(data) > 0 {
				run.skip("blank line", n)
			}
			continue
		}
		if err := fn(bytes.TrimRight(line, "\r"), n); err != nil {
			return err
		}
	}
	return nil
}

// lineErr names file and line, and the column of a JSON error inside it.
func lineErr(file string, n int, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s:%d:%d: %w", file, n, se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s:%d:%d: field %s: %w", file, n, te.Offset, te.Field, err)
	}
	return fmt.Errorf("%s:%d: %w", file, n, err)
}

// docErr names file, line and column of a JSON error in a whole document.
func docErr(file string, data []byte, err error) error {
	var off int64 = -1
	field := ""
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off, field = te.Offset, " field "+te.Field+":"
	}
	if off < 0 || off > int64(len(data)) {
		return fmt.Errorf("%s: %w", file, err)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Errorf("%s:%d:%d:%s %w", file, line, col, field, err)
}

// nsSeconds converts epoch nanoseconds to Unix seconds without the
// rounding of a float64 of the whole count.
func nsSeconds(ns int64) float64 {
	return float64(ns/1e9) + float64(ns%1e9)/1e9
}

// jsonInt reads a JSON number as an int64 exactly (AIPerf's epoch ns do
// not fit a float64).
func jsonInt(raw json.RawMessage) (int64, bool, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, false, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s is not a number", s)
	}
	return int64(f), true, nil
}
