package engine

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
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
// then feed nothing wanted), and one histogram's quantile, then its mean
// (its _sum fed alone), with nothing else.
var wantSets = [][]string{
	slices.DeleteFunc(slices.Clone(Canonical), func(c string) bool {
		return slices.Contains([]string{SpecAcceptRatio, SpecAcceptRatioLifetime, PromptTokensCachedTotal,
			DecodeTokensPerSecondNative, PromptTokensPerSecondNative, PrefixCacheHitRatioNative, SpecAcceptRatioNative,
			TTFT + SuffixMean, TTFT + SuffixP95, TPOT + SuffixP50, TPOT + SuffixP95, TPOT + SuffixP99,
			ITL + SuffixMean, ITL + SuffixP95, ITL + SuffixP99, E2E + SuffixMean, E2E + SuffixP95, E2E + SuffixP99,
			Queue + SuffixMean, Queue + SuffixP95, Queue + SuffixP99}, c)
	}),
	Headline,
	{E2E + SuffixP50},
	{ITL + SuffixMean},
}

// checkValued fails unless every cell of the headline and one-histogram
// sets had a value at some poll: the comparison compared values.
func checkValued(t *testing.T, valued map[string]bool) {
	t.Helper()
	for _, set := range wantSets[1:] {
		for _, c := range set {
			if !valued[c] {
				t.Errorf("%s wanted never had a value: its check compared nothing", c)
			}
		}
	}
}

// wantPair feeds the same polls to a full tracker and to one tracker per
// wanted set, and fails at the first poll where a wanted cell differs in
// anything, or a cell not wanted is neither the full tracker's nor null
// with reason not_computed.
type wantPair struct {
	what    string
	full    *Tracker
	wanted  []*Tracker
	a       Cells
	b       []Cells
	polls   int
	skipped []int // by set: cells not computed over the polls
	fewer   []int // by set: polls that fed the estimator fewer readings
	valued  map[string]bool
}

func newWantPair(what, id string) *wantPair {
	p := &wantPair{what: what, full: NewTracker(id, rate.Config{}), b: make([]Cells, len(wantSets)),
		skipped: make([]int, len(wantSets)), fewer: make([]int, len(wantSets)), valued: map[string]bool{}}
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
			same := reflect.DeepEqual(x.Cell, y.Cell)
			switch {
			case i < len(Canonical) && want&(1<<i) == 0 && !same:
				if !reflect.DeepEqual(y.Cell, notComputed) {
					t.Fatalf("%s set %d poll %d: %s not wanted is %+v, neither the full tracker's %+v nor null with reason not_computed", p.what, k, p.polls, x.Name, y.Cell, x.Cell)
				}
				p.skipped[k]++
			case !same:
				t.Fatalf("%s set %d poll %d: %s wanted is %+v, the full tracker's %+v", p.what, k, p.polls, x.Name, y.Cell, x.Cell)
			}
		}
		for i := range p.b[k] {
			if want&(1<<i) != 0 && p.b[k][i].Cell.Value.Valid {
				p.valued[p.b[k][i].Name] = true
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
// way); what it skips is null with reason not_computed, what it makes
// all the same is the full tracker's, and counters
// that feed no wanted cell are not fed to the estimator.
func TestWantRealCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realCaptures, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s (the shared folder is absent)", realCaptures)
	}
	skipped, fewer, valued := make([]int, len(wantSets)), make([]int, len(wantSets)), map[string]bool{}
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
		maps.Copy(valued, p.valued)
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
	checkValued(t, valued)
	if fewer[1] == 0 || fewer[2] == 0 {
		t.Errorf("the headline and one-histogram sets never fed fewer readings than a full tracker (%v)", fewer)
	}
}

// The same on the simulator's engines, polled as the recorder would
// through the built-in scenario (load edges, a stall, a hang, a restart,
// a label join, stale and failing answers) and a long one.
func TestWantSimulator(t *testing.T) {
	strictFeeds = false // the simulator's bodies carry families no cell reads
	defer func() { strictFeeds = true }()
	valued := map[string]bool{}
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
			p := newWantPair(sc.sc.Name+"/"+spec.Name, string(spec.Format))
			var body []byte
			for at := time.Duration(0); at <= sc.sc.Duration; at += sc.every {
				body = e.AppendRender(body[:0], at)
				ss, err := expo.Parse(body, e.ContentType())
				if err != nil {
					t.Fatalf("%s at %v: %v", p.what, at, err)
				}
				p.poll(t, float64(sc.sc.Start.Add(at).UnixNano())/1e9, ss)
			}
			maps.Copy(valued, p.valued)
		}
	}
	checkValued(t, valued)
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

