package live_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/live"
	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// generated writes the simulator's default scenario (a load, a stall, a
// restart, at 1 s) into a folder.
func generated(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := record.WriteGenerated(dir, sim.DefaultScenario(), sim.GenerateOptions{Interval: time.Second}, 0, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// At every instant of the recording, each target's line holds the cells
// analyze publishes for its last poll up to that instant: the same
// values, windows and reasons (one estimator, not a second).
func TestFrameEqualsAnalyze(t *testing.T) {
	dir := generated(t)
	full, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	start := sim.DefaultStart
	checked := 0
	for _, at := range []time.Duration{3 * time.Second, 9 * time.Second, 14500 * time.Millisecond, 21 * time.Second, 40 * time.Second} {
		until := start.Add(at).UnixNano()
		f, err := live.Read(live.Options{Dir: dir, Until: until})
		if err != nil {
			t.Fatal(err)
		}
		for _, lt := range f.Targets {
			// The frame's last poll is analyze's poll of the same instant,
			// and no poll analyze has before the instant is later.
			var want *analyze.Poll
			before := 0.0
			for i := range full.Targets {
				if full.Targets[i].Name != lt.Name {
					continue
				}
				for j := range full.Targets[i].Polls {
					p := &full.Targets[i].Polls[j]
					if p.T == lt.LastPoll {
						want = p
					}
					if p.T*1e9 <= float64(until) {
						before = p.T
					}
				}
			}
			if want == nil {
				t.Fatalf("at %v: %s's last poll %v is not in analyze's answer", at, lt.Name, lt.LastPoll)
			}
			if lt.LastPoll < before {
				t.Errorf("at %v: %s's last poll %v, analyze has one at %v", at, lt.Name, lt.LastPoll, before)
			}
			for name, got := range map[string]engine.Cell{engine.DecodeTokensPerSecond: lt.Decode, engine.PromptTokensPerSecond: lt.Prompt,
				engine.RequestsRunning: lt.Running, engine.RequestsWaiting: lt.Waiting, engine.KVCacheUsageRatio: lt.KV, lt.TTFTOf: lt.TTFT, lt.ITLOf: lt.ITL} {
				c, _ := want.Cells.Get(name)
				if got.Value != c.Value || got.Window != c.Value && got.Window != c.Window || got.Reason != c.Reason || got.Source != c.Source {
					t.Errorf("at %v: %s %s = %+v, analyze says %+v", at, lt.Name, name, got.Cell, c.Cell)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("nothing compared")
	}
}

// Frames replayed through the default scenario show the vLLM engine busy
// under load, stalled in its stall (13-16 s) and its restart (20 s) from
// the poll after it on, never before.
func TestFrameStates(t *testing.T) {
	dir := generated(t)
	at := func(d time.Duration) *live.Frame {
		f, err := live.Read(live.Options{Dir: dir, Until: sim.DefaultStart.Add(d).UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	vllm := func(f *live.Frame) live.Target {
		for _, x := range f.Targets {
			if x.Name == "vllm-0" {
				return x
			}
		}
		t.Fatal("no vllm-0")
		return live.Target{}
	}
	if got := vllm(at(10 * time.Second)); got.State != live.StateBusy || !got.Decode.Value.Valid || got.Decode.Value.V < 1000 {
		t.Errorf("at 10 s: %s (%s), decode %+v; want busy above 1000 tokens/s", got.State, got.Why, got.Decode.Value)
	}
	if got := vllm(at(10 * time.Second)); got.KVBand != live.BandWarn {
		t.Errorf("at 10 s KV %+v is %q, want warn (0.92)", got.KV.Value, got.KVBand)
	}
	if got := vllm(at(16500 * time.Millisecond)); got.State != live.StateStalled {
		t.Errorf("at 16.5 s: %s (%s), want stalled", got.State, got.Why)
	}
	if got := vllm(at(19500 * time.Millisecond)); got.State == live.StateStalled || got.Restart.Valid {
		t.Errorf("at 19.5 s: %s, restart %+v; want neither stalled nor restarted", got.State, got.Restart)
	}
	f := at(23 * time.Second)
	got := vllm(f)
	if !got.Restart.Valid || got.Restart.V < float64(sim.DefaultStart.Add(18*time.Second).Unix()) || got.Restart.V > float64(sim.DefaultStart.Add(21*time.Second).Unix()) {
		t.Errorf("at 23 s: restart %+v, want between 18 and 21 s", got.Restart)
	}
	n := 0
	for _, in := range f.Incidents {
		if in.Kind == findings.KindRestart && in.Target == "vllm-0" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("at 23 s: %d restart incidents of vllm-0, want 1", n)
	}
}

// A named phase is the one marked open at the frame's instant.
func TestFramePhase(t *testing.T) {
	dir := generated(t)
	at := func(d time.Duration) int64 { return sim.DefaultStart.Add(d).UnixNano() }
	ms := []capture.Mark{{Name: "warm", TNs: at(2 * time.Second)}, {Name: "load", TNs: at(8 * time.Second)}, {Name: "load", End: true, TNs: at(12 * time.Second)}}
	for _, m := range ms {
		if _, err := capture.AppendMark(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		at   time.Duration
		want string
	}{{time.Second, ""}, {5 * time.Second, "warm"}, {9 * time.Second, "load"}, {13 * time.Second, ""}} {
		f, err := live.Read(live.Options{Dir: dir, Until: at(c.at)})
		if err != nil {
			t.Fatal(err)
		}
		if f.Phase != c.want {
			t.Errorf("at %v: phase %q, want %q", c.at, f.Phase, c.want)
		}
	}
}

// A Reader that follows the recording frame after frame (reading only what
// is new each time) makes the frames Read makes reading everything: the
// same lines, cells and incidents at every instant.
func TestReaderEqualsRead(t *testing.T) {
	dir := generated(t)
	r, err := live.NewReader(live.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, at := range []time.Duration{2 * time.Second, 7 * time.Second, 13500 * time.Millisecond, 16 * time.Second, 21 * time.Second, 25 * time.Second, 40 * time.Second} {
		until := sim.DefaultStart.Add(at).UnixNano()
		got, err := r.Frame(until)
		if err != nil {
			t.Fatal(err)
		}
		if want, same := readEquals(t, dir, until, got); !same {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			t.Errorf("at %v the Reader's frame differs from Read's:\n%s\n%s", at, gj, wj)
		}
	}
}

// A Reader that follows a longer recording second by second (past the
// point where its findings stop re-reading the polls behind them:
// findings.Follow) makes the frames Read makes from scratch, across the
// engines' restarts, hangs (engine stalls), stale, slow and failing
// windows and a label join.
func TestReaderEqualsReadLong(t *testing.T) {
	const d = 6 * time.Minute
	dir := t.TempDir()
	sc := sim.LongScenario(6, d, 3)
	// Two engine stalls: requests in the batch, no token out, for 6 s.
	for _, at := range []time.Duration{100 * time.Second, 250 * time.Second} {
		e := &sc.Engines[0]
		i := 0
		for i+1 < len(e.Phases) && e.Phases[i+1].At <= at {
			i++
		}
		busy := e.Phases[i]
		busy.Idle, busy.DecodeTPS, busy.PromptTPS, busy.Running = false, 2000, 6000, 32
		stall := sim.Phase{At: at, Running: 32, Waiting: 4, KVUsage: -1}
		busy.At, stall.At = at-20*time.Second, at
		after := busy
		after.At = at + 6*time.Second
		e.Phases = slices.Insert(e.Phases, i+1, busy, stall, after)
		slices.SortStableFunc(e.Phases, func(a, b sim.Phase) int { return cmp.Compare(a.At, b.At) })
	}
	if _, err := record.WriteGenerated(dir, sc, sim.GenerateOptions{Interval: time.Second, Duration: d, Seed: 3}, 0, nil); err != nil {
		t.Fatal(err)
	}
	// Levels of a sweep, one ended by its end mark.
	for _, m := range []capture.Mark{{Name: "warmup", TNs: 30}, {Name: "c1", TNs: 60}, {Name: "c2", TNs: 150}, {Name: "c2", End: true, TNs: 250}, {Name: "c3", TNs: 270}} {
		m.TNs = sim.DefaultStart.Add(time.Duration(m.TNs) * time.Second).UnixNano()
		if _, err := capture.AppendMark(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	r, err := live.NewReader(live.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kinds, levels := map[string]bool{}, map[string]bool{}
	compared := 0
	for at := time.Second; at <= d+5*time.Second; at += time.Second {
		until := sim.DefaultStart.Add(at).UnixNano()
		got, err := r.Frame(until)
		if err != nil {
			t.Fatal(err)
		}
		// Every 7 s, and the last: a prime step, landing on every phase of the cut.
		if at%(7*time.Second) != 0 && at < d {
			continue
		}
		want, same := readEquals(t, dir, until, got)
		if !same {
			t.Fatalf("at %v the Reader's frame differs from Read's:\n%s", at, firstDiff(got, want))
		}
		compared++
		levels[want.Level.Name] = true
		for _, in := range want.Incidents {
			kinds[in.Kind] = true
		}
	}
	if len(levels) != 4 {
		t.Errorf("levels compared %v, want none, c1, c2, c3", levels)
	}
	for _, k := range []string{findings.KindRestart, findings.KindEngineStall, findings.KindLabelJoin, findings.KindRefused} {
		if !kinds[k] {
			t.Errorf("no %s incident in the frames compared (%d): the test does not cover it", k, compared)
		}
	}
}

// readEquals reads the folder whole up to until (live.Read) and says
// whether that frame's JSON is got's.
func readEquals(t *testing.T, dir string, until int64, got *live.Frame) (*live.Frame, bool) {
	t.Helper()
	want, err := live.Read(live.Options{Dir: dir, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	return want, string(gj) == string(wj)
}

// firstDiff says where two frames first differ: a target's line, the
// fleet, or an incident.
func firstDiff(got, want *live.Frame) string {
	js := func(x any) string { b, _ := json.Marshal(x); return string(b) }
	for i := range min(len(got.Targets), len(want.Targets)) {
		if g, w := js(got.Targets[i]), js(want.Targets[i]); g != w {
			return "target " + got.Targets[i].Name + ":\n" + g + "\n" + w
		}
	}
	if g, w := js(got.Fleet), js(want.Fleet); g != w {
		return "fleet:\n" + g + "\n" + w
	}
	for i := range max(len(got.Incidents), len(want.Incidents)) {
		var g, w string
		if i < len(got.Incidents) {
			g = js(got.Incidents[i])
		}
		if i < len(want.Incidents) {
			w = js(want.Incidents[i])
		}
		if g != w {
			return fmt.Sprintf("incident %d of %d/%d:\n%s\n%s", i, len(got.Incidents), len(want.Incidents), g, w)
		}
	}
	return js(got) + "\n" + js(want)
}

// The sweep level under way is the named phase open (a warmup is none),
// numbered among those marked so far, and its offered load is the mean
// running + waiting over its polls as analyze publishes them, summed over
// the targets.
func TestFrameLevel(t *testing.T) {
	dir := generated(t)
	at := func(d time.Duration) int64 { return sim.DefaultStart.Add(d).UnixNano() }
	for _, m := range []capture.Mark{{Name: "warmup", TNs: at(time.Second)}, {Name: "low", TNs: at(3 * time.Second)},
		{Name: "high", TNs: at(8 * time.Second)}, {Name: "high", End: true, TNs: at(18 * time.Second)}} {
		if _, err := capture.AppendMark(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	full, err := analyze.Analyze(analyze.Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	// offered is the sum over targets of the gauges' means over their
	// polls from a to the frame's last.
	offered := func(a time.Duration, f *live.Frame) (float64, int) {
		sum, polls := 0.0, 0
		for i := range full.Targets {
			last := 0.0
			for _, lt := range f.Targets {
				if lt.Name == full.Targets[i].Name {
					last = lt.LastPoll
				}
			}
			var run, wait float64
			var nr, nw int
			for j := range full.Targets[i].Polls {
				p := &full.Targets[i].Polls[j]
				if p.T*1e9 < float64(at(a)) || p.T > last {
					continue
				}
				polls++
				if c, _ := p.Cells.Get(engine.RequestsRunning); c.Value.Valid {
					run, nr = run+c.Value.V, nr+1
				}
				if c, _ := p.Cells.Get(engine.RequestsWaiting); c.Value.Valid {
					wait, nw = wait+c.Value.V, nw+1
				}
			}
			if nr > 0 {
				sum += run / float64(nr)
				if nw > 0 {
					sum += wait / float64(nw)
				}
			}
		}
		return sum, polls
	}
	for _, c := range []struct {
		at        time.Duration
		name      string
		index, of int
		from      time.Duration
	}{{500 * time.Millisecond, "", 0, 0, 0}, {2 * time.Second, "", 0, 0, 0}, {5 * time.Second, "low", 1, 1, 3 * time.Second},
		{12 * time.Second, "high", 2, 2, 8 * time.Second}, {20 * time.Second, "", 0, 2, 0}} {
		f, err := live.Read(live.Options{Dir: dir, Until: at(c.at)})
		if err != nil {
			t.Fatal(err)
		}
		l := f.Level
		if l.Name != c.name || l.Index != c.index || l.Of != c.of {
			t.Errorf("at %v: level %q %d/%d, want %q %d/%d (%s)", c.at, l.Name, l.Index, l.Of, c.name, c.index, c.of, l.Reason)
		}
		if c.name == "" {
			if l.Offered.Valid || l.Reason == "" {
				t.Errorf("at %v: no level, but offered %+v, reason %q", c.at, l.Offered, l.Reason)
			}
			continue
		}
		want, polls := offered(c.from, f)
		if !l.Offered.Valid || math.Abs(l.Offered.V-want) > 1e-9*want || l.Polls != polls || l.OfferedOf != 2 {
			t.Errorf("at %v: offered %+v over %d polls of %d targets, want %v over %d of 2", c.at, l.Offered, l.Polls, l.OfferedOf, want, polls)
		}
	}
}
