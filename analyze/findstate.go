package analyze

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/findings"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/redact"
)

// targetMeta is what the manifests say about a target.
type targetMeta struct {
	interval       float64 // seconds; 0 unknown
	version, vfrom string
	model          string
	// ticks is how many ticks the manifests' sessions had: a capacity
	// hint for the per-poll records, 0 unknown.
	ticks int
	// byRun is the interval each session's manifest states, in seconds.
	byRun map[string]float64
	// slots is llama.cpp's slot count, from /props or /slots; 0 unknown.
	slots     int
	slotsFrom string
	// psHeader is the response header the configuration says carries
	// the process start, "" none.
	psHeader string
	// imports are the import records of the sessions that hold the
	// target, when they were imported (llmrec import).
	imports []*capture.Import
	// presence is the target's presence in each session, discovered set
	// when a session's discovery recorded it (else it was a target for
	// the whole of each session).
	presence   []findings.Presence
	discovered bool
}

// metaOf gathers the targets' cadence, engine version and model from a run
// folder's manifests; the first session that states one wins.
func metaOf(run *capture.Run, metas map[string]*targetMeta) {
	get := func(name string) *targetMeta {
		m, ok := metas[name]
		if !ok {
			m = &targetMeta{}
			metas[name] = m
		}
		return m
	}
	for _, man := range run.Manifests {
		for _, t := range man.Targets {
			m := get(t.Name)
			if man.Import != nil {
				m.imports = append(m.imports, man.Import)
			}
			if m.interval == 0 && t.IntervalNs > 0 {
				m.interval = float64(t.IntervalNs) / 1e9
			}
			if m.psHeader == "" {
				m.psHeader = t.ProcessStartHeader
			}
			m.presence = append(m.presence, presenceOf(man, t)...)
			m.discovered = m.discovered || len(t.Presence) > 0
			// An imported row's seq counts the store's rows, not ticks: no
			// cadence can be read from it.
			if t.IntervalNs > 0 && man.Import == nil {
				if m.byRun == nil {
					m.byRun = map[string]float64{}
				}
				m.byRun[man.RunID] = float64(t.IntervalNs) / 1e9
			}
			if man.EndNs != nil && t.IntervalNs > 0 && *man.EndNs > man.StartNs {
				m.ticks += int(min((*man.EndNs-man.StartNs)/t.IntervalNs+1, maxTicksHint))
			}
		}
		for name, infos := range man.Engines {
			m := get(name)
			for _, in := range infos {
				engineInfo(m, in)
			}
		}
	}
}

// leaves are the times the target left the target set, Unix seconds.
func (m *targetMeta) leaves() []float64 {
	var out []float64
	for _, p := range m.presence {
		if p.Leave > 0 {
			out = append(out, p.Leave)
		}
	}
	return out
}

// presenceOf is a target's presence in one session: as its manifest
// records it, or the whole session when it records none.
func presenceOf(man capture.Manifest, t capture.ManifestTarget) []findings.Presence {
	if len(t.Presence) == 0 {
		return []findings.Presence{{Join: float64(man.StartNs) / 1e9, AtStart: true}}
	}
	out := make([]findings.Presence, 0, len(t.Presence))
	for _, p := range t.Presence {
		fp := findings.Presence{Join: float64(p.JoinNs) / 1e9, AtStart: p.JoinNs <= man.StartNs}
		if p.URL != "" {
			fp.URL = redact.URL(p.URL)
		}
		if p.LeaveNs != nil {
			fp.Leave = float64(*p.LeaveNs) / 1e9
		}
		out = append(out, fp)
	}
	return out
}

// cadenceNote compares the interval the manifests state for a target with
// the cadence its rows were scheduled at: tick k of a session is scheduled
// at its start + k·interval, so two rows of a session give its interval.
// A manifest that disagrees was edited or damaged: the rows' cadence is
// used for the findings, and the note returned says so ("" when they agree
// or nothing tells).
func cadenceNote(m *targetMeta, rows []findings.Row) string {
	if m == nil || len(m.byRun) == 0 {
		return ""
	}
	first, last := map[string]findings.Row{}, map[string]findings.Row{}
	var runs []string
	for _, r := range rows {
		if r.Scheduled == 0 {
			continue
		}
		if _, ok := first[r.Run]; !ok {
			first[r.Run] = r
			runs = append(runs, r.Run)
		}
		last[r.Run] = r
	}
	var notes []string
	for _, run := range runs {
		a, b := first[run], last[run]
		said, ok := m.byRun[run]
		if !ok || b.Seq == a.Seq {
			continue
		}
		step := (b.Scheduled - a.Scheduled) / float64(b.Seq-a.Seq)
		// Times in float seconds keep about 0.2 µs: an edit is far larger.
		if math.Abs(step-said) <= 1e-3*said {
			continue
		}
		notes = append(notes, fmt.Sprintf("session %s: its manifest says every %s, but its rows were scheduled every %s (seq %d..%d); the rows' cadence is used",
			run, secondsText(said), secondsText(step), a.Seq, b.Seq))
		if m.interval == said {
			m.interval = step
		}
	}
	return strings.Join(notes, "; ")
}

