package analyze

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/goldentest"
	"github.com/llmrec/llmrec/record/sim"
	"github.com/parquet-go/parquet-go"
)

// The findings recording (captures/findings, made by its record.sh): a 120 s
// recording at 1 s of a simulated vLLM with 5 load starts and 5 ends and a
// label set joining at 86 s, a llama.cpp busy throughout that answers HTTP
// 500 for 4 s from 28 s and restarts at 96 s, and the recorder itself paused
// for 15 s. The simulator's truth log says what was served and when.
const findingsDir = "../captures/findings"

// truthLog is the simulator's log of what it served.
type truthLog struct {
	anchor  float64 // Unix seconds of scenario offset 0
	entries []sim.LogEntry
}

func readTruth(t *testing.T) *truthLog {
	t.Helper()
	f, err := os.Open(findingsDir + "/truth.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tl := &truthLog{anchor: math.Inf(1)}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e sim.LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		tl.entries = append(tl.entries, e)
		// A body is rendered for its offset at once after the offset is
		// taken: the earliest render time less its offset is the start.
		if e.RenderedNs > 0 {
			tl.anchor = min(tl.anchor, float64(e.RenderedNs-int64(e.Offset))/1e9)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tl
}

// metrics are the truth entries of an engine's /metrics answers, in order.
func (tl *truthLog) metrics(name string) []sim.LogEntry {
	var out []sim.LogEntry
	for _, e := range tl.entries {
		if e.Engine == name && e.Path == "/metrics" {
			out = append(out, e)
		}
	}
	return out
}

// trueEdge is a load edge as the scenario and truth log have it.
type trueEdge struct {
	kind  string
	t     float64 // Unix seconds
	level float64 // the new total decode rate (0 for an end)
}

// trueEdges reads vLLM's edges from the scenario's phases and checks them
// against the truth log: the served rate is 0 on one side and not on the
// other, and the level is the truth's rate times the label sets served.
func trueEdges(t *testing.T, tl *truthLog) []trueEdge {
	t.Helper()
	sc, err := sim.LoadScenario(findingsDir + "/scenario.toml")
	if err != nil {
		t.Fatal(err)
	}
	var spec *sim.EngineSpec
	for i := range sc.Engines {
		if sc.Engines[i].Name == "vllm-0" {
			spec = &sc.Engines[i]
		}
	}
	ms := tl.metrics("vllm-0")
	var out []trueEdge
	for i := 1; i < len(spec.Phases); i++ {
		was, is := spec.Phases[i-1].DecodeTPS > 0, spec.Phases[i].DecodeTPS > 0
		if was == is {
			continue
		}
		at := spec.Phases[i].At
		e := trueEdge{kind: findings.EdgeEnd, t: tl.anchor + at.Seconds()}
		k := slices.IndexFunc(ms, func(x sim.LogEntry) bool { return x.Truth != nil && x.Offset > at })
		if k < 1 {
			t.Fatalf("no truth around the edge at %v", at)
		}
		before, after := ms[k-1].Truth, ms[k].Truth
		if (before.Rates.GenerationTokens > 0) != was || (after.Rates.GenerationTokens > 0) != is {
			t.Fatalf("the truth log disagrees with the scenario at %v: %v then %v", at, before.Rates, after.Rates)
		}
		if is {
			e.kind, e.level = findings.EdgeStart, after.Rates.GenerationTokens*float64(len(after.Sets))
		}
		out = append(out, e)
	}
	return out
}

// published returns a target's polls and their published decode values.
func published(t *testing.T, res *Result, name string) ([]float64, []rate.Num) {
	t.Helper()
	tg := onlyTarget(t, res, name)
	var ts []float64
	var vs []rate.Num
	for _, p := range tg.Polls {
		c, _ := p.Cells.Get(engine.DecodeTokensPerSecond)
		ts, vs = append(ts, p.T), append(vs, c.Value)
	}
	return ts, vs
}

// handSettle is the settle poll of a true edge computed from the published
// values: the first poll after the edge, before the next, whose value is
// within |ln(v/level)| ≤ 0.1 of the true level (exactly 0 for an end); and
// |ln(v/level)| at poll 2 for a start. 0 when it never settles.
func handSettle(e trueEdge, next float64, ts []float64, vs []rate.Num) (poll int, ln2 float64) {
	k := 0
	ln2 = math.NaN()
	for i := range ts {
		if ts[i] <= e.t || ts[i] >= next {
			continue
		}
		k++
		v := vs[i]
		if k == 2 && e.kind == findings.EdgeStart && v.Valid && v.V > 0 {
			ln2 = math.Abs(math.Log(v.V / e.level))
		}
		if poll > 0 || !v.Valid {
			continue
		}
		if (e.kind == findings.EdgeEnd && v.V == 0) ||
			(e.kind == findings.EdgeStart && v.V > 0 && math.Abs(math.Log(v.V/e.level)) <= 0.1) {
			poll = k
		}
	}
	return poll, ln2
}

// The findings recording yields exactly its incidents (one host stall of
// both targets, not per-target gaps; one gap of llamacpp-0 from its HTTP
// 500s; one restart of llamacpp-0; one label join on vllm-0, which is not a
// restart), exactly its 5 starts and 5 ends on vllm-0 and none on
// llamacpp-0, all judged, settling at the polls computed here by hand from
// the published rates and the truth's levels, under the published 10 s span
// and the counterfactual 2 s one; and no published decode value above a
// 5000 tok/s cap while a naive Δ/Δt goes above it.
func TestFindingsRecording(t *testing.T) {
	tl := readTruth(t)
	decodeCap, err := findings.ParseCap("decode=5000")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{findingsDir + "/run"}, Caps: []findings.Cap{decodeCap}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("problems: %+v", res.Problems)
	}
	// Spans by counter kind: vLLM's decode is published over the 1 s
	// interval, so the configured 10 s is its counterfactual.
	if !slices.Equal(res.Spans, []float64{2, 10}) {
		t.Fatalf("counterfactual spans %v, want [2 10]", res.Spans)
	}

	// Incidents: exactly these four.
	var kinds []string
	for _, in := range res.Incidents {
		kinds = append(kinds, in.Kind+"/"+string(in.Target))
	}
	want := []string{"gap/llamacpp-0", "host_stall/", "label_join/vllm-0", "restart/llamacpp-0"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("incidents %v, want %v", kinds, want)
	}
	byKind := map[string]findings.Incident{}
	for _, in := range res.Incidents {
		byKind[in.Kind] = in
	}

	stall := byKind[findings.KindHostStall]
	if !slices.Equal(stall.Targets, []string{"llamacpp-0", "vllm-0"}) || stall.Cause != "recorder_stalled" {
		t.Errorf("host stall %+v", stall)
	}
	if d := stall.End.V - stall.Start.V; d < 14.5 || d > 15.5 {
		t.Errorf("host stall of %.3f s, want the 15 s pause", d)
	}
	// The truth log has no /metrics request of either engine inside the stall.
	for _, e := range tl.entries {
		at := float64(e.ReceivedNs) / 1e9
		if e.Path == "/metrics" && at > stall.Start.V && at < stall.End.V {
			t.Errorf("%s was scraped at %.3f inside the host stall", e.Engine, at)
		}
	}
	// Both targets' first polls after it are refused by the ceiling: they
	// measured no window. vLLM's decode is windowed over its 1 s interval
	// (2 s ceiling), llama.cpp's over the request duration chosen from the
	// data (about 4 s: an 8 s ceiling), no longer averaged over the stall
	// as the fixed 10 s span (20 s ceiling) did.
	if len(stall.Cells) != 2 || stall.Gate != rate.ReasonCeiling || stall.Cells[1].Target != "vllm-0" ||
		stall.Cells[1].Reason != rate.ReasonCeiling || stall.Cells[0].Reason != rate.ReasonCeiling {
		t.Errorf("host stall cells %+v gate %q: want both targets' first polls after refused by the ceiling",
			stall.Cells, stall.Gate)
	}

	gap := byKind[findings.KindGap]
	if gap.Rows["http_error"] != 4 || gap.Cause != findings.KindScrapeErr ||
		gap.Errors["HTTP 500 Internal Server Error"] != 4 {
		t.Errorf("gap %+v, want the 4 HTTP 500s", gap)
	}
	served500 := 0
	for _, e := range tl.metrics("llamacpp-0") {
		if e.Status == 500 {
			served500++
			if at := float64(e.ReceivedNs) / 1e9; at < gap.Start.V || at > gap.End.V {
				t.Errorf("HTTP 500 at %.3f outside the gap %v..%v", at, gap.Start, gap.End)
			}
		}
	}
	if served500 != 4 {
		t.Errorf("the truth log has %d HTTP 500s, want 4", served500)
	}

	restart := byKind[findings.KindRestart]
	lm := tl.metrics("llamacpp-0")
	var trueRestart float64
	for i := 1; i < len(lm); i++ {
		if lm[i].Truth != nil && lm[i-1].Truth != nil && lm[i].Truth.ProcessStart != lm[i-1].Truth.ProcessStart {
			trueRestart = lm[i].Truth.ProcessStart
		}
	}
	if math.Abs(trueRestart-(tl.anchor+96)) > 0.02 {
		t.Fatalf("the truth's restart at %.3f, want the scenario's 96 s (%.3f)", trueRestart, tl.anchor+96)
	}
	if trueRestart < restart.Start.V || trueRestart > restart.End.V || restart.Gate != rate.ReasonReset {
		t.Errorf("restart %v..%v gate %q, the truth's at %.3f", restart.Start, restart.End, restart.Gate, trueRestart)
	}
	// llama.cpp publishes no process start time: the incident says so with a null.
	if restart.ProcessStart == nil || restart.ProcessStart.Valid {
		t.Errorf("restart process start %v, want null (llama.cpp does not publish it)", restart.ProcessStart)
	}

	join := byKind[findings.KindLabelJoin]
	vm := tl.metrics("vllm-0")
	first2 := slices.IndexFunc(vm, func(e sim.LogEntry) bool { return e.Truth != nil && len(e.Truth.Sets) == 2 })
	if first2 < 1 || !strings.Contains(join.Labels, `engine="1"`) {
		t.Fatalf("label join %+v; truth sets from entry %d", join, first2)
	}
	joinedAt := float64(vm[first2].SentNs) / 1e9
	if math.Abs(join.T.V-joinedAt) > 0.1 {
		t.Errorf("label join at %.3f, the truth first served two sets at %.3f", join.T.V, joinedAt)
	}
	if !join.Naive.Valid || join.Naive.V < 1e5 || !join.Cells[0].Value.Valid || join.Cells[0].Value.V > 5000 {
		t.Errorf("label join naive %v published %v: want a naive spike and a sane published value", join.Naive, join.Cells[0].Value)
	}

	// Edges: the truth's 10 on vllm-0, none on llamacpp-0, all judged.
	edges := trueEdges(t, tl)
	if len(edges) != 10 {
		t.Fatalf("%d true edges", len(edges))
	}
	// The second label set joining at 86 s doubles the summed decode rate
	// 4 polls after the load started and 6 before it ends: no level edge,
	// which needs 8 polls at each level (a level must outlast a load
	// driver's drain).
	var found, levels []findings.Edge
	for _, e := range res.Edges {
		if e.Kind == findings.EdgeLevel {
			levels = append(levels, e)
		} else {
			found = append(found, e)
		}
	}
	if len(levels) != 0 {
		t.Errorf("level edges %+v, want none around the label join %.3f", levels, joinedAt)
	}
	if len(found) != len(edges) {
		for _, e := range res.Edges {
			t.Logf("edge %s %s %.3f judged %v %s", e.Target, e.Kind, e.T, e.Judged, e.Why)
		}
		t.Fatalf("%d edges found, want %d", len(found), len(edges))
	}
	ts, vs := published(t, res, "vllm-0")
	// The counterfactual span replayed is checked against a real replay
	// published under that span.
	res2, err := Analyze(Options{Dirs: []string{findingsDir + "/run"}, Gates: rate.Config{Span: 2}, Spans: []float64{}})
	if err != nil {
		t.Fatal(err)
	}
	ts2, vs2 := published(t, res2, "vllm-0")
	for i, e := range found {
		te := edges[i]
		if e.Target != "vllm-0" || e.Kind != te.kind || math.Abs(e.T-te.t) > 0.05 || !e.Judged {
			t.Errorf("edge %d: %s %s at %.3f judged %v (%s); truth %s at %.3f", i, e.Target, e.Kind, e.T, e.Judged, e.Why,
				te.kind, te.t)
			continue
		}
		if te.kind == findings.EdgeStart && math.Abs(math.Log(e.Level.V/te.level)) > 0.01 {
			t.Errorf("edge %d: level %v, truth %v", i, e.Level, te.level)
		}
		next := math.Inf(1)
		if i+1 < len(edges) {
			next = edges[i+1].t
		}
		for _, c := range []struct {
			name   string
			ts     []float64
			vs     []rate.Num
			got    findings.EdgeSpan
			span   float64
			lnWant float64
		}{{"published 1 s", ts, vs, e.EdgeSpan, 1, 0}, {"counterfactual 2 s", ts2, vs2, e.Counterfactual[0], 2, 0}} {
			poll, ln2 := handSettle(te, next, c.ts, c.vs)
			got := 0
			if c.got.SettlePoll != nil {
				got = *c.got.SettlePoll
			}
			t.Logf("edge %d %-5s %.3f %s: settle poll %d (by hand %d), |ln| at poll 2 %v (by hand %.4f)",
				i, te.kind, te.t, c.name, got, poll, c.got.LnErrPoll2, ln2)
			if got != poll || c.got.Span != c.span {
				t.Errorf("edge %d (%s at %.3f), %s: settle poll %d, by hand %d", i, te.kind, te.t, c.name, got, poll)
			}
			if !math.IsNaN(ln2) && (!c.got.LnErrPoll2.Valid || math.Abs(c.got.LnErrPoll2.V-ln2) > 0.01) {
				t.Errorf("edge %d, %s: |ln| at poll 2 %v, by hand %.4f", i, c.name, c.got.LnErrPoll2, ln2)
			}
		}
	}
	// Every-step decode over the interval reads the new level, and 0 after
	// a load ends, by poll 2 on every edge.
	if s := res.Settle[0]; !s.Published || s.Span != 1 || s.Judged != 10 || s.Edges != 10 || s.ByPoll2 != 10 {
		t.Errorf("settle %+v", s)
	}

	// Caps: no published decode value above 5000 tok/s; a naive Δ/Δt is.
	for _, r := range res.Rollups {
		if r.Cell != engine.DecodeTokensPerSecond {
			continue
		}
		if !r.Cap.Valid || r.Cap.V != 5000 || r.AboveCap != 0 {
			t.Errorf("%s: cap %v, %d published above it", r.Target, r.Cap, r.AboveCap)
		}
		if r.Target == "vllm-0" && r.NaiveAboveCap < 1 {
			t.Errorf("vllm-0: no naive value above the cap: the label join should give one")
		}
	}
	for _, name := range []string{"vllm-0", "llamacpp-0"} {
		_, vs := published(t, res, name)
		for _, v := range vs {
			if v.Valid && v.V > 5000 {
				t.Errorf("%s published %v tok/s", name, v.V)
			}
		}
	}

	// Facts: the queue's ceiling where the truth first queued on capacity,
	// and the KV pool of the two engines' cache configs.
	firstCap := slices.IndexFunc(vm, func(e sim.LogEntry) bool { return e.Truth != nil && e.Truth.Rates.Waiting > 0 })
	facts := factsOf(t, res, "vllm-0")
	if c := facts[findings.FactCeiling]; !c.T.Valid || math.Abs(c.T.V-float64(vm[firstCap].SentNs)/1e9) > 0.1 || c.Value.V != 4 {
		t.Errorf("ceiling %+v; truth first capacity queueing at %.3f", c, float64(vm[firstCap].SentNs)/1e9)
	}
	if kv := facts[findings.FactKVPool]; kv.Value.V != 2*20000*16 {
		t.Errorf("KV pool %+v", kv)
	}
	if pc := facts[findings.FactPrefixCaching]; pc.Value.V != 1 {
		t.Errorf("prefix caching %+v", pc)
	}
	if _, ok := facts[findings.FactCachedFraction]; ok {
		t.Error("a cached fraction stated while prefix caching is on")
	}
	// llama.cpp states nothing about itself: all 4 slots (its /props
	// total_slots) busy with nothing deferred is no evidence of a hidden
	// queue, and the simulator's /metrics never waits for an HTTP thread.
	lf := factsOf(t, res, "llamacpp-0")
	firstFull := slices.IndexFunc(lm, func(e sim.LogEntry) bool {
		return e.Truth != nil && e.Truth.Rates.Running == 4 && e.Truth.Rates.Waiting == 0
	})
	if _, ok := lf[findings.FactHiddenQueue]; ok || len(lf) != 0 || firstFull < 0 {
		t.Errorf("llama.cpp facts %+v; the truth ran 4 slots with none waiting from entry %d: nothing to state", lf, firstFull)
	}
}

func factsOf(t *testing.T, res *Result, name string) map[string]findings.Fact {
	t.Helper()
	out := map[string]findings.Fact{}
	for _, tf := range res.Facts {
		if tf.Target == name {
			for _, f := range tf.Facts {
				out[f.Name] = f
			}
		}
	}
	return out
}

// dcgmBody is a DCGM exporter's exposition for two GPUs: power in W (a
// gauge) and energy since boot in mJ (a counter without _total, as
// dcgm-exporter prints it).
func dcgmBody(watts, mJ float64) []byte {
	var b strings.Builder
	b.WriteString("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n")
	for g := range 2 {
		fmt.Fprintf(&b, "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%d\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"h\"} %g\n", g, g, g, watts)
	}
	b.WriteString("# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n")
	for g := range 2 {
		fmt.Fprintf(&b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\",UUID=\"GPU-%d\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"h\"} %.0f\n", g, g, g, 9e9+mJ)
	}
	return []byte(b.String())
}

// A DCGM exporter recorded as a target of its own gives joules per
// generated token over the busy windows, with provenance: two GPUs at
// 100 W idle and 300 W while the engine generates 100 tok/s for 20 s are
// 12 kJ over 2000 tokens. Without it, nothing is said about energy.
func TestEnergyFromDCGM(t *testing.T) {
	dir := t.TempDir()
	var rows []capture.Scrape
	gen, mJ := 0.0, 0.0
	for i := range 41 {
		at := 1000 + float64(i)
		busy := i > 10 && i <= 30
		watts := 100.0
		if busy {
			gen += 100
			watts = 300
		}
		if i > 0 {
			mJ += watts * 1000
		}
		running := 0
		if busy {
			running = 1
		}
		rows = append(rows, scrape(testRun, "llama", int64(i), at, llamaBodyRunning(gen, running)),
			scrape(testRun, "dcgm", int64(i), at, dcgmBody(watts, mJ)))
	}
	record(t, dir, testRun, rows, 0)
	res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Energy
	if e == nil {
		t.Fatal("no energy")
	}
	if e.Method != "counter" || e.Busy != 20 || e.Joules.V != 2*200*20+2*100*20 || e.Tokens.V != 2000 ||
		math.Abs(e.JoulesPerToken.V-6) > 1e-12 || !slices.Equal(e.Sources, []string{"dcgm"}) ||
		!slices.Contains(e.Series, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") || !e.Derived ||
		!strings.Contains(e.Source, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") || !strings.Contains(e.Source, "llama") {
		t.Errorf("energy %+v", e)
	}
	if tg := onlyTarget(t, res, "dcgm"); tg.Engine != engine.Generic || !slices.Equal(res.Fleet.Other, []string{"dcgm"}) {
		t.Errorf("dcgm is %s, fleet %+v", tg.Engine, res.Fleet)
	}
	var out bytes.Buffer
	if err := res.WriteSummary(&out); err != nil || !strings.Contains(out.String(), "energy (counter of dcgm): 12000 J over 20 s busy, 2000 tokens: 6 J/token") {
		t.Errorf("summary: %v\n%s", err, out.String())
	}

	// The same engine alone: no energy key, no energy line.
	alone := t.TempDir()
	var only []capture.Scrape
	for _, r := range rows {
		if r.Target == "llama" {
			only = append(only, r)
		}
	}
	record(t, alone, testRun, only, 0)
	res, err = Analyze(Options{Dirs: []string{alone}, SkipPolls: true})
	if err != nil || res.Energy != nil {
		t.Fatalf("energy without a source: %+v %v", res.Energy, err)
	}
	var js, sum bytes.Buffer
	res.WriteJSON(&js)
	res.WriteSummary(&sum)
	if strings.Contains(js.String(), `"energy"`) || strings.Contains(sum.String(), "energy") {
		t.Error("energy said without a source")
	}
}

// The facts of the real captures, each recorded as two polls of its one
// body: what a capture publishes is stated (the KV pool and cache config of
// vLLM V1 and V0, TensorRT-LLM's pool), and every fact's series is in the
// capture: none is invented.
func TestRealCaptureFacts(t *testing.T) {
	const real = "../../shared/captures/real"
	files, _ := filepath.Glob(filepath.Join(real, "*.txt"))
	if len(files) == 0 {
		t.Skipf("no real captures in %s", real)
	}
	want := map[string]map[string]float64{
		"vllm-v1-armandossrecife-vllm-server-api-chat.txt": {findings.FactKVPool: 850 * 16, findings.FactPrefixCaching: 1},
		"vllm-v0-datadog-integrations-core.txt": {findings.FactKVPool: 7281 * 16, findings.FactPrefixCaching: 0,
			findings.FactCachedFraction: 0},
		"trtllm-triton-tensorrtllm_backend-readme.txt": {findings.FactKVPool: 6239 * 64},
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		record(t, dir, testRun, []capture.Scrape{scrape(testRun, "x", 0, 1000, body), scrape(testRun, "x", 1, 1010, body)}, 0)
		res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true})
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		got := factsOf(t, res, "x")
		exp := want[name]
		if len(got) != len(exp) {
			t.Errorf("%s: facts %v, want %v", name, keys(got), exp)
		}
		for k, v := range exp {
			if g, ok := got[k]; !ok || !g.Value.Valid || g.Value.V != v {
				t.Errorf("%s: %s = %+v, want %v", name, k, g, v)
			}
		}
		for k, fct := range got {
			for _, series := range seriesIn(fct.Source) {
				if !strings.Contains(string(body), series) {
					t.Errorf("%s: fact %s rests on %s, which the capture lacks", name, k, series)
				}
			}
		}
	}
}

