package engine

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/sim"
)

// decodeConfigs are the configurations the findings run decode-only
// trackers under: the interval replay's (every gate off) and a
// counterfactual span's.
var decodeConfigs = []rate.Config{
	{Span: 1e-6, MinWindow: -1, CeilingFactor: -1, JumpFactor: -1, JumpFloor: -1, StaleFraction: -1},
	{Span: 2},
	{Span: 10},
}

// pair feeds the same polls to a full tracker and a decode-only one under
// the same engine and configuration, and fails at the first poll whose
// decode cells differ in anything.
type pair struct {
	what       string
	full, only *Tracker
	a, b       Cells
	polls      int
	valued     int // polls whose decode cell had a value
}

func newPair(what, id string, cfg rate.Config) *pair {
	p := &pair{what: what, full: NewTracker(id, cfg), only: NewTracker(id, cfg)}
	p.only.DecodeOnly()
	return p
}

func (p *pair) poll(t *testing.T, T float64, ss []expo.Sample) {
	t.Helper()
	what := p.what
	p.a = p.full.ObserveSamples(T, T-0.01, ss, p.a)
	p.b = p.only.ObserveSamples(T, T-0.01, ss, p.b)
	p.polls++
	fc, ok := p.a.Get(DecodeTokensPerSecond)
	if !ok {
		t.Fatalf("%s poll %d: the full tracker has no decode cell", what, p.polls)
	}
	if len(p.b) != 1 || p.b[0].Name != DecodeTokensPerSecond {
		t.Fatalf("%s poll %d: decode-only cells %+v", what, p.polls, p.b)
	}
	if !reflect.DeepEqual(fc, p.b[0].Cell) {
		t.Fatalf("%s poll %d: full decode cell %+v, decode-only %+v", what, p.polls, fc, p.b[0].Cell)
	}
	if fc.Value.Valid {
		p.valued++
	}
}

// multi is a pair per findings configuration, and a tracker replaying
// them all at once (DecodeUnder) whose cells must be the decode-only
// trackers'.
type multi struct {
	pairs []*pair
	all   *Tracker
	cells Cells
}

func newMulti(what, id string) *multi {
	m := &multi{all: NewTracker(id, decodeConfigs[0])}
	m.all.DecodeUnder(decodeConfigs[1:]...)
	for ci, cfg := range decodeConfigs {
		m.pairs = append(m.pairs, newPair(fmt.Sprintf("%s config %d", what, ci), id, cfg))
	}
	return m
}

func (m *multi) poll(t *testing.T, T float64, ss []expo.Sample) {
	t.Helper()
	for _, p := range m.pairs {
		p.poll(t, T, ss)
	}
	m.cells = m.all.ObserveSamples(T, T-0.01, ss, m.cells)
	if len(m.cells) != len(m.pairs) {
		t.Fatalf("%s poll %d: DecodeUnder gave %d cells, want %d", m.pairs[0].what, m.pairs[0].polls, len(m.cells), len(m.pairs))
	}
	for i, p := range m.pairs {
		if m.cells[i].Name != DecodeTokensPerSecond || !reflect.DeepEqual(m.cells[i].Cell, p.b[0].Cell) {
			t.Fatalf("%s poll %d: DecodeUnder's cell %+v, the decode-only tracker's %+v", p.what, p.polls, m.cells[i], p.b[0].Cell)
		}
	}
}

// A decode-only tracker's decode cell is the full tracker's, field for
// field, on every real capture moved poll after poll (with a counter
// restart and an empty poll on the way) and under each configuration the
// findings use; a tracker replaying every configuration at once
// (DecodeUnder) gives each the same cell.
func TestDecodeOnlyRealCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realCaptures, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s (the shared folder is absent)", realCaptures)
	}
	engines := map[string]bool{}
	for _, f := range files {
		page := readCapture(t, f)
		det := NewTracker("", rate.Config{})
		det.ObserveSamples(1000, 999.99, page, nil)
		id, _ := det.Engine()
		engines[id] = true
		what := fmt.Sprintf("%s (%s)", filepath.Base(f), id)
		ss := append([]expo.Sample(nil), page...)
		base := make([]float64, len(ss))
		for j := range ss {
			base[j] = ss[j].Value
		}
		m := newMulti(what, id)
		for i := range 40 {
			T := 1000 + 2*float64(i) + 0.001*float64(i%3)
			switch i {
			case 20: // a restart: every counter back near zero
				for j := range ss {
					if ss[j].Type != "gauge" {
						ss[j].Value = float64(j % 3)
					}
				}
			case 30: // an empty poll
				m.poll(t, T, nil)
				continue
			default:
				advancePage(ss, base, i)
			}
			m.poll(t, T, ss)
		}
	}
	for _, id := range []string{VLLM, LlamaCpp, SGLang, TGI, TRTLLM} {
		if !engines[id] {
			t.Errorf("no real capture of %s was checked (engines seen: %v)", id, engines)
		}
	}
}

// The same on the simulator's engines: the built-in scenario (load edges,
// a stall, a hang, a restart, a label join, stale and failing answers) and
// a long one, polled as the recorder would.
func TestDecodeOnlySimulator(t *testing.T) {
	strictFeeds = false // the simulator's bodies carry families no cell reads
	defer func() { strictFeeds = true }()
	for _, sc := range []struct {
		sc    *sim.Scenario
		every time.Duration
	}{
		{sim.DefaultScenario(), time.Second},
		{sim.LongScenario(4, 10*time.Minute, 7), 2 * time.Second},
	} {
		for _, spec := range sc.sc.Engines {
			e, err := sim.NewEngine(spec, sc.sc.Start)
			if err != nil {
				t.Fatal(err)
			}
			what := sc.sc.Name + "/" + spec.Name
			m := newMulti(what, string(spec.Format))
			var body []byte
			for at := time.Duration(0); at <= sc.sc.Duration; at += sc.every {
				body = e.AppendRender(body[:0], at)
				ss, err := expo.Parse(body, e.ContentType())
				if err != nil {
					t.Fatalf("%s at %v: %v", what, at, err)
				}
				m.poll(t, float64(sc.sc.Start.Add(at).UnixNano())/1e9, ss)
			}
			for _, p := range m.pairs {
				if p.valued == 0 {
					t.Errorf("%s: no poll had a decode value over %d polls: the check compared nothing", p.what, p.polls)
				}
			}
		}
	}
}
