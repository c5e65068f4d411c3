package rate

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// histFeed is a random timeline of one histogram of two label sets, every
// event a gate reacts to in it: bursts (jumps), holes past the ceiling,
// catch-up polls under the floor, stale polls, restarts flagged or shown
// by a new _created, a bucket alone falling or absent, a set absent.
type histFeed struct {
	keys    []Key
	created []float64
	vals    []float64
}

func newHistFeed() *histFeed {
	f := &histFeed{}
	for _, set := range []string{"a", "b"} {
		for _, le := range []string{"0.1", "0.5", "1", "5", "+Inf"} {
			f.keys = append(f.keys, Key{"h_bucket", Labels("set", set, "le", le)})
		}
		f.keys = append(f.keys, Key{"h_count", Labels("set", set)}, Key{"h_sum", Labels("set", set)})
	}
	f.created = make([]float64, len(f.keys))
	f.vals = make([]float64, len(f.keys))
	return f
}

// next returns poll i of the feed at time T after the previous poll.
func (f *histFeed) next(r *rand.Rand, T float64) Poll {
	p := Poll{T: T, Start: T - 0.01}
	switch r.IntN(40) {
	case 0:
		p.Start = T - 1.5 // stale
	case 1:
		p.Restart = true
	}
	restart := p.Restart || r.IntN(60) == 0
	burst := 1.0
	if r.IntN(15) == 0 {
		burst = 50
	}
	for s := 0; s < 2; s++ {
		base := s * 7
		absent := r.IntN(30) == 0
		var cum float64
		for b := 0; b < 5; b++ {
			cum += float64(r.IntN(3)) * burst
			k := base + b
			if restart {
				f.vals[k] = 0
				f.created[k] = T
			}
			f.vals[k] += cum
		}
		// count is the +Inf bucket's; sum moves with it.
		if restart {
			f.vals[base+5], f.vals[base+6] = 0, 0
			f.created[base+5], f.created[base+6] = T, T
		}
		f.vals[base+5] += cum
		f.vals[base+6] += cum * 0.3
		for k := base; k < base+7; k++ {
			v := f.vals[k]
			switch {
			case absent, r.IntN(80) == 0:
				continue // absent from this poll
			case r.IntN(120) == 0:
				v -= 1 // this key alone fell
			}
			p.Samples = append(p.Samples, Sample{Key: f.keys[k], Value: v, Created: f.created[k]})
		}
	}
	return p
}

// gap returns the time to the next poll: 2 s, now and then a catch-up
// under the floor or a hole past the ceiling.
func gap(r *rand.Rand) float64 {
	switch r.IntN(50) {
	case 0:
		return 0.2
	case 1:
		return 30
	}
	return 2 + 0.01*float64(r.IntN(3))
}

// TestSetBucketKeepsHistograms checks that buckets without a jump gate
// (SetBucket) read the same histograms, poll by poll, as with it, on
// random timelines with every gate's events, and that Rate over them
// holds no jump where the gated keys do.
func TestSetBucketKeepsHistograms(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 2))
			f := newHistFeed()
			plain, bucketed := New(Config{Span: 10}), New(Config{Span: 10})
			for _, k := range f.keys {
				plain.Register(k)
				if k.Series == "h_bucket" {
					bucketed.SetBucket(bucketed.Register(k))
				}
			}
			jumps, T := 0, 1e9
			for i := range 3000 {
				T += gap(r)
				p := f.next(r, T)
				plain.Observe(p)
				bucketed.Observe(p)
				match := func(l string) bool { return l == `{set="a"}` }
				if i%3 == 0 {
					match = nil
				}
				if got, want := bucketed.Histogram("h", match), plain.Histogram("h", match); !reflect.DeepEqual(got, want) {
					t.Fatalf("poll %d: histogram %+v, want %+v", i, got, want)
				}
				pr, br := plain.Rate("h_bucket", nil), bucketed.Rate("h_bucket", nil)
				if br.Reason == ReasonJump {
					t.Fatalf("poll %d: a bucket without a jump gate held a jump", i)
				}
				if pr.Reason == ReasonJump {
					jumps++
				}
			}
			// The feed must exercise the gate SetBucket drops.
			if jumps == 0 {
				t.Fatal("no jump held in the feed")
			}
		})
	}
}