func keys(m map[string]findings.Fact) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// seriesIn picks the series names out of a provenance string.
func seriesIn(src string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(src, func(r rune) bool { return strings.ContainsRune(" ()/×Δ+,{}=\"", r) }) {
		w = strings.TrimPrefix(w, "computed:")
		if strings.Contains(w, "_") && !strings.HasPrefix(w, "num_gpu") && w != "block_size" && w != "enable_prefix_caching" {
			out = append(out, w)
		}
	}
	return out
}

// The findings of the findings recording as JSON, against a golden file
// (rewritten with -update): every key but the per-poll cells, whose SHA-256
// digest stands in for them.
func TestFindingsGolden(t *testing.T) {
	decodeCap, _ := findings.ParseCap("decode=5000")
	res, err := Analyze(Options{Dirs: []string{findingsDir + "/run"}, Caps: []findings.Cap{decodeCap}, Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	polls := 0
	for i := range res.Targets {
		for k := range res.Targets[i].Polls {
			b, _ := json.Marshal(&res.Targets[i].Polls[k])
			h.Write(b)
			polls++
		}
		res.Targets[i].Polls = []Poll{}
	}
	res.Fleet.Polls = res.Fleet.Polls[:3]
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b.Bytes(), "", " "); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("polls: %d, sha256 of their JSON: %x\n%s", polls, h.Sum(nil), pretty.String())
	goldentest.Check(t, filepath.Join("testdata", "findings.golden.json"), []byte(got))
}

// The columns the findings read are optional (a file without them is read
// with their times unknown), but one of the wrong type is a problem.
func TestOptionalColumnOfTheWrongType(t *testing.T) {
	type wrongError struct {
		RunID       string        `parquet:"run_id"`
		Target      string        `parquet:"target"`
		Engine      string        `parquet:"engine"`
		Endpoint    string        `parquet:"endpoint"`
		Seq         int64         `parquet:"seq"`
		Outcome     string        `parquet:"outcome"`
		StartNs     int64         `parquet:"start_ns,optional"`
		FirstByteNs int64         `parquet:"first_byte_ns,optional"`
		Samples     []plainSample `parquet:"samples,list"`
		Error       int64         `parquet:"error,optional"`
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, testRun+"-000001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[wrongError](f)
	w.Write([]wrongError{{RunID: testRun, Target: "x", Endpoint: "metrics", Outcome: "ok"}})
	w.Close()
	f.Close()
	res, err := Analyze(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error, "column error is INT64, want BYTE_ARRAY") {
		t.Errorf("problems %+v", res.Problems)
	}
}
