package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/phases"
	"github.com/llmrec/llmrec/analyze/rate"
)

// Input is what a report is made from: the analysis and what the user
// asked for. Nothing here is computed again; the report lays out the
// analysis.
type Input struct {
	Result *analyze.Result
	Title  string // default "llmrec report"
	Config string // the effective configuration, shown in the appendix
	// Polls, when set, is what the charts are drawn from: the analysis
	// handed its polls to it (analyze.Options.Polls) instead of keeping
	// them in Target.Polls. Nil: they are taken from Target.Polls.
	Polls *Polls
}

// targetChart is one chart per target: the cells it draws, all in one
// unit (the y axis's name), named by NameOf in the legend.
type targetChart struct {
	key, title, unit string
	percent, step    bool
	cells            []string
	bands            bool
}

var targetCharts = []targetChart{
	{key: "tokens", title: "Tokens per second", unit: UnitTokensPS,
		cells: []string{engine.DecodeTokensPerSecond, engine.PromptTokensPerSecond, engine.PromptTokensComputedPerSecond}},
	{key: "requests", title: "Requests running and waiting", unit: UnitRequests, step: true,
		cells: []string{engine.RequestsRunning, engine.RequestsWaiting}},
	{key: "kv", title: "KV-cache usage", percent: true, step: true, bands: true,
		cells: []string{engine.KVCacheUsageRatio}},
	{key: "ttft", title: "Time to first token (windowed percentiles)", unit: UnitSeconds,
		cells: []string{engine.TTFT + "__p50", engine.TTFT + "__p95", engine.TTFT + "__p99"}},
	{key: "tpot", title: "Time per output token and inter-token latency (windowed)", unit: UnitSeconds,
		cells: []string{engine.TPOT + "__p50", engine.TPOT + "__p95", engine.ITL + "__p50", engine.ITL + "__p95"}},
	{key: "e2e", title: "End-to-end and queue time (windowed)", unit: UnitSeconds,
		cells: []string{engine.E2E + "__p50", engine.E2E + "__p95", engine.Queue + "__p50", engine.Queue + "__p95"}},
	{key: "cache", title: "Prefix-cache hit ratio", percent: true,
		cells: []string{engine.PrefixCacheHitRatio}},
	{key: "spec", title: "Speculative-decoding acceptance", percent: true,
		cells: []string{engine.SpecAcceptRatio}},
	{key: "preempt", title: "Preemptions per second", unit: "preemptions/s",
		cells: []string{engine.PreemptionsPerSecond}},
}

// FromAnalysis lays out an analysis as a report.
func FromAnalysis(in Input) (Report, error) {
	res := in.Result
	title := in.Title
	if title == "" {
		title = "llmrec report"
	}
	r := Report{Title: title, Generator: res.Generator, Answer: answerTable(res), Verdicts: answerFindings(res), Header: header(res)}
	polls := in.Polls
	if polls == nil {
		polls = NewPolls()
		for _, t := range res.Targets {
			for i := range t.Polls {
				polls.Add(t.Name, &t.Polls[i])
			}
		}
	}
	ov, err := overview(res, polls)
	if err != nil {
		return Report{}, err
	}
	r.Overview = ov
	sw, ok, err := sweepSection(res)
	if err != nil {
		return Report{}, err
	}
	if ok {
		r.Sections = append(r.Sections, sw)
	}
	for _, t := range res.Targets {
		s, err := targetSection(t, polls, incidentMarks(res, t.Name))
		if err != nil {
			return Report{}, err
		}
		r.Sections = append(r.Sections, s)
	}
	story, err := findingSections(res)
	if err != nil {
		return Report{}, err
	}
	r.Sections = append(r.Sections, story...)
	if ph, ok := phasesSection(res); ok {
		r.Sections = append(r.Sections, ph)
	}
	cs, ok, err := clientSection(res, polls)
	if err != nil {
		return Report{}, err
	}
	if ok {
		r.Sections = append(r.Sections, cs)
	}
	config := in.Config
	if config == "" {
		config = recordingConfigs(res)
	}
	r.Appendix = append([]Section{glossarySection()}, appendix(res, config)...)
	return r, nil
}

func text(s string) Cell { return Cell{Text: s} }

func unix(t float64) string {
	if t == 0 {
		return "—"
	}
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format("2006-01-02 15:04:05Z")
}