// setBucket is SetBucket with the group stepping on or off.
func setBucket(e *Estimator, id int32, grouped bool) {
	defer func(was bool) { together = was }(together)
	together = grouped
	e.SetBucket(id)
}

// TestStepTogetherIsStepAlone checks that buckets stepped together read
// what each stepped alone reads, every histogram and rate of every poll,
// on random timelines with every gate's events, a new process start, a
// bucket read twice in one poll, a bucket joining late, spans set apart
// and back together, and a label set that does not parse.
func TestStepTogetherIsStepAlone(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 3))
			f := newHistFeed()
			f.keys = append(f.keys, Key{"h_bucket", `{le="1",set="a"`}) // malformed: steps alone
			f.created, f.vals = append(f.created, 0), append(f.vals, 0)
			alone, grouped := New(Config{Span: 10}), New(Config{Span: 10})
			for _, k := range f.keys {
				a, g := alone.Register(k), grouped.Register(k)
				if k.Series == "h_bucket" {
					setBucket(alone, a, false)
					setBucket(grouped, g, true)
				}
			}
			late := Key{"h_bucket", Labels("set", "a", "le", "2")}
			inStep, T, proc := 0, 1e9, 1.0
			for i := range 3000 {
				T += gap(r)
				p := f.next(r, T)
				if r.IntN(200) == 0 {
					proc++
				}
				p.ProcessStart = proc
				switch {
				case i == 500:
					setBucket(alone, alone.Register(late), false)
					setBucket(grouped, grouped.Register(late), true)
				case i == 1000:
					for _, e := range []*Estimator{alone, grouped} {
						e.SetSpan(e.Register(f.keys[1]), 4)
					}
				case i == 1500:
					for _, e := range []*Estimator{alone, grouped} {
						for _, k := range f.keys[:5] {
							e.SetSpan(e.Register(k), 4)
						}
					}
				}
				if i >= 500 {
					p.Samples = append(p.Samples, Sample{Key: late, Value: float64(i)})
				}
				if len(p.Samples) > 0 && r.IntN(50) == 0 {
					dup := p.Samples[0]
					dup.Value++
					p.Samples = append(p.Samples, dup)
				}
				if i%2 == 1 {
					// As Readings of registered keys, now and then a NaN,
					// two swapped, a second reading in front.
					for _, s := range p.Samples {
						p.Readings = append(p.Readings, Reading{ID: grouped.Register(s.Key), Value: s.Value, Created: s.Created})
					}
					p.Samples = nil
					if n := len(p.Readings); n > 2 {
						switch r.IntN(30) {
						case 0:
							p.Readings[r.IntN(n)].Value = math.NaN()
						case 1:
							j := r.IntN(n - 1)
							p.Readings[j], p.Readings[j+1] = p.Readings[j+1], p.Readings[j]
						case 2:
							p.Readings = append([]Reading{p.Readings[r.IntN(n)]}, p.Readings...)
						}
					}
				}
				alone.Observe(p)
				grouped.Observe(p)
				for _, g := range grouped.groups {
					if g.inStep && g.seq == grouped.seq {
						inStep++
					}
				}
				for _, match := range []func(string) bool{nil, func(l string) bool { return l == `{set="a"}` }} {
					if got, want := grouped.Histogram("h", match), alone.Histogram("h", match); !reflect.DeepEqual(got, want) {
						t.Fatalf("poll %d: histogram %+v, want %+v", i, got, want)
					}
				}
				if got, want := grouped.Rate("h_bucket", nil), alone.Rate("h_bucket", nil); !reflect.DeepEqual(got, want) {
					t.Fatalf("poll %d: rate %+v, want %+v", i, got, want)
				}
			}
			// Most polls must step in step, or the test compares step with itself.
			if inStep < 1000 {
				t.Fatalf("%d group polls in step of 3000 polls", inStep)
			}
		})
	}
}