// A by-label cell over random polls (series coming and going, values
// repeated, swapped between series of one reason, zeros of either sign,
// absent polls): its split and sum are those of the poll's samples, and
// a split equal to the last one made is that map, shared.
func TestByReasonSplits(t *testing.T) {
	series := []string{`{engine="0",reason="capacity"}`, `{engine="1",reason="capacity"}`, `{engine="0",reason="deferred"}`}
	vals := []string{"0", "-0", "1", "2", "1.5"}
	rng := rand.New(rand.NewPCG(1, 2))
	tr := NewTracker(VLLM, rate.Config{})
	var lastSplit map[string]float64
	var lastBy map[string]float64
	var body string
	shared, reused := 0, 0
	for i := range 3000 {
		switch rng.IntN(4) {
		case 0: // the same body again
		case 1: // capacity's two series swap values
			if strings.Count(body, "capacity") == 2 {
				ls := strings.Split(strings.TrimSpace(body), "\n")
				a, b := ls[1][strings.LastIndexByte(ls[1], ' ')+1:], ls[2][strings.LastIndexByte(ls[2], ' ')+1:]
				ls[1], ls[2] = ls[1][:strings.LastIndexByte(ls[1], ' ')+1]+b, ls[2][:strings.LastIndexByte(ls[2], ' ')+1]+a
				body = strings.Join(ls, "\n") + "\n"
				break
			}
			fallthrough
		default:
			var b strings.Builder
			b.WriteString("# TYPE vllm:num_requests_waiting_by_reason gauge\n")
			for _, s := range series {
				if rng.IntN(5) > 0 {
					b.WriteString("vllm:num_requests_waiting_by_reason" + s + " " + vals[rng.IntN(len(vals))] + "\n")
				}
			}
			body = b.String()
		}
		ss, err := expo.Parse([]byte(body), "text/plain")
		if err != nil {
			t.Fatal(err)
		}
		cs := tr.ObserveSamples(float64(1000+i), 0, ss, nil)
		c, _ := cs.Get(WaitingByReason)
		if len(ss) == 0 {
			if c.Value.Valid || c.Reason != rate.ReasonAbsent {
				t.Fatalf("poll %d: nothing to read is %+v", i, c)
			}
			continue
		}
		split, sum := map[string]float64{}, 0.0
		for _, s := range ss {
			r, _ := labelOf(canonicalLabels(s.Labels), "reason")
			split[r] += s.Value
			sum += s.Value
		}
		if !c.Value.Valid || math.Float64bits(c.Value.V) != math.Float64bits(sum) || !maps.Equal(c.By, split) {
			t.Fatalf("poll %d %q: %+v, want sum %v split %v", i, body, c, sum, split)
		}
		if lastSplit != nil && maps.Equal(split, lastSplit) {
			shared++
			if reflect.ValueOf(c.By).Pointer() != reflect.ValueOf(lastBy).Pointer() {
				t.Fatalf("poll %d: a split equal to the last is a new map", i)
			}
		} else if reflect.ValueOf(c.By).Pointer() == reflect.ValueOf(lastBy).Pointer() {
			reused++
		}
		lastSplit, lastBy = split, c.By
	}
	if shared < 500 || reused > 0 {
		t.Errorf("%d splits shared (want many), %d changed splits in the last map", shared, reused)
	}
}

// A llama.cpp fork's speculative-decoding counters (on a real llama-server
// page) feed the spec ratio only: a tracker that does not want it neither
// feeds nor reads them (strict feeds), and wants the rest as a full one.
func TestWantLlamaCppSpec(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(realCaptures, "llamacpp-cpu-tiny-midload.txt"))
	if err != nil {
		t.Skipf("no real llama.cpp capture (%v): the shared folder is absent", err)
	}
	body = append(body, "# TYPE llamacpp:n_drafted_total counter\nllamacpp:n_drafted_total 100\n"+
		"# TYPE llamacpp:n_drafted_accepted_total counter\nllamacpp:n_drafted_accepted_total 60\n"...)
	ss, err := expo.Parse(body, "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	base := make([]float64, len(ss))
	for j := range ss {
		base[j] = ss[j].Value
	}
	p := newWantPair("llama.cpp with spec counters", LlamaCpp)
	for i := range 20 {
		advancePage(ss, base, i)
		p.poll(t, 1000+2*float64(i), ss)
	}
	// The full tracker reads them: the comparison compared a spec ratio.
	if c, _ := p.a.Get(SpecAcceptRatio); !c.Value.Valid || p.skipped[0] == 0 || p.fewer[0] == 0 {
		t.Errorf("full tracker's spec ratio %+v; the summary's set skipped %d cells, fed fewer readings %d times",
			c, p.skipped[0], p.fewer[0])
	}
}
