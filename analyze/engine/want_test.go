package engine

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/sim"
)

// wantSets are the wanted sets the tests check: every canonical cell but
// the leaves a summary reads nowhere, the headline alone (most families
// then feed nothing wanted), and one histogram's cell with nothing else.
var wantSets = [][]string{
	slices.DeleteFunc(slices.Clone(Canonical), func(c string) bool {
		return slices.Contains([]string{SpecAcceptRatio, SpecAcceptRatioLifetime, PromptTokensCachedTotal,
			DecodeTokensPerSecondNative, PromptTokensPerSecondNative, PrefixCacheHitRatioNative, SpecAcceptRatioNative}, c)
	}),
	Headline,
	{E2E + SuffixP50},
}

// wantPair feeds the same polls to a full tracker and to one tracker per
// wanted set, and fails at the first poll where a wanted cell differs in
// anything, or a cell not wanted is not null with reason not_computed
// (an empty poll's cells are all absent, wanted or not).
type wantPair struct {
	what    string
	full    *Tracker
	wanted  []*Tracker
	a       Cells
	b       []Cells
	polls   int
	skipped []int // by set: cells not computed over the polls
	fewer   []int // by set: polls that fed the estimator fewer readings
}

func newWantPair(what, id string) *wantPair {
	p := &wantPair{what: what, full: NewTracker(id, rate.Config{}), b: make([]Cells, len(wantSets)),
		skipped: make([]int, len(wantSets)), fewer: make([]int, len(wantSets))}
	for _, set := range wantSets {
		tr := NewTracker(id, rate.Config{})
		tr.Want(set...)
		p.wanted = append(p.wanted, tr)
	}
	return p
}

func (p *wantPair) poll(t *testing.T, T float64, ss []expo.Sample) {
	t.Helper()
	p.a = p.full.ObserveSamples(T, T-0.01, ss, p.a)
	p.polls++
	for k, tr := range p.wanted {
		p.b[k] = tr.ObserveSamples(T, T-0.01, ss, p.b[k])
		if len(p.b[k]) != len(p.a) {
			t.Fatalf("%s set %d poll %d: %d cells, the full tracker %d", p.what, k, p.polls, len(p.b[k]), len(p.a))
		}
		want := wantBits(wantSets[k]...)
		for i := range p.a {
			x, y := &p.a[i], &p.b[k][i]
			if x.Name != y.Name {
				t.Fatalf("%s set %d poll %d: cell %d is %s, the full tracker's %s", p.what, k, p.polls, i, y.Name, x.Name)
			}
			switch {
			case i < len(Canonical) && want&(1<<i) == 0 && p.full.samples > 0:
				if !reflect.DeepEqual(y.Cell, notComputed) {
					t.Fatalf("%s set %d poll %d: %s not wanted is %+v, not null with reason not_computed", p.what, k, p.polls, x.Name, y.Cell)
				}
				p.skipped[k]++
			case !reflect.DeepEqual(x.Cell, y.Cell):
				t.Fatalf("%s set %d poll %d: %s wanted is %+v, the full tracker's %+v", p.what, k, p.polls, x.Name, y.Cell, x.Cell)
			}
		}
		if len(tr.poll.Readings) < len(p.full.poll.Readings) {
			p.fewer[k]++
		}
	}
}

// A tracker told the cells wanted (Want) makes each of them as a full
// tracker does, field for field, at every poll of every real capture
// moved poll after poll (a counter restart and an empty poll on the
// way); what it skips is null with reason not_computed, and counters
// that feed no wanted cell are not fed to the estimator.
func TestWantRealCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realCaptures, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s (the shared folder is absent)", realCaptures)
	}
	skipped, fewer := make([]int, len(wantSets)), make([]int, len(wantSets))
	for _, f := range files {
		page := readCapture(t, f)
		det := NewTracker("", rate.Config{})
		det.ObserveSamples(1000, 999.99, page, nil)
		id, _ := det.Engine()
		ss := append([]expo.Sample(nil), page...)
		base := make([]float64, len(ss))
		for j := range ss {
			base[j] = ss[j].Value
		}
		p := newWantPair(fmt.Sprintf("%s (%s)", filepath.Base(f), id), id)
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
				p.poll(t, T, nil)
				continue
			default:
				advancePage(ss, base, i)
			}
			p.poll(t, T, ss)
		}
		for k := range wantSets {
			skipped[k] += p.skipped[k]
			fewer[k] += p.fewer[k]
		}
	}
	for k := range wantSets {
		// Each set skips something somewhere: the check compared a skip.
		if skipped[k] == 0 {
			t.Errorf("set %d: no cell was ever skipped", k)
		}
	}
	if fewer[1] == 0 || fewer[2] == 0 {
		t.Errorf("the headline and one-histogram sets never fed fewer readings than a full tracker (%v)", fewer)
	}
}

// The same on the simulator's engines, polled as the recorder would
// through the built-in scenario (load edges, a stall, a hang, a restart,
// a label join, stale and failing answers).
func TestWantSimulator(t *testing.T) {
	strictFeeds = false // the simulator's bodies carry families no cell reads
	defer func() { strictFeeds = true }()
	sc := sim.DefaultScenario()
	for _, spec := range sc.Engines {
		e, err := sim.NewEngine(spec, sc.Start)
		if err != nil {
			t.Fatal(err)
		}
		p := newWantPair(sc.Name+"/"+spec.Name, string(spec.Format))
		var body []byte
		for at := time.Duration(0); at <= sc.Duration; at += time.Second {
			body = e.AppendRender(body[:0], at)
			ss, err := expo.Parse(body, e.ContentType())
			if err != nil {
				t.Fatalf("%s at %v: %v", p.what, at, err)
			}
			p.poll(t, float64(sc.Start.Add(at).UnixNano())/1e9, ss)
		}
	}
}

// Every reader's catalog names cells (canonical ones or histogram bases)
// before any remark: a name it does not know would make its family feed
// every cell whatever is wanted.
func TestFeedsNameCells(t *testing.T) {
	for _, id := range Engines {
		r := readerFor(id)
		for f, feeds := range r.families {
			for _, w := range strings.Fields(feeds) {
				if strings.HasPrefix(w, "(") {
					break
				}
				if wantBits(w) == 0 {
					t.Errorf("%s: %s feeds %q, which names no cell", id, f, w)
				}
			}
			if feeds != "" && r.masks[f] == allCells {
				t.Errorf("%s: %s feeds every cell (%q)", id, f, feeds)
			}
		}
	}
	if feedMask("decode_tokens_per_second (pre-0.9 name)") != wantBits(DecodeTokensPerSecond) {
		t.Error("a remark is read as a cell")
	}
	if feedMask("decode_tokens_per_second no_such_cell") != allCells {
		t.Error("an unknown name does not feed every cell")
	}
	if wantBits(TTFT) != 0x1f<<canonIndex[TTFT+SuffixCount] {
		t.Error("a histogram base does not want its five cells")
	}
}

// Want with no names wants every cell again.
func TestWantNothingIsAll(t *testing.T) {
	tr := NewTracker(VLLM, rate.Config{})
	tr.Want(Headline...)
	tr.Want()
	if tr.want != allCells {
		t.Fatalf("want %x after Want(), not every cell", tr.want)
	}
}