// TestWholeRunIsGathered checks that a histogram of one label set read
// from its group in place (wholeRun) is, poll by poll, the one its
// buckets stepped alone give, on random timelines with every gate's
// events, bucket deltas now and then falling with le (the monotonic
// pass), and a late bucket whose bound is out of order.
func TestWholeRunIsGathered(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 5))
			f := newHistFeed()
			alone, grouped := New(Config{Span: 10}), New(Config{Span: 10})
			keys := slices.Clone(f.keys)
			// An odd seed's buckets are registered with two bounds out of
			// order: sorted and merged, never read in place.
			swapped := seed%2 == 1
			if swapped {
				keys[1], keys[2] = keys[2], keys[1]
			}
			for _, k := range keys {
				// Set a alone: its buckets are the whole series.
				if !labelsHave(k.Labels, `set="a"`) {
					continue
				}
				a, g := alone.Register(k), grouped.Register(k)
				if k.Series == "h_bucket" {
					setBucket(alone, a, false)
					setBucket(grouped, g, true)
				}
			}
			late := Key{"h_bucket", Labels("set", "a", "le", "2")}
			fast, T, proc, extra := 0, 1e9, 1.0, 0.0
			for i := range 3000 {
				T += gap(r)
				p := f.next(r, T)
				if r.IntN(200) == 0 {
					proc++
				}
				p.ProcessStart = proc
				if r.IntN(3) == 0 {
					extra += float64(1 + r.IntN(4))
				}
				kept := p.Samples[:0]
				for _, s := range p.Samples {
					// Set a alone; its first bucket now and then ahead of the next.
					if labelsHave(s.Key.Labels, `set="a"`) {
						if s.Key.Labels == Labels("le", "0.1", "set", "a") {
							s.Value += extra
						}
						kept = append(kept, s)
					}
				}
				p.Samples = kept
				if i == 2000 {
					setBucket(alone, alone.Register(late), false)
					setBucket(grouped, grouped.Register(late), true)
				}
				if i >= 2000 {
					p.Samples = append(p.Samples, Sample{Key: late, Value: float64(i)})
				}
				alone.Observe(p)
				grouped.Observe(p)
				if grouped.wholeRun(grouped.seriesOf("h_bucket")) != nil {
					fast++
				}
				if got, want := grouped.Histogram("h", nil), alone.Histogram("h", nil); !reflect.DeepEqual(got, want) {
					t.Fatalf("poll %d: histogram %+v, want %+v", i, got, want)
				}
			}
			if swapped && fast > 0 {
				t.Fatalf("%d polls of buckets out of order read in place", fast)
			}
			// Most polls must be read in place, or the test compares gather with itself.
			if !swapped && fast < 500 {
				t.Fatalf("%d polls read in place of 3000", fast)
			}
			if grouped.wholeRun(grouped.seriesOf("h_bucket")) != nil {
				t.Fatal("a late bucket out of order is read in place")
			}
		})
	}
}

// labelsHave reports whether a canonical label set contains pair.
func labelsHave(labels, pair string) bool {
	return len(labels) > 0 && (strings.Contains(labels, "{"+pair) || strings.Contains(labels, ","+pair))
}

// TestTwoRunsAreMerged checks that a histogram of two label sets, each
// stepped together with the same bounds, read from the two groups in
// place (twoRuns) is what the same buckets stepped alone, gathered and
// merged by le read, poll by poll on random timelines (gates, restarts,
// a set absent, a key alone falling).
func TestTwoRunsAreMerged(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			f := newHistFeed()
			alone, grouped := New(Config{Span: 10}), New(Config{Span: 10})
			for _, k := range f.keys {
				a, g := alone.Register(k), grouped.Register(k)
				if k.Series == "h_bucket" {
					setBucket(alone, a, false)
					setBucket(grouped, g, true)
				}
			}
			fast, T := 0, 1e9
			for i := range 3000 {
				T += gap(r)
				p := f.next(r, T)
				alone.Observe(p)
				grouped.Observe(p)
				if g1, _ := grouped.twoRuns(grouped.seriesOf("h_bucket")); g1 != nil {
					fast++
				}
				if got, want := grouped.Histogram("h", nil), alone.Histogram("h", nil); !reflect.DeepEqual(got, want) {
					t.Fatalf("poll %d: histogram %+v, want %+v", i, got, want)
				}
			}
			// Most polls must be read in place, or the test compares gather with itself.
			if fast < 400 {
				t.Fatalf("%d polls read in place of 3000", fast)
			}
		})
	}
}