func secondsText(s float64) string {
	return time.Duration(math.Round(s * 1e9)).String()
}

// maxTicksHint bounds the capacity a manifest can ask for (12 days at
// 2 s), so that a wrong one costs at most ~350 MB of empty records; a
// longer run grows its records as they come.
const maxTicksHint = 1 << 19

// engineInfo reads a version and a model from an engine's info endpoint:
// vLLM /version and /v1/models, llama.cpp /props, TGI /info.
func engineInfo(m *targetMeta, in capture.EngineInfo) {
	// Only a JSON answer says anything.
	if in.Status != 200 || len(in.JSON) == 0 {
		return
	}
	var doc struct {
		Version   string `json:"version"`
		BuildInfo string `json:"build_info"`
		ModelPath string `json:"model_path"`
		ModelID   string `json:"model_id"`
		// TotalSlots is llama.cpp's slot count in /props.
		TotalSlots int `json:"total_slots"`
		Data       []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if m.slots == 0 && in.Path == "/slots" {
		// llama-server's /slots is an array of one object per slot.
		var slots []json.RawMessage
		if json.Unmarshal(in.JSON, &slots) == nil && len(slots) > 0 {
			m.slots, m.slotsFrom = len(slots), "the length of /slots"
		}
		return
	}
	if json.Unmarshal(in.JSON, &doc) != nil {
		return
	}
	if m.slots == 0 && doc.TotalSlots > 0 {
		m.slots, m.slotsFrom = doc.TotalSlots, in.Path+" total_slots"
	}
	if m.version == "" {
		switch {
		case doc.Version != "":
			m.version, m.vfrom = doc.Version, in.Path
		case doc.BuildInfo != "":
			m.version, m.vfrom = doc.BuildInfo, in.Path
		}
	}
	if m.model == "" {
		m.model = doc.ModelID
		if len(doc.Data) > 0 {
			m.model = cmp.Or(m.model, doc.Data[0].ID)
		}
		m.model = cmp.Or(m.model, doc.ModelPath)
	}
}

// decodeFamilies are the families any engine's decode cell is read from.
var decodeFamilies = func() map[string]bool {
	m := map[string]bool{}
	for _, id := range engine.Engines {
		fams, _ := engine.Catalog(id)
		for _, k := range fams {
			if slices.Contains(strings.Fields(k.Feeds), engine.DecodeTokensPerSecond) {
				m[k.Family] = true
			}
		}
	}
	return m
}()

// feedsDecode reports whether a series can make a decode cell, or tell its
// counter restarted.
func feedsDecode(s engine.Series) bool {
	if decodeFamilies[s.Family] || s.Name == "process_start_time_seconds" {
		return true
	}
	base, ok := strings.CutSuffix(s.Name, "_created")
	return ok && (decodeFamilies[base+"_total"] || decodeFamilies[base])
}

// keyInfo is what the findings read from one series of a target.
type keyInfo struct {
	counter *findings.Counter // a watched counter
	energy  float64           // an energy counter's factor to joules; 0 none
	power   float64           // a power gauge's factor to watts; 0 none
	proc    bool              // process_start_time_seconds
	step    bool              // an engine-step counter (findings.StepCounters)
	info    string            // a watched info series' name
	labels  map[string]string // its labels, decoded once
}

// findingsState replays a target for the run findings: its rows, a compact
// record of each poll, the interval and counterfactual replays, and the
// watched series.
//
// The replays read only the decode cell, so they are fed only the series
// it can come from (decodeFamilies, their _created siblings and the
// process start time), under the engine the main replay detected: they
// start at the poll where it is known, with that poll.
type findingsState struct {
	t    *findings.Target
	keys []keyInfo
	main *engine.Tracker // the published replay, whose engine the others take
	// x replays the polls for the interval and the counterfactual spans
	// at once (engine.Tracker.DecodeUnder): its cells are the interval
	// replay's decode cell, then one per span. nil until the engine is
	// known.
	x      *engine.Tracker
	xcells engine.Cells
	xid    []int32 // main key id → the replays' id; -1 not fed to them
	// busy says, by main key id, whether set has anything to do with the
	// series: most have nothing, and one byte is cheaper to look at than
	// their keyInfo.
	busy []bool
	// setAt are the positions of the last poll's ids that set has work
	// for, kept while they stand (setOK: no series was keyed since, and
	// the poll's ids are the last one's): a target prints its series in
	// the same order every poll, and most are not the findings'.
	setAt  []int32
	setN   int
	setOK  bool
	series []engine.Series
	// feedIDs and feedVals are this poll's samples for the replays: the
	// main tracker's ids, then (replay) the replays'. One SetAll a replay
	// takes them, on its fast path when they are the last poll's series.
	feedIDs  []int32
	feedVals []float64
	slab     []rate.Num // backing of the poll's Spans, reused
	cfg      rate.Config
	spans    []float64
	nspans   int

	// The poll being replayed.
	p       findings.Poll
	power   float64
	powered bool
	energy  []*findings.Counter // energy counters, with their factors
	efac    []float64
	// infos are the info series' sets in this poll and those Target.Info
	// holds, by series (a handful: kept emptied, not dropped, between
	// polls; a slice is cheaper to walk each poll than a map).
	infos   []infoSets
	fams    map[string]bool  // the families seen
	errText map[int32]string // error text by string id, redacted
	// sources are the Sources last written of the cells at atCapacity
	// and atCaching: a poll that publishes the same writes nothing.
	sources [2]string
	// counts is Target.Cells by canonical position, until the run ends.
	counts []findings.CellCount
	// rowsDone is how many rows are faulted in, of t.Rows' array
	// (faultAhead).
	rowsDone int
}

// intervalGates replay each poll over the interval since the previous one
// with every gate off: the per-interval series the load edges are found
// on. A reset is still a reset, and a label set without a baseline still
// adds 0.
var intervalGates = rate.Config{Span: 1e-6, MinWindow: -1, CeilingFactor: -1, JumpFactor: -1, JumpFloor: -1,
	StaleFraction: -1}

func newFindingsState(name string, main *engine.Tracker, cfg rate.Config, spans []float64) *findingsState {
	return &findingsState{
		t: &findings.Target{Name: name, Histograms: map[string][]float64{}, Cells: map[string]findings.CellCount{},
			Counters: map[string]*findings.Counter{}, Info: map[string][]map[string]string{},
			Sources: map[string]string{}},
		main: main, cfg: cfg, spans: spans, nspans: len(spans),
		fams: map[string]bool{},
	}
}

// startReplays makes the interval and counterfactual replays under the
// engine the main replay detected, and registers the series they read.
func (fs *findingsState) startReplays(id string) {
	cfgs := make([]rate.Config, len(fs.spans))
	for i, sp := range fs.spans {
		cfgs[i] = fs.cfg
		cfgs[i].Span = sp
	}
	fs.x = engine.NewTracker(id, intervalGates)
	fs.x.DecodeUnder(cfgs...)
	fs.x.UseMemo(fs.main.Memo())
	for k := range fs.xid {
		if fs.xid[k] >= 0 {
			fs.xid[k] = fs.x.Key(fs.series[k])
		}
	}
}

// row keeps one /metrics row.
func (fs *findingsState) row(tab *capture.Strings, w *capture.Row) {
	r := findings.Row{Run: tab.Str(w.Run), Seq: w.Seq, Outcome: tab.Str(w.Outcome), Scheduled: sec(w.Scheduled),
		Start: sec(w.Start), FirstByte: sec(w.FirstByte), End: sec(w.End)}
	if w.Err >= 0 {
		r.Error = fs.errorText(tab, w.Err)
	}
	if len(fs.t.Rows) >= fs.rowsDone {
		fs.rowsDone = faultAhead(fs.t.Rows)
	}
	fs.t.Rows = grow(fs.t.Rows, r)
}

// errorText is the error column's text as the analysis may show it: a
// recording made before the recorder redacted its errors can hold a URL
// with its credentials. Each distinct text is redacted once.
func (fs *findingsState) errorText(tab *capture.Strings, id int32) string {
	if s, ok := fs.errText[id]; ok {
		return s
	}
	if fs.errText == nil {
		fs.errText = map[int32]string{}
	}
	s := redact.Text(tab.Str(id))
	fs.errText[id] = s
	return s
}

func sec(ns int64) float64 { return float64(ns) / 1e9 }

// key registers series id (the main tracker's) with the replays and
// notes what the findings read from it.
func (fs *findingsState) key(id int32, s engine.Series) {
	for int(id) >= len(fs.keys) {
		fs.keys = append(fs.keys, keyInfo{})
		fs.xid = append(fs.xid, -1)
		fs.busy = append(fs.busy, false)
		fs.series = append(fs.series, engine.Series{})
	}
	if feedsDecode(s) {
		fs.series[id], fs.xid[id] = s, 0
		if fs.x != nil {
			fs.xid[id] = fs.x.Key(s)
		}
	}
	k := &fs.keys[id]
	t := fs.t
	if !fs.fams[s.Family] {
		fs.fams[s.Family] = true
		t.Families = append(t.Families, s.Family)
	}
	labels := func() map[string]string {
		m, err := expo.DecodeLabels(s.Labels)
		if err != nil {
			return map[string]string{}
		}
		return m
	}
	if s.Type == "histogram" && strings.HasSuffix(s.Name, "_bucket") {
		// Labels that do not decode hold no le.
		v, _, _ := expo.Label(s.Labels, "le")
		if le, err := strconv.ParseFloat(v, 64); err == nil && !slices.Contains(t.Histograms[s.Family], le) {
			bs := append(t.Histograms[s.Family], le)
			slices.Sort(bs)
			t.Histograms[s.Family] = bs
		}
	}
	if t.Model == "" && strings.Contains(s.Labels, "model_name") {
		t.Model = labels()["model_name"]
	}
	counter := s.Type == "counter" || (s.Type == "untyped" && strings.HasSuffix(s.Name, "_total"))
	if src, ok := findings.EnergySourceOf(s.Name); ok {
		if src.Counter {
			k.energy = src.Scale
		} else {
			k.power = src.Scale
		}
	}
	if counter && (findings.Watched(s.Name) || k.energy > 0) || isPrefill(s.Name) {
		k.counter = fs.counter(s.Name)
	}
	if k.energy > 0 && !slices.Contains(fs.energy, k.counter) {
		fs.energy, fs.efac = append(fs.energy, k.counter), append(fs.efac, k.energy)
	}
	k.proc = s.Name == "process_start_time_seconds"
	k.step = findings.StepCounters[s.Name] && counter
	if s.Name == findings.CacheConfigInfo {
		k.info, k.labels = s.Name, labels()
	}
	fs.setOK = false
	fs.busy[id] = fs.xid[id] >= 0 || k.step || k.counter != nil || k.power > 0 || k.proc || k.info != ""
}

// isPrefill reports whether a histogram part is one of vLLM's prefill
// series the prefill-per-stream fact reads.
func isPrefill(name string) bool {
	switch name {
	case findings.PrefillComputedSum, findings.PrefillComputedCnt, findings.PrefillTimeSum, findings.PrefillTimeCnt:
		return true
	}
	return false
}

func (fs *findingsState) counter(name string) *findings.Counter {
	c, ok := fs.t.Counters[name]
	if !ok {
		c = &findings.Counter{}
		fs.t.Counters[name] = c
	}
	return c
}

// begin starts a poll.
func (fs *findingsState) begin(T, start float64) {
	fs.p = findings.Poll{T: T, Start: start}
	fs.power, fs.powered = 0, false
	fs.feedIDs, fs.feedVals = fs.feedIDs[:0], fs.feedVals[:0]
	// The lists keep their arrays: an info series is read on every poll.
	for i := range fs.infos {
		fs.infos[i].ids = fs.infos[i].ids[:0]
	}
}

// setAll records the poll's samples: vals[i] of series ids[i]. changed
// says whether ids may differ from the last poll's beyond their length.
func (fs *findingsState) setAll(ids []int32, vals []float64, changed bool) {
	vals = vals[:len(ids)]
	if !fs.setOK || changed || len(ids) != fs.setN {
		fs.setAt, fs.setN, fs.setOK = fs.setAt[:0], len(ids), true
		for i, id := range ids {
			// A series the findings do not read.
			if fs.busy[id] {
				fs.setAt = append(fs.setAt, int32(i))
			}
		}
	}
	for _, i := range fs.setAt {
		fs.set(ids[i], vals[i])
	}
}

// set records one sample of the poll.
func (fs *findingsState) set(id int32, v float64) {
	if fs.xid[id] >= 0 {
		fs.feedIDs, fs.feedVals = append(fs.feedIDs, id), append(fs.feedVals, v)
	}
	k := &fs.keys[id]
	// A step counter's sets add up; a reading that is not a number is none.
	if k.step && !math.IsNaN(v) && !math.IsInf(v, 0) {
		fs.p.Steps = rate.Some(fs.p.Steps.V + v)
	}
	switch {
	case k.counter != nil:
		k.counter.Observe(fs.p.T, id, v)
	case k.power > 0:
		fs.power += v * k.power
		fs.powered = true
	case k.proc:
		fs.p.ProcessStart = rate.Some(v)
	case k.info != "":
		fs.addInfo(k.info, id)
	}
}

// infoSets are an info series' sets in the poll (ids) and those
// Target.Info holds (was).
type infoSets struct {
	name     string
	ids, was []int32
}

// addInfo notes a set of info series name in the poll.
func (fs *findingsState) addInfo(name string, id int32) {
	for i := range fs.infos {
		if fs.infos[i].name == name {
			fs.infos[i].ids = append(fs.infos[i].ids, id)
			return
		}
	}
	fs.infos = append(fs.infos, infoSets{name: name, ids: []int32{id}})
}

// canonAt is the position of a canonical cell in a poll's cells, -1 for
// none; the findings' cells are found once, not by name on every poll.
func canonAt(name string) int { return slices.Index(engine.Canonical, name) }

var (
	atRunning, atWaiting, atByReason = canonAt(engine.RequestsRunning), canonAt(engine.RequestsWaiting), canonAt(engine.WaitingByReason)
	atKV, atTokens                   = canonAt(engine.KVCacheUsageRatio), canonAt(engine.TokensTotal)
	atCapacity, atCaching            = canonAt(engine.KVCacheCapacityTokens), canonAt(engine.PrefixCachingEnabled)
	atRate, atTotal                  [findings.NRates]int // of RateCells and TotalCells
)

func init() {
	for k := range findings.NRates {
		atRate[k], atTotal[k] = canonAt(findings.RateCells[k]), canonAt(findings.TotalCells[k])
	}
}

// noCell is the cell of a position a poll's cells do not reach.
var noCell engine.Cell

// cellAt returns the cell at position i of cs, or an empty one (never
// written through).
func cellAt(cs engine.Cells, i int) *engine.Cell {
	if i < 0 || i >= len(cs) {
		return &noCell
	}
	return &cs[i].Cell
}

// end closes the poll: cells is the published cells of the main replay.
// The poll's row is the last one kept (row comes first).
func (fs *findingsState) end(cells engine.Cells) {
	p := &fs.p
	p.Row = len(fs.t.Rows) - 1
	for k := range findings.RateCells {
		c := cellAt(cells, atRate[k])
		// Field by field: a Value made whole on the stack and then copied
		// is read back wide right after its narrow stores (a stall).
		r := &p.Rates[k]
		r.V, r.Window, r.Reason = c.Value, c.Window, c.Reason
		if k == findings.Decode && len(c.Notes) > 0 {
			p.DecodeNotes = c.Notes // the polls' list keeps a copy (PollList.Append)
		}
		if atTotal[k] >= 0 {
			p.Totals[k] = cellAt(cells, atTotal[k]).Value
		}
	}
	p.Running, p.Waiting = cellAt(cells, atRunning).Value, cellAt(cells, atWaiting).Value
	p.KV, p.TokensTotal = cellAt(cells, atKV).Value, cellAt(cells, atTokens).Value
	if by := cellAt(cells, atByReason); by.Value.Valid {
		p.Capacity, p.Deferred = byKey(by.By, "capacity"), byKey(by.By, "deferred")
	}
	for j, i := range [...]int{atCapacity, atCaching} {
		// The source the map holds already is not written again.
		if c := cellAt(cells, i); c.Value.Valid && (c.Source != fs.sources[j] || c.Source == "") {
			fs.t.Sources[engine.Canonical[i]], fs.sources[j] = c.Source, c.Source
		}
	}
	p.KVCapacity, p.PrefixCaching = cellAt(cells, atCapacity).Value, cellAt(cells, atCaching).Value
	if p.Restart = fs.main.Restart(); p.Restart != "" {
		// The run's counters count the new process from 0.
		for _, c := range fs.t.Counters {
			c.Restart(p.T)
		}
	}
	fs.replay()
	if len(fs.energy) > 0 {
		e := 0.0
		for i, c := range fs.energy {
			e += c.Increase * fs.efac[i]
		}
		p.Energy = rate.Some(e)
	}
	if fs.powered {
		p.Power = rate.Some(fs.power)
	}
	for j := range fs.infos {
		in := &fs.infos[j]
		// A series not in this poll leaves its last sets; the same sets
		// as last time are the ones held.
		if len(in.ids) == 0 || slices.Equal(in.ids, in.was) {
			continue
		}
		in.was = append(in.was[:0], in.ids...)
		sets := make([]map[string]string, len(in.ids))
		for i, id := range in.ids {
			sets[i] = fs.keys[id].labels
		}
		fs.t.Info[in.name] = sets
	}
	if n := min(len(cells), len(engine.Canonical)); len(fs.counts) < n {
		fs.counts = append(fs.counts, make([]findings.CellCount, n-len(fs.counts))...)
	}
	// The counts' and the cells' arrays held in registers: counts stores
	// would otherwise reload fs.counts each cell.
	counts := fs.counts[:min(len(cells), len(engine.Canonical))]
	cells = cells[:len(counts)]
	for i := range counts {
		c := &cells[i].Cell
		n := &counts[i]
		switch {
		case c.Value.Valid:
			n.Valued++
		case c.Reason == rate.ReasonAbsent:
			n.Absent++
		case c.Reason != engine.ReasonNotExported:
			n.Other++
		}
	}
	fs.t.Polls.Append(p)
}

// replay feeds the poll to the interval and counterfactual replays and
// keeps their decode cells; until the engine is known there are none.
func (fs *findingsState) replay() {
	p := &fs.p
	if fs.nspans > 0 {
		// The polls' list copies a poll's spans (PollList.Append): one
		// array serves every poll, null again at each.
		if fs.slab == nil {
			fs.slab = make([]rate.Num, fs.nspans)
		}
		clear(fs.slab)
		p.Spans = fs.slab[:fs.nspans:fs.nspans]
	}
	if fs.x == nil {
		id, how := fs.main.Engine()
		// No engine yet, or none to read a decode rate from: nothing to replay.
		if how == "" || id == engine.Generic {
			p.Interval.Reason = rate.ReasonNoBaseline
			return
		}
		fs.startReplays(id)
	}
	for i, id := range fs.feedIDs {
		fs.feedIDs[i] = fs.xid[id]
	}
	x := fs.x
	x.Begin(p.T, p.Start)
	// A restart the replays' own series may not show is still one.
	if p.Restart != "" {
		x.MarkRestart(p.Restart)
	}
	x.SetAll(fs.feedIDs, fs.feedVals)
	fs.xcells = x.End(fs.xcells)
	d := &fs.xcells[0].Cell
	p.Interval.V, p.Interval.Window, p.Interval.Reason = d.Value, d.Window, d.Reason
	for j := range p.Spans {
		p.Spans[j] = fs.xcells[j+1].Cell.Value
	}
}

// byKey is one part of a by-label cell; null when the label value is not
// published.
func byKey(by map[string]float64, k string) rate.Num {
	v, ok := by[k]
	if !ok {
		return rate.Num{}
	}
	return rate.Some(v)
}

// run assembles the findings' input once every file is read.
func (a *analyzer) run() *findings.Run {
	run := &findings.Run{Gates: a.cfg.WithDefaults(), Spans: a.spans, Caps: a.opts.Caps, KeepPolls: !a.opts.SkipPolls}
	for _, st := range a.targets {
		t := st.fw.t
		t.Engine, _ = st.tr.Engine()
		t.Unknown = st.tr.Unknown()
		t.DecodeSpan = st.tr.DecodeSpan()
		for i, n := range st.fw.counts {
			t.Cells[engine.Canonical[i]] = n
		}
		slices.Sort(t.Families)
		for _, c := range t.Counters {
			c.Done()
		}
		// Rows came in the files' order, which is each target's tick order.
		if m := a.metas[t.Name]; m != nil {
			t.Interval, t.Version, t.VersionSource = m.interval, m.version, m.vfrom
			t.Model = cmp.Or(m.model, t.Model)
			t.Slots, t.SlotsSource = m.slots, m.slotsFrom
			if m.discovered {
				t.Presence = slices.SortedStableFunc(slices.Values(m.presence), func(a, b findings.Presence) int { return cmp.Compare(a.Join, b.Join) })
			}
		}
		run.Targets = append(run.Targets, t)
	}
	return run
}
