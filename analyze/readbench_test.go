package analyze

import (
	"slices"
	"testing"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
)

// BenchmarkReadSealed is the reading a replay does, without the replay:
// each segment checked against its seal and opened ahead (Ahead) while
// the one before is read (ReadSealed), with the headers column, the
// consumer's Known saying every poll's series are known (a replay's
// steady state: family and type not decoded). It is the reading
// goroutine and the read-ahead of BenchmarkReplay/summary. Without
// -replay.dir it replays the same generated recording.
func BenchmarkReadSealed(b *testing.B) {
	run, seals, samples := sealedRecording(b)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		r := capture.NewColumnReader(capture.NewStrings())
		r.Headers = true
		r.Known = func(*capture.Row) bool { return true }
		n := 0
		for i, seg := range run.Segments {
			if i+1 < len(run.Segments) {
				r.Ahead(seals, run.Segments[i+1])
			}
			if _, err := r.ReadSealed(seals, seg, func(w *capture.Row) { n += len(w.Name) }); err != nil {
				b.Fatal(err)
			}
		}
		if n < samples {
			b.Fatalf("read %d samples, %d of them a poll's", n, samples)
		}
	}
	c := (cpuTime(b) - cpu0).Seconds() / float64(b.N)
	b.ReportMetric(float64(samples)/c, "samples/cpu-s")
	b.ReportMetric(float64(samples)/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
}

// BenchmarkSeenKnown is the reader's question of each poll on the
// parallel path (feeder.known: are its series where the target's last
// poll had them), then the lookup of those that are not (feeder.row):
// over the polls of the first two segments of the recording, held in
// memory.
func BenchmarkSeenKnown(b *testing.B) {
	dir := benchRecording(b)
	run, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	var rows []capture.Row
	samples := 0
	r := capture.NewColumnReader(capture.NewStrings())
	for _, seg := range run.Segments[:min(2, len(run.Segments))] {
		if err := r.Read(seg, func(w *capture.Row) {
			if len(w.Name) > 0 {
				rows = append(rows, capture.Row{Target: w.Target, Name: slices.Clone(w.Name), Labels: slices.Clone(w.Labels)})
				samples += len(w.Name)
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		seens := map[int32]*seen{}
		for k := range rows {
			w := &rows[k]
			s := seens[w.Target]
			if s == nil {
				s = &seen{keys: map[uint64]struct{}{}}
				seens[w.Target] = s
			}
			if _, same := s.peek(w); !same {
				s.lookup(w)
				s.record(len(w.Name))
			}
		}
	}
	b.ReportMetric(float64(samples)/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
}

// BenchmarkFeedRead is the parallel replay's reading goroutine without
// the workers: the files read as Analyze reads them (ahead, sealed,
// headers), each row asked of the feeder's hooks and placed (its series
// recorded), nothing handed over. "names" reads every poll's names and
// labels as strings (the reader without a Same hook); "indexes" asks
// Same first, by the dictionary indexes.
func BenchmarkFeedRead(b *testing.B) {
	run, seals, samples := sealedRecording(b)
	for _, same := range []bool{false, true} {
		name := map[bool]string{false: "names", true: "indexes"}[same]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				an := newAnalyzer(Options{})
				an.r.Headers = true
				f := &feeder{an: an, targets: map[int32]*seen{}, load: make([]int, 1)}
				an.r.Known = f.known
				if same {
					an.r.Same = f.sameIdx
				}
				fn := func(w *capture.Row) {
					s := f.targets[w.Target]
					if s == nil {
						s = &seen{keys: map[uint64]struct{}{}}
						f.targets[w.Target] = s
					}
					f.place(s, w)
				}
				readSegments(b, an.r, run, seals, fn)
				if an.samples != int64(samples) {
					b.Fatalf("placed %d samples of %d", an.samples, samples)
				}
			}
			c := (cpuTime(b) - cpu0).Seconds() / float64(b.N)
			b.ReportMetric(float64(samples)/c, "samples/cpu-s")
		})
	}
}

// readSegments reads run's segments through r, as a replay does: each
// next one opened ahead while one is read.
func readSegments(b *testing.B, r *capture.ColumnReader, run *capture.Run, seals capture.Seals, fn func(*capture.Row)) {
	for i, seg := range run.Segments {
		if i+1 < len(run.Segments) {
			r.Ahead(seals, run.Segments[i+1])
		}
		if _, err := r.ReadSealed(seals, seg, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// sealedRecording is the recording the reading benchmarks read
// (-replay.dir, else one generated), its seals and its polls' samples.
func sealedRecording(b *testing.B) (*capture.Run, capture.Seals, int) {
	dir, samples := *replayDir, 0
	if dir == "" {
		dir = b.TempDir()
		_, samples = generate(b, sim.LongScenario(8, *replayDuration, 1), dir, sim.GenerateOptions{})
	} else {
		_, samples = countRecording(b, dir)
	}
	run, err := capture.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	seals, err := capture.ReadSeals(dir)
	if err != nil {
		b.Fatal(err)
	}
	return run, seals, samples
}

// BenchmarkSerialRead is the serial replay's reading without the
// engines: the files read as Analyze reads them with one worker (ahead,
// sealed, headers), each poll's series placed in its target's record as
// analyzer.row places them (looked up unless found in place; a new
// series given the next id where row registers it), nothing tracked.
// "names" reads every poll's names and labels as strings and asks known
// (the serial path before the eighth round); "indexes" asks the
// analyzer's Same first, by the dictionary indexes.
func BenchmarkSerialRead(b *testing.B) {
	run, seals, samples := sealedRecording(b)
	for _, same := range []bool{false, true} {
		name := map[bool]string{false: "names", true: "indexes"}[same]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				a := newAnalyzer(Options{Workers: 1})
				// No target state holds an engine to ask of a 503's body.
				a.r.Headers, a.r.WantBody = true, nil
				if same {
					a.r.Same = a.sameIdx
				}
				fn := func(w *capture.Row) {
					if !a.isPoll(w) {
						return
					}
					st := a.targets[w.Target]
					if st == nil {
						st = &targetState{keyOf: map[uint64]int32{}}
						a.targets[w.Target] = st
					}
					inPlace := a.looked == w && a.inPlace
					if a.looked != w {
						st.lookup(w)
					}
					a.looked, a.inPlace = nil, false
					if a.r.Same != nil {
						st.idx.keep(w, inPlace)
					}
					a.samples += int64(len(w.Value))
					if !st.unreg {
						return
					}
					for j, id := range st.prevI[:len(w.Value)] {
						if id >= 0 {
							continue
						}
						k := st.prevK[j]
						if id, ok := st.keyOf[k]; ok {
							st.prevI[j] = id
							continue
						}
						st.prevI[j] = int32(len(st.keyOf))
						st.keyOf[k] = st.prevI[j]
					}
					st.unreg = slices.Contains(st.prevI[len(w.Value):], -1)
				}
				readSegments(b, a.r, run, seals, fn)
				if a.samples != int64(samples) {
					b.Fatalf("placed %d samples of %d", a.samples, samples)
				}
			}
			c := (cpuTime(b) - cpu0).Seconds() / float64(b.N)
			b.ReportMetric(float64(samples)/c, "samples/cpu-s")
		})
	}
}