func header(res *analyze.Result) Header {
	var h Header
	var first, last float64
	engines := map[string]bool{}
	for _, t := range res.Targets {
		if t.Summary.First != 0 && (first == 0 || t.Summary.First < first) {
			first = t.Summary.First
		}
		last = max(last, t.Summary.Last)
		engines[t.Engine] = true
	}
	var dirs, sessions []string
	for _, in := range res.Inputs {
		dirs = append(dirs, in.Dir)
		sessions = append(sessions, in.Sessions...)
	}
	h.Facts = []Fact{
		{"Recording", text(strings.Join(dirs, ", "))},
		{"Sessions", text(strings.Join(sessions, ", "))},
		{"Targets", text(strconv.Itoa(len(res.Targets)))},
		{"Engines", text(strings.Join(slices.Sorted(maps.Keys(engines)), ", "))},
		{"From", text(unix(first))},
		{"To", text(unix(last))},
		{"Duration", text(time.Duration((last - first) * 1e9).Round(time.Second).String())},
		{"Span", Cell{Text: spanText(res.Gates), Prov: "the estimator's span: how far back a window may reach; unless one was asked for, counters an engine moves on every step span the target's interval instead (each cell's window says which)"}},
		{"Gates", Cell{Text: fmt.Sprintf("floor %s%s, ceiling %s × span, jump %s ×, stale above %s of the window",
			num(res.Gates.MinWindow, "s"), floorsText(res.Gates.Floors), num(res.Gates.CeilingFactor, ""), num(res.Gates.JumpFactor, ""), num(res.Gates.StaleFraction, "")),
			Prov: "a refused window is published as null with its reason"}},
		{"Generator", text(res.Generator)},
	}
	if w := recorderWarnings(res); w != "" {
		h.Facts = append(h.Facts, Fact{"Recorder warnings", Cell{Text: w, Prov: "what the recorder warned of at start, from the run's manifest"}})
	}
	cadence := map[string]string{}
	for _, in := range res.Inputs {
		for _, rec := range in.Recordings {
			for _, mt := range rec.Targets {
				c := time.Duration(mt.IntervalNs).String()
				if prev, ok := cadence[mt.Name]; ok && prev != c {
					c = prev + ", " + c
				}
				cadence[mt.Name] = c
			}
		}
	}
	versions := map[string]Cell{}
	for _, d := range res.Drift {
		versions[d.Target] = Cell{Text: cmpOr(d.Version, "unknown"), Prov: "from " + cmpOr(d.VersionSource, "nothing the engine published")}
	}
	tbl := Table{Title: "Targets", Summary: true, Columns: []Column{{Title: "target"}, {Title: "engine"}, {Title: "version"}, {Title: "detected by"},
		{Title: "cadence", Prov: "the scrape interval the recorder was given (from the run's manifest)"}, {Title: "polls", Num: true}, {Title: "scrapes by outcome"}}}
	for _, t := range res.Targets {
		v, ok := versions[t.Name]
		if !ok {
			v = text("unknown")
		}
		tbl.Rows = append(tbl.Rows, []Cell{
			{Text: t.Name, Href: "#" + ID("target", t.Name)}, text(t.Engine), v, text(t.DetectedBy),
			text(cmpOr(cadence[t.Name], "unknown")), text(strconv.Itoa(t.Summary.Polls)), text(outcomes(t.Scrapes)),
		})
	}
	h.Tables = []Table{tbl}
	return h
}

