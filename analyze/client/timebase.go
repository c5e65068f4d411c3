package client

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// errLocalTime is wrapped by the error of a local time without a zone.
var errLocalTime = errors.New("local time without a zone: give its zone (Options.TZ, --client-tz)")

// errMonotonic is wrapped by the error of a monotonic time without an anchor.
var errMonotonic = errors.New("monotonic clock with an arbitrary origin: give an anchor (a monotonic reading and the Unix time it was taken at)")

// unitScale is the number of seconds in one unit of time.
func unitScale(unit string) (float64, bool) {
	switch unit {
	case "s", "sec", "seconds":
		return 1, true
	case "ms":
		return 1e-3, true
	case "us", "µs":
		return 1e-6, true
	case "ns":
		return 1e-9, true
	}
	return 0, false
}

// Epoch magnitudes: a Unix time between 2001-09-09 and 2286-11-20 is
// [1e9, 1e10) in seconds, and 1e3, 1e6 and 1e9 times that in ms, µs, ns.
// Outside these ranges a number's unit is not told by its size.
var epochRanges = []struct {
	unit   string
	lo, hi float64
}{{"s", 1e9, 1e10}, {"ms", 1e12, 1e13}, {"us", 1e15, 1e16}, {"ns", 1e18, 1e19}}

// epochUnit is the unit of the epoch time v told by its magnitude alone.
func epochUnit(v float64) (string, error) {
	for _, r := range epochRanges {
		if v >= r.lo && v < r.hi {
			return r.unit, nil
		}
	}
	if v >= 0 && v < 1e9 {
		return "", fmt.Errorf("time %s is too small for a Unix time in any unit (a monotonic clock or an offset from the run's start?): %w",
			num(v), errMonotonic)
	}
	return "", fmt.Errorf("time %s is no Unix time in s, ms, µs or ns after 2001: give the unit", num(v))
}

// epochSeconds converts the epoch time v in unit ("" = by magnitude) to
// Unix seconds.
func epochSeconds(v float64, unit string) (float64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("time %v is not a number", v)
	}
	if unit == "" {
		u, err := epochUnit(v)
		if err != nil {
			return 0, err
		}
		unit = u
	}
	k, ok := unitScale(unit)
	if !ok {
		return 0, fmt.Errorf("unknown time unit %q (s, ms, us, ns)", unit)
	}
	s := v * k
	// A time before 2001 in a stated unit is as suspect as one by size:
	// an offset or a monotonic clock read as the epoch.
	if s < 1e9 || s >= 1e10 {
		return 0, fmt.Errorf("time %s %s is not a Unix time after 2001: %w", num(v), unit, errMonotonic)
	}
	return s, nil
}

var zoned = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999 -0700"}

var local = []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "20060102-150405"}

// timeString reads a written time: RFC 3339 with a zone, or a local time
// without one only when tz is given.
func timeString(s string, tz *time.Location) (float64, error) {
	s = strings.TrimSpace(s)
	for _, l := range zoned {
		if t, err := time.Parse(l, s); err == nil {
			return unix(t), nil
		}
	}
	for _, l := range local {
		if _, err := time.Parse(l, s); err != nil {
			continue
		}
		if tz == nil {
			return 0, fmt.Errorf("%q: %w", s, errLocalTime)
		}
		t, _ := time.ParseInLocation(l, s, tz)
		return unix(t), nil
	}
	return 0, fmt.Errorf("%q is not a time (RFC 3339, or a number with its unit)", s)
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// stamp formats Unix seconds as RFC 3339 UTC to the millisecond.
func stamp(t float64) string {
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC().Format("2006-01-02T15:04:05.000Z")
}

func num(x float64) string { return fmt.Sprintf("%.6g", x) }
