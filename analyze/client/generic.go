package client

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/redact"
)

// Generic fields.
const (
	fStart   = "start"
	fEnd     = "end"
	fFirst   = "first_token"
	fTTFT    = "ttft"
	fITL     = "itl"
	fE2E     = "e2e"
	fIn      = "input_tokens"
	fOut     = "output_tokens"
	fStatus  = "status"
	fError   = "error"
	fPhase   = "phase"
	fTarget  = "target"
	fUnknown = ""
)

// Fields is the generic format's fields, in the order they are listed.
var Fields = []string{fStart, fEnd, fFirst, fTTFT, fITL, fE2E, fIn, fOut, fStatus, fError, fPhase, fTarget}

var aliases = map[string]string{
	"start": fStart, "start_time": fStart, "request_start": fStart, "request_start_time": fStart, "timestamp": fStart,
	"end": fEnd, "end_time": fEnd, "request_end": fEnd, "request_end_time": fEnd,
	"first_token": fFirst, "first_token_time": fFirst,
	"ttft": fTTFT, "time_to_first_token": fTTFT,
	"itl": fITL, "inter_token_latency": fITL, "tpot": fITL,
	"e2e": fE2E, "latency": fE2E, "request_latency": fE2E, "e2e_latency": fE2E,
	"input_tokens": fIn, "prompt_tokens": fIn, "isl": fIn,
	"output_tokens": fOut, "completion_tokens": fOut, "osl": fOut,
	"status": fStatus, "error": fError, "error_msg": fError, "phase": fPhase, "stage": fPhase,
	"target": fTarget, "url": fTarget, "target_url": fTarget, "base_url": fTarget, "endpoint": fTarget, "server": fTarget,
}

func isTime(f string) bool     { return f == fStart || f == fEnd || f == fFirst }
func isDuration(f string) bool { return f == fTTFT || f == fITL || f == fE2E }

// column is a header's field and unit.
type column struct {
	field, unit string
}

// columns maps a header to fields; opt.Columns name columns for fields.
func columns(header []string, opt *Options) ([]column, error) {
	cols := make([]column, len(header))
	for field, name := range opt.Columns {
		if !slices.Contains(Fields, field) {
			return nil, fmt.Errorf("unknown field %q in the column map (fields: %s)", field, strings.Join(Fields, ", "))
		}
		i := slices.Index(header, name)
		if i < 0 {
			return nil, fmt.Errorf("no column %q for field %s in the header", name, field)
		}
		cols[i] = column{field, unitSuffix(name)}
	}
	seen := map[string]string{}
	for i, h := range header {
		if cols[i].field == fUnknown {
			base, unit := splitUnit(h)
			cols[i] = column{aliases[base], unit}
			if cols[i].field != fUnknown && opt.Columns[cols[i].field] != "" {
				cols[i].field = fUnknown // the map named another column for it
			}
		}
		f := cols[i].field
		if f == fUnknown {
			continue
		}
		if prev, ok := seen[f]; ok {
			return nil, fmt.Errorf("columns %q and %q both read as %s: name one in the column map", prev, h, f)
		}
		seen[f] = h
		if cols[i].unit == "" && isTime(f) {
			cols[i].unit = opt.TimeUnit
		}
		if cols[i].unit == "" && isDuration(f) {
			if opt.DurationUnit == "" {
				return nil, fmt.Errorf("column %q (%s) names no unit: call it %s_ms or %s_s, or give the duration unit", h, f, f, f)
			}
			cols[i].unit = opt.DurationUnit
		}
	}
	if _, ok := seen[fStart]; !ok {
		return nil, fmt.Errorf("no start column in %q (fields: %s; units by suffix _s, _ms, _us, _ns)", header, strings.Join(Fields, ", "))
	}
	return cols, nil
}

// unitSuffix is the unit a column name ends in (_s, _ms, _us, _ns), if any.
func unitSuffix(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, u := range []string{"_ns", "_us", "_ms", "_sec", "_seconds", "_s"} {
		if strings.HasSuffix(n, u) {
			return strings.TrimPrefix(u, "_")
		}
	}
	return ""
}