func outcomes(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func num(n rate.Num, unit string) string {
	if !n.Valid {
		return "off"
	}
	s := strconv.FormatFloat(n.V, 'g', 4, 64)
	if unit != "" {
		s += " " + unit
	}
	return s
}

func format(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100 || v == math.Trunc(v):
		// Counts are integers: 12, not 12.00.
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// incidentMarks are the incidents of target (and those of every target) as
// marks on its charts: downsampling keeps them, so none is hidden.
func incidentMarks(res *analyze.Result, target string) []Mark {
	var out []Mark
	for _, in := range res.Incidents {
		if in.Target != "" && string(in.Target) != target {
			continue
		}
		m := Mark{Class: ClassWarn, Label: in.Kind + ": " + in.Detail}
		switch {
		case in.Start.Valid && in.End.Valid:
			m.From, m.To = in.Start.V, in.End.V
		case in.T.Valid:
			m.From, m.To = in.T.V, in.T.V
		default:
			continue
		}
		if in.Kind == "host_stall" || in.Kind == "restart" || in.Kind == "target_down" {
			m.Class = ClassFail
		}
		out = append(out, m)
	}
	return out
}

func targetSection(t analyze.Target, ps *Polls, marks []Mark) (Section, error) {
	tp := ps.target(t.Name)
	s := Section{ID: ID("target", t.Name), Title: fmt.Sprintf("%s (%s)", t.Name, t.Engine)}
	if n := t.Notes["engine"]; n != "" {
		s.Notes = append(s.Notes, n)
	}
	if t.Imported != nil {
		s.Notes = append(s.Notes, importedNote(t.Imported))
	}
	s.Tables = append(s.Tables, busyTable(&t))
	head := Table{Title: "Whole recording (idle included): medians of the published values", Summary: true, Columns: []Column{{Title: "quantity", Prov: "hover a name for the analysis JSON's cell name"}, {Title: "median", Num: true},
		{Title: "window", Prov: "median window the values were measured over"}, {Title: "values", Num: true}, {Title: "withheld, by reason"}}}
	for _, h := range t.Summary.Headlines {
		c := rate.Cell{Value: h.Median, Window: h.Window, Source: tp.sources[h.Cell], Derived: h.Window.Valid}
		if !h.Median.Valid {
			c.Reason = topReason(h.Nulls)
		}
		win := "as read"
		if h.Window.Valid {
			win = Window(h.Window.V)
		}
		head.Rows = append(head.Rows, []Cell{nameCell(h.Cell), CellOf(c, formatIn(h.Cell)), text(win), text(strconv.Itoa(h.Values)), text(outcomes(h.Nulls))})
	}
	s.Tables = append(s.Tables, head)
	if tp.late > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d poll(s) answered earlier than the poll before them (a scrape that outlived the next one); the estimator refused them (reason order) and the charts do not draw them.", tp.late))
	}
	for _, spec := range targetCharts {
		ts := TimeSeries{ID: ID("chart", t.Name, spec.key), Title: spec.title, Unit: spec.unit, Percent: spec.percent, Marks: marks}
		if spec.bands {
			ts.Bands = KVBands()
			ts.YMin, ts.YMax = rate.Some(0), rate.Some(1)
		}
		var empty []string
		for _, name := range spec.cells {
			points, any := ps.series(tp, name)
			// A series the engine does not publish at all is not drawn;
			// one it publishes with no value at any poll is named below.
			if !any {
				continue
			}
			if !slices.ContainsFunc(points, Point.valid) {
				empty = append(empty, fmt.Sprintf("%s (%s): no value at any poll (%s)", HumanName(name), name, refusedLabel(nil, nullReasons(points))))
				continue
			}
			ts.Series = append(ts.Series, Series{Name: HumanName(name), Canon: name, Step: spec.step, Points: points})
		}
		if spec.key == "requests" {
			ts.Series = append(ts.Series, ps.waitingByReason(tp)...)
		}
		if len(ts.Series) == 0 {
			if len(empty) > 0 {
				s.Notes = append(s.Notes, fmt.Sprintf("No chart of %s: %s.", strings.ToLower(spec.title[:1])+spec.title[1:], strings.Join(empty, "; ")))
			}
			continue // the engine publishes none of these: said in the appendix's catalog
		}
		for _, e := range empty {
			ts.Notes = append(ts.Notes, e+"; not drawn.")
		}
		ch, err := ts.Chart()
		if err != nil {
			return Section{}, fmt.Errorf("chart %s of %s: %w", spec.key, t.Name, err)
		}
		s.Charts = append(s.Charts, ch)
	}
	return s, nil
}

func topReason(m map[string]int) string {
	best, n := rate.ReasonAbsent, 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}

func appendix(res *analyze.Result, config string) []Section {
	var out []Section
	for _, t := range res.Targets {
		s := Section{ID: ID("appendix", t.Name), Title: "Catalog of " + t.Name}
		notes := Table{Title: "What the cells mean for this engine", Fold: true, Columns: []Column{{Title: "cell"}, {Title: "meaning"}}}
		for _, k := range slices.Sorted(maps.Keys(t.Notes)) {
			notes.Rows = append(notes.Rows, []Cell{text(k), text(t.Notes[k])})
		}
		unknown := Table{Title: fmt.Sprintf("Unknown series (%d): recorded, not analysed", len(t.UnknownSeries)), Fold: true,
			Columns: []Column{{Title: "series"}}}
		for _, u := range t.UnknownSeries {
			unknown.Rows = append(unknown.Rows, []Cell{text(u)})
		}
		s.Tables = append(s.Tables, notes, unknown)
		if len(t.MistypedSeries) > 0 {
			mis := Table{Title: fmt.Sprintf("Mistyped series (%d): typed counter, no count; never rated, their fall no restart", len(t.MistypedSeries)),
				Columns: []Column{{Title: "series"}, {Title: "really"}, {Title: "typed"}, {Title: "source"}}}
			for _, m := range t.MistypedSeries {
				mis.Rows = append(mis.Rows, []Cell{text(m.Family), text(string(m.Kind)), text(m.Typed), text(m.Source)})
			}
			s.Tables = append(s.Tables, mis)
		}
		out = append(out, s)
	}
	if config != "" {
		out = append(out, Section{ID: "appendix-config", Title: "Effective configuration", Blocks: []Block{{Title: "config", Text: config}}})
	}
	return out
}

// recorderWarnings are the sessions' start warnings (insecure_skip_verify),
// each once, as one line.
func recorderWarnings(res *analyze.Result) string {
	var ws []string
	for _, in := range res.Inputs {
		for _, rec := range in.Recordings {
			for _, w := range rec.Warnings {
				if !slices.Contains(ws, w) {
					ws = append(ws, w)
				}
			}
		}
	}
	return strings.Join(ws, "; ")
}

// recordingConfigs is each session's effective configuration, as its
// manifest holds it (secrets were removed by the recorder), as indented JSON.
func recordingConfigs(res *analyze.Result) string {
	var b strings.Builder
	for _, in := range res.Inputs {
		for _, rec := range in.Recordings {
			js, err := json.MarshalIndent(rec.Config, "", "  ")
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "# %s (session %s, llmrec %s)\n%s\n", in.Dir, rec.RunID, rec.Version, js)
		}
	}
	return b.String()
}

