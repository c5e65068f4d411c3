package analyze

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/parquet-go/parquet-go"
)

// analyzedJSON is the document of dir analysed with the given workers.
func analyzedJSON(t *testing.T, dir string, workers int, skip bool) []byte {
	t.Helper()
	res, err := Analyze(Options{Dirs: []string{dir}, Workers: workers, SkipPolls: skip})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameBytes fails with where got and want first differ.
func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-200)
	t.Fatalf("%s: byte %d differs (%d bytes, the serial path's %d):\n got  %.400s\n want %.400s", what, i, len(got), len(want),
		got[lo:], want[lo:])
}

// The targets replayed on several goroutines give the serial path's
// document byte for byte: a recording of 8 simulated engines (restarts, a
// joining label set, hangs, stale and slow bodies), with every poll's
// cells and with the summary alone, on 2, 3 and 8 workers.
func TestParallelIsSerial(t *testing.T) {
	dir := t.TempDir()
	generate(t, sim.LongScenario(8, 6*time.Minute, 1), dir, sim.GenerateOptions{})
	for _, skip := range []bool{false, true} {
		serial := analyzedJSON(t, dir, 1, skip)
		if !bytes.Contains(serial, []byte(`"polls"`)) {
			t.Fatalf("the serial document has no polls: %.200s", serial)
		}
		for _, n := range []int{2, 3, 8} {
			sameBytes(t, fmt.Sprintf("skip polls %v, %d workers", skip, n), analyzedJSON(t, dir, n, skip), serial)
		}
	}
}

