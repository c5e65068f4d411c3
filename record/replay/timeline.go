package replay

import (
	"sort"
	"time"
)

// Clock maps wall time onto the recording's timeline: at wall time t the
// recording's time is Rec + (t − Wall)·Speed, wrapped every Period of
// recording time when Period > 0 (a loop).
type Clock struct {
	Wall   time.Time // the wall instant of recording time Rec
	Rec    int64     // Unix ns in the recording
	Speed  float64   // recording seconds per wall second; 0 means 1
	Period int64     // loop length in recording ns; 0 plays once
}

// At is the recording time (Unix ns) at wall time t. Before Wall it is Rec.
func (c Clock) At(t time.Time) int64 {
	d := max(float64(t.Sub(c.Wall)), 0) * c.speed()
	// Past the int64 range the recording has long ended: hold its end.
	if d > 1<<62 {
		d = 1 << 62
	}
	off := int64(d)
	if c.Period > 0 {
		off %= c.Period
	}
	return c.Rec + off
}

// WallDur is the wall duration of d of recording time.
func (c Clock) WallDur(d int64) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(float64(d) / c.speed())
}

func (c Clock) speed() float64 {
	if c.Speed <= 0 {
		return 1
	}
	return c.Speed
}

// pick is the index of the answer in force at recording time r: the latest
// whose request was sent at or before r. Before the first it is the first
// (the earliest state known); after the last, the last holds.
func pick(as []Answer, r int64) int {
	i := sort.Search(len(as), func(i int) bool { return as[i].At > r })
	return max(i-1, 0)
}

// loopPeriod is the length of one pass of a looping replay: the recording's
// span plus one mean spacing of its densest endpoint, so that the last
// answer is served as long as the others before the first comes again.
func (rec *Recording) loopPeriod() int64 {
	span := rec.End - rec.Start
	n := 0
	for _, t := range rec.Targets {
		for _, ep := range t.Endpoints {
			n = max(n, len(ep.Answers))
		}
	}
	// A single answer per endpoint has no spacing: a pass of one second.
	if n < 2 || span <= 0 {
		return max(span, int64(time.Second))
	}
	return span + span/int64(n-1)
}