// splitUnit splits a unit suffix off a column name: ttft_ms → ttft, ms.
// A time column may say its clock before the unit: start_unix_ms,
// end_epoch_s, first_token_unix (→ start, ms; end, s; first_token, "").
func splitUnit(name string) (string, string) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, u := range []string{"", "_ns", "_us", "_ms", "_sec", "_seconds", "_s"} {
		base, ok := strings.CutSuffix(n, u)
		if !ok || base == "" {
			continue
		}
		if u != "" && aliases[base] != "" {
			return base, strings.TrimPrefix(u, "_")
		}
		for _, clock := range []string{"_unix", "_epoch"} {
			if b, ok := strings.CutSuffix(base, clock); ok && isTime(aliases[b]) {
				return b, strings.TrimPrefix(u, "_")
			}
		}
	}
	return n, ""
}

// genericRow reads one row's values against its columns.
func genericRow(cols []column, vals []string, opt *Options) (Request, error) {
	var r Request
	var e2e rate.Num
	var status, errText string
	hasStart := false
	for i, c := range cols {
		if c.field == fUnknown || i >= len(vals) {
			continue
		}
		v := strings.TrimSpace(vals[i])
		if v == "" || v == "null" {
			continue
		}
		switch {
		case isTime(c.field):
			t, err := genericTime(v, c.unit, opt)
			if err != nil {
				return r, fmt.Errorf("field %s: %w", c.field, err)
			}
			switch c.field {
			case fStart:
				r.Start, hasStart = t, true
			case fEnd:
				r.End = rate.Some(t)
			case fFirst:
				r.FirstToken = rate.Some(t)
			}
		case isDuration(c.field) || c.field == fIn || c.field == fOut:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				return r, fmt.Errorf("field %s: %q is not a number ≥ 0", c.field, v)
			}
			if isDuration(c.field) {
				k, ok := unitScale(c.unit)
				if !ok {
					return r, fmt.Errorf("field %s: unknown unit %q", c.field, c.unit)
				}
				x *= k
			}
			switch c.field {
			case fTTFT:
				r.TTFT = rate.Some(x)
			case fITL:
				r.ITL = rate.Some(x)
			case fE2E:
				e2e = rate.Some(x)
			case fIn:
				r.InputTokens = rate.Some(x)
			case fOut:
				r.OutputTokens = rate.Some(x)
			}
		case c.field == fStatus:
			status = v
		case c.field == fError:
			errText = v
		case c.field == fPhase:
			r.Phase = v
		case c.field == fTarget:
			r.Target = v
			if strings.Contains(v, "://") {
				r.Target = redact.URL(v)
			}
		}
	}
	if !hasStart {
		return r, fmt.Errorf("field start: empty")
	}
	if !r.End.Valid && e2e.Valid {
		r.End = rate.Some(r.Start + e2e.V)
	}
	if r.End.Valid && r.End.V < r.Start {
		return r, fmt.Errorf("ends before it starts")
	}
	switch {
	case r.FirstToken.Valid && !r.TTFT.Valid:
		r.TTFT = rate.Some(r.FirstToken.V - r.Start)
	case r.TTFT.Valid && !r.FirstToken.Valid:
		r.FirstToken = rate.Some(r.Start + r.TTFT.V)
	}
	if !r.ITL.Valid && r.End.Valid && r.FirstToken.Valid && r.OutputTokens.Valid && r.OutputTokens.V > 1 {
		r.ITL = rate.Some((r.End.V - r.FirstToken.V) / (r.OutputTokens.V - 1))
	}
	st, err := genericStatus(status, errText)
	if err != nil {
		return r, fmt.Errorf("field status: %w", err)
	}
	r.Status = st
	r.Error = redact.Text(errText)
	return r, nil
}

func genericStatus(s, errText string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		if errText != "" {
			return StatusError, nil
		}
		return StatusOK, nil
	case "ok", "success", "successful", "succeeded", "200", "true":
		return StatusOK, nil
	case "error", "errored", "failed", "failure", "false", "0":
		// "0": no HTTP response (a broken connection or stream; k6's and
		// the real runs' convention), the error text says why.
		return StatusError, nil
	case "cancelled", "canceled", "499":
		return StatusCancelled, nil
	case "incomplete", "timeout":
		return StatusIncomplete, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 100 && n < 600 {
		return StatusError, nil
	}
	return "", fmt.Errorf("%q is not a status (ok, error, cancelled, incomplete, or an HTTP code)", s)
}