// Options.Polls sees each target's polls in the serial path's order on
// several workers, one call at a time.
func TestParallelPollsSink(t *testing.T) {
	dir := t.TempDir()
	generate(t, sim.LongScenario(4, 3*time.Minute, 2), dir, sim.GenerateOptions{})
	seen := func(workers int) map[string][]string {
		out := map[string][]string{}
		busy := false
		_, err := Analyze(Options{Dirs: []string{dir}, Workers: workers, Polls: func(target string, p *Poll) {
			if busy {
				t.Error("Polls called while a call is running")
			}
			busy = true
			defer func() { busy = false }()
			out[target] = append(out[target], fmt.Sprintf("%v %s %d %s %v", p.T, p.Run, p.Seq, p.Break, p.Cells))
		}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	serial, par := seen(1), seen(4)
	if len(serial) != 4 {
		t.Fatalf("%d targets, want 4", len(serial))
	}
	if !reflect.DeepEqual(par, serial) {
		for name := range serial {
			if !slices.Equal(par[name], serial[name]) {
				t.Fatalf("target %s: %d polls on 4 workers, %d serial", name, len(par[name]), len(serial[name]))
			}
		}
		t.Fatal("the targets differ")
	}
}

// A damaged file, read unverified (its seals are gone), stops the serial
// and the parallel read at the same row: the documents agree, whatever
// the damage made of the file (a flipped byte in its pages, ten times).
func TestParallelDamagedIsSerial(t *testing.T) {
	dir := t.TempDir()
	generate(t, sim.LongScenario(8, 4*time.Minute, 3), dir, sim.GenerateOptions{})
	segs, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v: %v", segs, err)
	}
	seals, _ := filepath.Glob(filepath.Join(dir, "*.seals"))
	for _, s := range seals {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	sampleCols := readColumns(t, segs[0], "samples.list.element.name", "samples.list.element.labels", "samples.list.element.value", "target")
	bodyCols := readColumns(t, segs[0], "body")
	const rounds = 10
	var seen, unseen int
	for round := range rounds {
		bad := slices.Clone(data)
		// Half the rounds in a column every row reads, half in the
		// bodies, of which a replay decodes only a few 503s'.
		cols := sampleCols
		if round%2 == 1 {
			cols = bodyCols
		}
		c := cols[rng.IntN(len(cols))]
		i := c.off + rng.IntN(c.size)
		bad[i] ^= byte(1 + rng.IntN(255))
		if err := os.WriteFile(segs[0], bad, 0o644); err != nil {
			t.Fatal(err)
		}
		serial := analyzedJSON(t, dir, 1, false)
		if bytes.Contains(serial, []byte(`"kind":"skipped"`)) || bytes.Contains(serial, []byte(`"kind":"partial"`)) {
			seen++
		} else {
			unseen++
		}
		sameBytes(t, fmt.Sprintf("damage round %d", round), analyzedJSON(t, dir, 3, false), serial)
	}
	// A file without its seal has every page's checksum checked when it
	// is opened (capture's one reader), so the damage is seen in every
	// round, in the bodies too.
	if unseen != 0 {
		t.Fatalf("of %d rounds, %d saw the damage and %d did not", rounds, seen, unseen)
	}
}

// chunk is a column chunk's bytes in a file.
type chunk struct{ off, size int }

// readColumns are the chunks of the named columns in a Parquet file's row
// groups.
func readColumns(t *testing.T, path string, names ...string) []chunk {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var out []chunk
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if slices.Contains(names, strings.Join(c.MetaData.PathInSchema, ".")) {
				out = append(out, chunk{int(c.MetaData.DataPageOffset), int(c.MetaData.TotalCompressedSize)})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: none of the columns %v", path, names)
	}
	return out
}

// A poll the reader asked known about but never delivered (its family
// column damaged) leaves the reader's record of the target's series as
// the workers' is: the next poll, its series where the lost one had them
// and not where the last delivered poll had them, is looked up again by
// its worker and reads as on the serial path (requests running 5, not the
// waiting 7 of the series the last poll had in that place).
func TestParallelLostRowIsSerial(t *testing.T) {
	type sample struct {
		name string
		v    float64
	}
	row := func(a *analyzer, seq int64, ss ...sample) *capture.Row {
		tab := a.tab
		w := &capture.Row{Run: tab.IDString("run"), Target: tab.IDString("http://e1/metrics"), Engine: tab.IDString("vllm"),
			Endpoint: a.metricsID, Outcome: a.okID, Seq: seq, Err: -1}
		w.Start = int64(time.Unix(1_800_000_000, 0).Add(time.Duration(seq) * 2 * time.Second).UnixNano())
		w.FirstByte, w.End, w.Scheduled = w.Start+1e6, w.Start+2e6, w.Start
		for _, s := range ss {
			w.Family = append(w.Family, tab.IDString(s.name))
			w.Type = append(w.Type, tab.IDString("gauge"))
			w.Name = append(w.Name, tab.IDString(s.name))
			w.Labels = append(w.Labels, tab.IDString(`{"model_name":"m"}`))
			w.Value = append(w.Value, s.v)
		}
		return w
	}
	run, wait, kv := sample{"vllm:num_requests_running", 5}, sample{"vllm:num_requests_waiting", 7}, sample{"vllm:kv_cache_usage_perc", 0.5}
	cells := func(workers int) engine.Cells {
		a := newAnalyzer(Options{SkipPolls: true})
		deliver, known := a.row, a.known
		var fd *feeder
		if workers > 1 {
			fd = newFeeder(a, workers)
			deliver, known = fd.row, fd.known
		}
		for seq, ss := range [][]sample{{run, wait}, {run, wait}} {
			w := row(a, int64(seq), ss...)
			known(w)
			deliver(w)
		}
		// Lost: its third series is new, so its family would be read.
		known(row(a, 2, wait, run, kv))
		w := row(a, 3, wait, run)
		known(w)
		deliver(w)
		if fd != nil {
			fd.finish()
		}
		return slices.Clone(a.targets[a.tab.IDString("http://e1/metrics")].cells)
	}
	serial := cells(1)
	if c, ok := serial.Get(engine.RequestsRunning); !ok || !c.Value.Valid || c.Value.V != 5 {
		t.Fatalf("serial: requests running %+v", c)
	}
	if got := cells(2); !reflect.DeepEqual(got, serial) {
		c, _ := got.Get(engine.RequestsRunning)
		t.Fatalf("parallel cells differ from the serial path's; requests running %+v", c)
	}
}

// The serial path's Same hook knows a poll by its dictionary indexes
// only while the target's record of its series is the last delivered
// poll's: a poll asked of known but never delivered (its series in
// another order) changed that record, so the next poll, with the
// indexes of the last delivered one, is read by its names and looked up
// again (requests running 5, not the waiting 7 now in its place); a poll
// under other dictionaries is read by its names too.
func TestSerialSameAfterLostRow(t *testing.T) {
	a := newAnalyzer(Options{SkipPolls: true})
	a.r.Same = a.sameIdx
	tab := a.tab
	names := []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}
	vals := []float64{5, 7, 0.5}
	target := tab.IDString("http://e1/metrics")
	// ask is the reader on one row of the series at dictionary indexes
	// idx under dictionaries dict: Same first, then, when it does not
	// know them, the names read and known asked. It says whether Same
	// knew the row.
	ask := func(seq int64, dict uint64, idx ...int32) (*capture.Row, bool) {
		w := &capture.Row{Run: tab.IDString("run"), Target: target, Engine: tab.IDString("vllm"),
			Endpoint: a.metricsID, Outcome: a.okID, Seq: seq, Err: -1, Dict: dict}
		w.Start = int64(time.Unix(1_800_000_000, 0).Add(time.Duration(seq) * 2 * time.Second).UnixNano())
		w.FirstByte, w.End, w.Scheduled = w.Start+1e6, w.Start+2e6, w.Start
		for _, i := range idx {
			w.NameIdx = append(w.NameIdx, i)
			w.LabelsIdx = append(w.LabelsIdx, 0)
			w.Value = append(w.Value, vals[i])
		}
		if a.sameIdx(w) {
			return w, true
		}
		for _, i := range idx {
			w.Family = append(w.Family, tab.IDString(names[i]))
			w.Type = append(w.Type, tab.IDString("gauge"))
			w.Name = append(w.Name, tab.IDString(names[i]))
			w.Labels = append(w.Labels, tab.IDString(`{"model_name":"m"}`))
		}
		a.known(w)
		return w, false
	}
	running := func() float64 {
		t.Helper()
		c, ok := a.targets[target].cells.Get(engine.RequestsRunning)
		if !ok || !c.Value.Valid {
			t.Fatalf("requests running %+v", c)
		}
		return c.Value.V
	}
	steps := []struct {
		idx     []int32
		dict    uint64
		lost    bool
		inPlace bool
	}{
		{idx: []int32{0, 1}, dict: 1},                // a new target: read by names
		{idx: []int32{0, 1}, dict: 1, inPlace: true}, // the last poll's indexes
		{idx: []int32{0}, dict: 1, inPlace: true},    // the first of them
		{idx: []int32{0, 1}, dict: 2},                // other dictionaries
		{idx: []int32{0, 1}, dict: 2, inPlace: true},
		{idx: []int32{1, 0, 2}, dict: 2, lost: true}, // never delivered
		{idx: []int32{0, 1}, dict: 2},                // looked up again
		{idx: []int32{0, 1}, dict: 2, inPlace: true},
	}
	for seq, s := range steps {
		w, inPlace := ask(int64(seq), s.dict, s.idx...)
		if inPlace != s.inPlace {
			t.Fatalf("poll %d: known by its indexes %v, want %v", seq, inPlace, s.inPlace)
		}
		if s.lost {
			continue
		}
		a.row(w)
		if got := running(); got != 5 {
			t.Fatalf("poll %d: requests running %v, want 5", seq, got)
		}
	}
}

// A fleet whose heavy and light engines alternate (a vLLM page, then a
// llama.cpp one a tenth its size) is dealt so that each worker replays
// as many samples a poll; dealt in turn, one worker would get every
// heavy page.
func TestFeederDealsByFirstPoll(t *testing.T) {
	f := &feeder{load: make([]int, 2)}
	for _, samples := range []int{360, 36, 360, 36, 360, 36, 360, 36} {
		f.load[f.lightest()] += samples
	}
	if f.load[0] != f.load[1] {
		t.Errorf("workers' samples a poll %v, want equal", f.load)
	}
}
