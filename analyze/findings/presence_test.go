package findings

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
)

// A target discovery removed and added back is away, not in a gap: its
// leave and its join are incidents; one that joined late is absent before
// it joined. The fleet's points name the absent (out of the total, neither
// live nor missing) and its summary counts the joins and leaves.
func TestPresenceJoinLeave(t *testing.T) {
	c := newTarget("c", engine.VLLM)
	c.series(1000, 0, rep(10, 20)...)
	c.t.Presence = []Presence{{Join: 999.9, AtStart: true}}
	d := newTarget("d", engine.VLLM)
	d.series(1000, 0, 10, 10)
	d.series(1010, 100, rep(10, 10)...)
	d.t.Presence = []Presence{{Join: 999.9, AtStart: true, Leave: 1002.5}, {Join: 1009.5, URL: "http://10.0.0.9:8000/metrics"}}
	e := newTarget("e", engine.VLLM)
	e.series(1005, 0, rep(10, 15)...)
	e.t.Presence = []Presence{{Join: 1004.5}}
	f := run(c, d, e)

	got := kinds(f)
	if slices.Contains(got, KindGap+"/d") || slices.Contains(got, KindHostStall+"/") {
		t.Errorf("an absence taken for a gap: %v", got)
	}
	want := []string{KindTargetLeave + "/d", KindTargetJoin + "/e", KindTargetJoin + "/d"}
	var pres []string
	for _, in := range f.Incidents {
		if in.Kind == KindTargetJoin || in.Kind == KindTargetLeave {
			pres = append(pres, in.Kind+"/"+string(in.Target))
		}
	}
	if !slices.Equal(pres, want) {
		t.Errorf("presence incidents %v, want %v (all: %v)", pres, want, got)
	}
	back := incidentAt(t, f, KindTargetJoin, "d")
	if back.T.V != 1009.5 || !strings.Contains(back.Detail, "at http://10.0.0.9:8000/metrics") || !strings.Contains(back.Detail, "back after 7 s away") {
		t.Errorf("d's return %+v", back)
	}

	at := func(ts float64) FleetPoint {
		for _, p := range f.Fleet.Polls {
			if math.Abs(p.T-ts) < 0.05 {
				return p
			}
		}
		t.Fatalf("no fleet point at %v", ts)
		return FleetPoint{}
	}
	// Before e joined: e absent, c and d live.
	if p := at(1001); p.Total != 2 || p.Live != 2 || !slices.Equal(p.Absent, []string{"e"}) || len(p.Missing) != 0 {
		t.Errorf("at 1001: %+v", p)
	}
	// d away: absent, not down; the total is c and e.
	if p := at(1007); p.Total != 2 || p.Live != 2 || !slices.Equal(p.Absent, []string{"d"}) || p.Decode.V != 20 {
		t.Errorf("at 1007: %+v", p)
	}
	if p := at(1011); p.Total != 3 || p.Live != 3 || len(p.Absent) != 0 {
		t.Errorf("at 1011: %+v", p)
	}
	if s := f.Fleet.Summary; s.Joins != 2 || s.Leaves != 1 || s.AbsentPoints == 0 || s.AllLive != s.Points {
		t.Errorf("summary %+v", s)
	}

	// Without its presence the same rows are a gap: the absence is what
	// tells them apart.
	d.t.Presence, e.t.Presence, c.t.Presence = nil, nil, nil
	if got := kinds(run(c, d, e)); !slices.Contains(got, KindGap+"/d") {
		t.Errorf("without presence: %v", got)
	}
}