// genericTime reads a time: a number in unit (by magnitude when ""), or a
// written time; a monotonic reading only with an anchor.
func genericTime(v, unit string, opt *Options) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return timeString(v, opt.TZ)
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("time %q is not a number", v)
	}
	if a := opt.Anchor; a != nil {
		if unit == "" {
			unit = "s"
		}
		k, ok := unitScale(unit)
		if !ok {
			return 0, fmt.Errorf("unknown time unit %q", unit)
		}
		return a.Epoch + (x*k - a.Mono), nil
	}
	return epochSeconds(x, unit)
}

// genericTimeBase describes the time base of a generic file.
func genericTimeBase(cols []column, opt *Options) string {
	var parts []string
	for _, c := range cols {
		if c.field == fUnknown {
			continue
		}
		u := c.unit
		switch {
		case isTime(c.field) && opt.Anchor != nil:
			u = fmt.Sprintf("monotonic %s, anchored: %g ↔ %s", orStr(u, "s"), opt.Anchor.Mono, Stamp(opt.Anchor.Epoch))
		case isTime(c.field) && u == "":
			u = "epoch, unit by magnitude (or RFC 3339)"
		case isTime(c.field):
			u = "epoch " + u
		case !isDuration(c.field):
			continue
		}
		parts = append(parts, c.field+": "+u)
	}
	return strings.Join(parts, "; ")
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func genericMeta(format string) Meta {
	return Meta{Tool: "generic", Level: LevelRequests, Schema: format + " with a header naming the columns", Aligned: "by each request's epoch time"}
}

// readGenericCSV reads a CSV with a header row.
func readGenericCSV(data []byte, file string, opt *Options) (*Run, error) {
	run := &Run{Meta: genericMeta("CSV")}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, csvErr(file, err)
	}
	cols, err := columns(header, opt)
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w", file, err)
	}
	run.Meta.TimeBase = genericTimeBase(cols, opt)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, the header has %d", file, line, len(rec), len(header))
		}
		r, err := genericRow(cols, rec, opt)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		r.Line = line
		run.Requests = append(run.Requests, r)
	}
	return run, nil
}

func csvErr(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %w", file, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", file, err)
}

// readGenericJSONL reads one JSON object a line; the first line's keys
// (and every later line's) name the columns.
func readGenericJSONL(data []byte, file string, opt *Options) (*Run, error) {
	run := &Run{Meta: genericMeta("JSONL")}
	var header []string
	var cols []column
	changed := false
	err := eachLine(data, run, func(line []byte, n int) error {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			return lineErr(file, n, err)
		}
		if obj == nil {
			return lineErr(file, n, fmt.Errorf("not a JSON object"))
		}
		keys := slices.Sorted(maps.Keys(obj))
		if cols == nil || !slices.Equal(keys, header) {
			c, err := columns(keys, opt)
			if err != nil {
				return lineErr(file, n, err)
			}
			if cols != nil && !changed {
				changed = true
				run.note("line %d: the keys change (each line's own keys name its columns)", n)
			}
			header, cols = keys, c
		}
		vals := make([]string, len(keys))
		for i, k := range keys {
			switch v := obj[k].(type) {
			case nil:
			case string:
				vals[i] = v
			case json.Number:
				vals[i] = v.String()
			case bool:
				vals[i] = strconv.FormatBool(v)
			default:
				if cols[i].field != fUnknown {
					return lineErr(file, n, fmt.Errorf("field %s: not a number or string", cols[i].field))
				}
			}
		}
		r, err := genericRow(cols, vals, opt)
		if err != nil {
			return lineErr(file, n, err)
		}
		r.Line = n
		run.Requests = append(run.Requests, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cols != nil {
		run.Meta.TimeBase = genericTimeBase(cols, opt)
	}
	return run, nil
}
