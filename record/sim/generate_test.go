package sim

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"reflect"
	"testing"
	"time"
)

func hashRun(t *testing.T, sc *Scenario, opts GenerateOptions) ([]byte, []Generated) {
	t.Helper()
	h := sha256.New()
	var all []Generated
	err := Generate(sc, opts, func(g Generated) error {
		writeGen(h, g)
		g.Body = nil
		all = append(all, g)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil), all
}

func writeGen(h hash.Hash, g Generated) {
	fmt.Fprintf(h, "%s %d %d %d %d %d %d %d %d %s\n", g.Target, g.Index, g.Seq, g.Scheduled, g.Start, g.FirstByte,
		g.End, g.Rendered, g.Status, g.Behaviour)
	h.Write(g.Body)
}

// Generate is deterministic, in schedule order, and its bodies are the
// engine's renders at the Rendered instants.
func TestGenerateDeterministic(t *testing.T) {
	opts := GenerateOptions{Interval: 2 * time.Second, Seed: 5}
	h1, gens := hashRun(t, LongScenario(3, 4*time.Minute, 7), opts)
	h2, _ := hashRun(t, LongScenario(3, 4*time.Minute, 7), opts)
	if !bytes.Equal(h1, h2) {
		t.Fatal("two runs differ")
	}
	if len(gens) != 3*120 {
		t.Fatalf("%d scrapes, want 360", len(gens))
	}
	h3, _ := hashRun(t, LongScenario(3, 4*time.Minute, 7), GenerateOptions{Interval: 2 * time.Second, Seed: 6})
	h4, _ := hashRun(t, LongScenario(3, 4*time.Minute, 8), opts)
	if bytes.Equal(h1, h3) || bytes.Equal(h1, h4) {
		t.Error("another seed gives the same recording")
	}
	start := DefaultStart.UnixNano()
	seq := map[string]int64{}
	statuses := map[int]int{}
	ends := map[string]int64{} // each target's last attempt's end
	missed := 0
	for i, g := range gens {
		if i > 0 && g.Scheduled < gens[i-1].Scheduled {
			t.Fatalf("scrape %d scheduled before the one before", i)
		}
		if g.Seq != seq[g.Target] {
			t.Fatalf("%s: seq %d, want %d", g.Target, g.Seq, seq[g.Target])
		}
		seq[g.Target]++
		if want := start + g.Seq*int64(2*time.Second) + int64(g.Index)*int64(2*time.Second)/3; g.Scheduled != want {
			t.Fatalf("%s seq %d scheduled %d, want %d", g.Target, g.Seq, g.Scheduled, want)
		}
		if g.Missed {
			// Missed only while the previous attempt runs, and nothing went out.
			if ends[g.Target] <= g.Scheduled || g.Running >= g.Seq || g.Start != 0 || g.End != 0 {
				t.Fatalf("missed tick %+v after an attempt ending at %d", g, ends[g.Target])
			}
			missed++
			continue
		}
		if ends[g.Target] > g.Scheduled {
			t.Fatalf("%s seq %d went out while the previous scrape ran", g.Target, g.Seq)
		}
		ends[g.Target] = g.End
		if !(g.Scheduled <= g.Start && g.Start < g.End && (g.FirstByte == 0 || g.Start < g.FirstByte && g.FirstByte <= g.End)) {
			t.Fatalf("times out of order: %+v", g)
		}
		statuses[g.Status]++
	}
	if missed == 0 {
		t.Error("no missed tick in a scenario with hangs")
	}
	if statuses[200] < 340 || statuses[503] == 0 {
		t.Errorf("statuses %v: want mostly 200 and the 503 window of engine 2", statuses)
	}
}

// Bodies parse, and each equals a fresh render of the same engine at the
// offset of its Rendered time.
func TestGenerateBodies(t *testing.T) {
	sc := LongScenario(4, 2*time.Minute, 1)
	engines, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = Generate(sc, GenerateOptions{Interval: 5 * time.Second}, func(g Generated) error {
		if g.Status != 200 {
			return nil
		}
		if n%7 == 0 {
			parseBody(t, g.Body)
		}
		want := engines[g.Index].Render(time.Duration(g.Rendered - DefaultStart.UnixNano()))
		if !bytes.Equal(g.Body, want) {
			return fmt.Errorf("%s seq %d: body differs from Render at its Rendered time", g.Target, g.Seq)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 80 {
		t.Errorf("only %d bodies", n)
	}
}

// Event windows shape the simulated times like the server does.
func TestGenerateBehaviours(t *testing.T) {
	sc := serverScenario(t, `
[[engine.event]]
at = "10s"
kind = "hang"
for = "5s"
[[engine.event]]
at = "20s"
kind = "stale"
delay = "3s"
for = "1s"
[[engine.event]]
at = "30s"
kind = "slow"
delay = "2s"
for = "1s"
[[engine.event]]
at = "40s"
kind = "hang"
for = "30s"
`)
	byOffset := map[time.Duration]Generated{}
	base := DefaultStart.UnixNano()
	err := Generate(sc, GenerateOptions{Interval: 10 * time.Second, Duration: time.Minute}, func(g Generated) error {
		if g.Index == 0 {
			g.Body = bytes.Clone(g.Body)
			byOffset[time.Duration(g.Scheduled-base)] = g
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(ns int64) time.Duration { return time.Duration(ns - base) }
	if g := byOffset[10*time.Second]; g.Behaviour != EventHang || ms(g.Rendered) < 15*time.Second || g.Status != 200 {
		t.Errorf("hang: rendered at %v, status %d", ms(g.Rendered), g.Status)
	}
	if g := byOffset[20*time.Second]; g.Behaviour != EventStale || ms(g.FirstByte)-ms(g.Rendered) < 3*time.Second || ms(g.Rendered) > 20100*time.Millisecond {
		t.Errorf("stale: rendered at %v, first byte at %v", ms(g.Rendered), ms(g.FirstByte))
	}
	if g := byOffset[30*time.Second]; g.Behaviour != EventSlow || ms(g.End)-ms(g.FirstByte) < 2*time.Second || ms(g.FirstByte) > 30100*time.Millisecond {
		t.Errorf("slow: first byte at %v, end at %v", ms(g.FirstByte), ms(g.End))
	}
	if g := byOffset[40*time.Second]; g.Status != 0 || g.Body != nil || time.Duration(g.End-g.Start) != 10*time.Second {
		t.Errorf("hang past the timeout: %+v", g)
	}
	// That attempt, abandoned at the timeout, still runs when the next tick is due.
	if g := byOffset[50*time.Second]; !g.Missed || g.Running != 4 || g.Start != 0 {
		t.Errorf("tick during the timed-out scrape: %+v", g)
	}
	if g := byOffset[0]; g.Status != 200 || g.Behaviour != "" || !reflect.DeepEqual(g.Body, engineAt(t, sc, 0, ms(g.Rendered))) {
		t.Errorf("plain scrape: %+v", g)
	}
}

func engineAt(t *testing.T, sc *Scenario, i int, at time.Duration) []byte {
	es, err := sc.Build(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return es[i].Render(at)
}

func TestGenerateStopsOnEmitError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Generate(DefaultScenario(), GenerateOptions{}, func(Generated) error {
		n++
		if n == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 5 {
		t.Errorf("err %v after %d calls", err, n)
	}
}

func TestLongScenario(t *testing.T) {
	sc := LongScenario(8, 24*time.Hour, 1)
	if err := sc.Normalize(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sc, func() *Scenario { s := LongScenario(8, 24*time.Hour, 1); s.Normalize(); return s }()) {
		t.Error("LongScenario is not deterministic")
	}
	formats := map[Format]int{}
	for _, es := range sc.Engines {
		formats[es.Format]++
		if len(es.Phases) < 30 {
			t.Errorf("%s: %d phases over 24 h", es.Name, len(es.Phases))
		}
	}
	if formats[FormatVLLM] != 6 || formats[FormatLlamaCpp] != 2 {
		t.Errorf("formats %v", formats)
	}
}

func benchEngine(b *testing.B, i int) (*Engine, time.Duration) {
	sc := LongScenario(8, 24*time.Hour, 1)
	es, err := sc.Build(time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	return es[i], 13*time.Hour + 1234*time.Millisecond
}

func BenchmarkRenderVLLM(b *testing.B) {
	e, at := benchEngine(b, 1)
	buf := e.AppendRender(nil, at)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendRender(buf[:0], at)
	}
}

// Two label sets after engine 0's label join at 12 h.
func BenchmarkRenderVLLMTwoSets(b *testing.B) {
	e, at := benchEngine(b, 0)
	buf := e.AppendRender(nil, at)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendRender(buf[:0], at)
	}
}

func BenchmarkRenderLlamaCpp(b *testing.B) {
	e, at := benchEngine(b, 3)
	buf := e.AppendRender(nil, at)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendRender(buf[:0], at)
	}
}

// One hour of 8 engines every 2 s (14,400 bodies) per iteration.
func BenchmarkGenerateHour(b *testing.B) {
	sc := LongScenario(8, time.Hour, 1)
	b.ReportAllocs()
	bodies := 0
	for b.Loop() {
		err := Generate(sc, GenerateOptions{}, func(g Generated) error {
			bodies++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(bodies), "ns/body")
}