// spanText says the published span: one for every counter when one was
// asked for, else by counter kind.
func spanText(g analyze.Gates) string {
	if !g.SpanByKind {
		return num(g.Span, "s")
	}
	if len(g.CompletionSpans) > 0 {
		return "each target's interval for counters moved every engine step, the request duration measured for counters moved once per request (see the analysis' gates.completion_spans), " +
			num(g.Span, "s") + " for the others"
	}
	return "each target's interval for counters moved every engine step, " + num(g.Span, "s") + " for the others"
}

// floorsText names the targets whose floor is half their interval.
func floorsText(fs []analyze.TargetFloor) string {
	if len(fs) == 0 {
		return ""
	}
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s %s", f.Target, format(f.MinWindow)+" s"))
	}
	return " (half the interval where polled faster: " + strings.Join(parts, ", ") + ")"
}

// overview is the chart under the answer: each target's decode tokens/s
// over the run, the named phases shaded (the steady phases where none is
// named), the incidents that broke a target (down, restart, host stall)
// marked. Nil when no target publishes a decode rate.
func overview(res *analyze.Result, ps *Polls) (*Chart, error) {
	ts := TimeSeries{ID: ID("chart", "overview"), Title: "Throughput over time: decode tokens/s per target, phases shaded", Unit: UnitTokensPS}
	for _, t := range res.Targets {
		points, any := ps.series(ps.target(t.Name), engine.DecodeTokensPerSecond)
		// Rule: a target with no decode value at any poll draws no line.
		if !any || !slices.ContainsFunc(points, Point.valid) {
			continue
		}
		ts.Series = append(ts.Series, Series{Name: t.Name, Canon: engine.DecodeTokensPerSecond, Points: points})
	}
	// Rule: nothing to draw, no chart.
	if len(ts.Series) == 0 {
		return nil, nil
	}
	kind := phases.KindSteady
	if slices.ContainsFunc(res.Output.Phases, func(m phases.Measured) bool { return m.Kind == phases.KindNamed }) {
		kind = phases.KindNamed
	}
	seen := map[[2]float64]bool{}
	for _, m := range res.Output.Phases {
		span := [2]float64{m.Start, m.End}
		if m.Kind != kind || seen[span] {
			continue
		}
		seen[span] = true
		ts.Marks = append(ts.Marks, Mark{From: m.Start, To: m.End, Class: ClassOK, Label: "phase " + m.Name + " (" + m.Kind + ")"})
	}
	marked := map[Mark]bool{}
	for _, t := range res.Targets {
		for _, m := range incidentMarks(res, t.Name) {
			if m.Class == ClassFail && !marked[m] {
				marked[m] = true
				ts.Marks = append(ts.Marks, m)
			}
		}
	}
	ts.Notes = append(ts.Notes, fmt.Sprintf("Shaded green: the %s phases; red: a target down, restarted or the recording host stalled. Each target's own charts are in its section.", kind))
	ch, err := ts.Chart()
	if err != nil {
		return nil, fmt.Errorf("overview chart: %w", err)
	}
	return &ch, nil
}
