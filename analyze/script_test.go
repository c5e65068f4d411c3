package analyze

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/record/capture"
)

// The scripts in testdata/*.scenario pin the rules of the seed's scenarios
// through the production path: each block renders an exposition body per
// poll from a template, records the polls with capture.NewWriter exactly as
// the recorder does (capture.Parse, a journal, a sealed Parquet segment),
// runs Analyze over the folder and checks the cells. Every block opens with
// `scenario` and must be preceded by a comment stating the rule it pins.
//
//	# A sentence stating the rule.
//	scenario span=2s [min_window=0.5s] [ceiling=2] [jump=8] [jump_floor=10] [stale=0.25] [latency=5ms|none]
//	target <name> body=<file in testdata/bodies>|empty [hint=<engine>]
//	poll <T> [start=<S>|none] [body=empty] [<series>=<value>|_ ...]
//	load <T0> <step>
//	  <series> <v0> <v1> …          indented: one poll every step; _ is absent
//	expect <T> <cell> = <number|null> [±tol] [reason=<r>] [window=<s|none>] [source=<s>]
//	       [severity=<s|none>] [derived=<bool>] [note=<substring>] [by.<key>=<v>]
//	       [flags=<w,w>] [bucket=(<lo>,<hi>]]
//	expect <T> <cell> source!~<substring>
//	expect * <cell> <= <number>     every poll's value is null or at most that
//	expect engine <id> | expect unknown <family,…|none>
//
// A series is the text before the value on a body line: `name` or
// `name{labels}` exactly as the template writes it. A value persists into
// later polls; `_` removes the line; a series not in the template is added
// after the last line of its metric. A poll's first byte is its T and its
// request went out `latency` earlier (start=none: unknown).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.scenario")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScenarios(t, f) })
	}
}

type scPoll struct {
	t, start float64
	empty    bool
	set      [][2]string // series, value ("_" removes)
}

type scenario struct {
	line     int
	gates    rate.Config
	latency  float64 // seconds; <0 unknown
	target   string
	hint     string
	body     string
	polls    []*scPoll
	expects  []scExpect
	loadT0   float64
	loadStep float64
}

type scExpect struct {
	line int
	text string
}

type runner struct {
	t      *testing.T
	file   string
	line   int
	cur    *scenario
	rule   bool
	inLoad bool
	checks int
}

func (r *runner) errorf(line int, format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s:%d: %s", r.file, line, fmt.Sprintf(format, args...))
}

func runScenarios(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &runner{t: t, file: path}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r.line++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#"):
			r.rule = true
			continue
		case raw[0] == ' ' || raw[0] == '\t':
			if !r.inLoad {
				r.errorf(r.line, "an indented line outside a load block")
				continue
			}
			r.loadLine(line)
			continue
		}
		r.inLoad = false
		word, rest, _ := strings.Cut(line, " ")
		if word != "scenario" && r.cur == nil {
			r.errorf(r.line, "%s before a scenario line", word)
			continue
		}
		switch word {
		case "scenario":
			r.finish()
			r.start(rest)
		case "target":
			r.targetLine(rest)
		case "poll":
			r.pollLine(rest)
		case "load":
			r.loadHeader(rest)
		case "expect":
			r.cur.expects = append(r.cur.expects, scExpect{r.line, rest})
		default:
			r.errorf(r.line, "unknown command %q", word)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	r.finish()
	if r.checks == 0 {
		t.Errorf("%s: no expectations", path)
	}
}

func (r *runner) start(rest string) {
	if !r.rule {
		r.errorf(r.line, "a scenario must be preceded by a comment stating the rule it pins")
	}
	r.rule = false
	s := &scenario{line: r.line, latency: 0.005}
	for _, kv := range strings.Fields(rest) {
		k, v, _ := strings.Cut(kv, "=")
		if k == "latency" && v == "none" {
			s.latency = -1
			continue
		}
		x, err := parseNum(v, k == "span" || k == "min_window" || k == "latency")
		if err != nil {
			r.errorf(r.line, "%s: %v", k, err)
		}
		switch k {
		case "span":
			s.gates.Span = x
		case "min_window":
			s.gates.MinWindow = x
		case "ceiling":
			s.gates.CeilingFactor = x
		case "jump":
			s.gates.JumpFactor = x
		case "jump_floor":
			s.gates.JumpFloor = x
		case "stale":
			s.gates.StaleFraction = x
		case "latency":
			s.latency = x
		default:
			r.errorf(r.line, "unknown scenario option %q", k)
		}
	}
	r.cur = s
}

// parseNum parses a number, or a duration ("2s", "500ms") when seconds.
func parseNum(v string, seconds bool) (float64, error) {
	if seconds {
		if d, err := time.ParseDuration(v); err == nil {
			return d.Seconds(), nil
		}
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", v)
	}
	return x, nil
}

func (r *runner) targetLine(rest string) {
	f := strings.Fields(rest)
	if len(f) == 0 {
		r.errorf(r.line, "target needs a name")
		return
	}
	r.cur.target = f[0]
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "hint":
			r.cur.hint = v
		case "body":
			if v == "empty" {
				r.cur.body = "# nothing here\n"
				continue
			}
			b, err := os.ReadFile(filepath.Join("testdata", "bodies", v))
			if err != nil {
				r.errorf(r.line, "%v", err)
			}
			r.cur.body = string(b)
		default:
			r.errorf(r.line, "unknown target option %q", k)
		}
	}
}

// pollAt returns the poll at time at, creating it in time order.
func (r *runner) pollAt(at float64) *scPoll {
	for _, p := range r.cur.polls {
		if math.Abs(p.t-at) < 1e-9 {
			return p
		}
	}
	p := &scPoll{t: at, start: math.NaN()}
	r.cur.polls = append(r.cur.polls, p)
	slices.SortStableFunc(r.cur.polls, func(a, b *scPoll) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	return p
}

// splitSets splits "a=1 b{x="y z"}=2" into assignments, keeping label values whole.
var assignment = regexp.MustCompile(`(\S+?(?:\{[^}]*\})?)=(\S+)`)

func (r *runner) pollLine(rest string) {
	head, tail, _ := strings.Cut(rest, " ")
	at, err := strconv.ParseFloat(head, 64)
	if err != nil {
		r.errorf(r.line, "bad poll time %q", head)
		return
	}
	p := r.pollAt(at)
	for _, m := range assignment.FindAllStringSubmatch(tail, -1) {
		k, v := m[1], m[2]
		switch k {
		case "start":
			if v == "none" {
				p.start = -1
				continue
			}
			if p.start, err = strconv.ParseFloat(v, 64); err != nil {
				r.errorf(r.line, "bad start %q", v)
			}
		case "body":
			p.empty = v == "empty"
		default:
			p.set = append(p.set, [2]string{k, v})
		}
	}
}

func (r *runner) loadHeader(rest string) {
	f := strings.Fields(rest)
	if len(f) != 2 {
		r.errorf(r.line, "load needs a start time and a step")
		return
	}
	var err error
	if r.cur.loadT0, err = strconv.ParseFloat(f[0], 64); err != nil {
		r.errorf(r.line, "bad load start %q", f[0])
	}
	if r.cur.loadStep, err = parseNum(f[1], true); err != nil {
		r.errorf(r.line, "bad load step %q", f[1])
	}
	r.inLoad = true
}

func (r *runner) loadLine(line string) {
	i := strings.LastIndex(line, "}")
	if i < 0 {
		i = strings.IndexByte(line, ' ')
	} else {
		i++
	}
	series, vals := line[:i], strings.Fields(line[i:])
	for k, v := range vals {
		p := r.pollAt(r.cur.loadT0 + float64(k)*r.cur.loadStep)
		p.set = append(p.set, [2]string{series, v})
	}
}

// finish records the current scenario, analyses it and checks it.
func (r *runner) finish() {
	s := r.cur
	r.cur = nil
	if s == nil {
		return
	}
	if s.target == "" || s.body == "" || len(s.polls) == 0 {
		r.errorf(s.line, "a scenario needs a target with a body and polls")
		return
	}
	dir := r.t.TempDir()
	w, err := capture.NewWriter(dir, testRun, time.Hour)
	if err != nil {
		r.t.Fatal(err)
	}
	body := s.body
	for i, p := range s.polls {
		for _, kv := range p.set {
			body = setSeries(body, kv[0], kv[1])
		}
		text := body
		if p.empty {
			text = "# nothing here\n"
		}
		start := p.start
		switch {
		case math.IsNaN(start) && s.latency >= 0:
			start = p.t - s.latency
		case math.IsNaN(start) || start < 0:
			start = 0
		}
		ct := "text/plain; version=0.0.4"
		row := capture.Scrape{RunID: testRun, Target: s.target, Engine: s.hint, Endpoint: capture.EndpointMetrics,
			Seq: int64(i), Outcome: capture.OutcomeOK, ScheduledNs: ns(p.t) - 10_000_000, StartNs: ns(start),
			FirstByteNs: ns(p.t), EndNs: ns(p.t) + 1_000_000, ContentType: &ct, Body: []byte(text)}
		capture.Parse(&row)
		if row.Outcome != capture.OutcomeOK {
			r.errorf(s.line, "poll %v: the body does not parse: %s", p.t, *row.ParseError)
		}
		if err := w.Append(row); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		r.t.Fatal(err)
	}
	res, err := Analyze(Options{Dirs: []string{dir}, Gates: s.gates})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(res.Problems) > 0 || len(res.Targets) != 1 {
		r.errorf(s.line, "problems %v, %d targets", res.Problems, len(res.Targets))
		return
	}
	tg := &res.Targets[0]
	for _, e := range s.expects {
		r.checks++
		r.check(tg, e)
	}
}

func ns(sec float64) int64 { return int64(math.Round(sec * 1e9)) }

// setSeries sets (or removes, with "_") one series line of an exposition.
func setSeries(body, series, value string) string {
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	metric := series
	if i := strings.IndexByte(series, '{'); i >= 0 {
		metric = series[:i]
	}
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		key := l
		if j := strings.LastIndexByte(l, ' '); j >= 0 {
			key = l[:j]
		}
		if key == series {
			if value == "_" {
				lines = slices.Delete(lines, i, i+1)
			} else {
				lines[i] = series + " " + value
			}
			return strings.Join(lines, "\n") + "\n"
		}
		if key == metric || strings.HasPrefix(key, metric+"{") {
			last = i
		}
	}
	if value == "_" {
		return body
	}
	add := series + " " + value
	if last < 0 {
		lines = append(lines, add)
	} else {
		lines = slices.Insert(lines, last+1, add)
	}
	return strings.Join(lines, "\n") + "\n"
}

func (r *runner) check(tg *Target, e scExpect) {
	f := strings.Fields(e.text)
	if len(f) < 2 {
		r.errorf(e.line, "expect needs more words")
		return
	}
	switch f[0] {
	case "engine":
		if tg.Engine != f[1] {
			r.errorf(e.line, "engine %s (by %s), want %s", tg.Engine, tg.DetectedBy, f[1])
		}
		return
	case "unknown":
		want := []string{}
		if f[1] != "none" {
			want = strings.Split(f[1], ",")
		}
		if !slices.Equal(tg.UnknownSeries, want) {
			r.errorf(e.line, "unknown series %v, want %v", tg.UnknownSeries, want)
		}
		return
	case "*":
		if len(f) != 4 || f[2] != "<=" {
			r.errorf(e.line, "want: expect * <cell> <= <number>")
			return
		}
		limit, _ := strconv.ParseFloat(f[3], 64)
		for _, p := range tg.Polls {
			c, ok := p.Cells.Get(f[1])
			if !ok {
				r.errorf(e.line, "poll %v has no cell %s", p.T, f[1])
				return
			}
			if c.Value.Valid && c.Value.V > limit {
				r.errorf(e.line, "poll %v: %s = %v, above %v", p.T, f[1], c.Value.V, limit)
			}
		}
		return
	}
	at, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		r.errorf(e.line, "bad time %q", f[0])
		return
	}
	c, err := tg.Cell(at, f[1])
	if err != nil {
		r.errorf(e.line, "%v", err)
		return
	}
	if len(f) == 3 && strings.HasPrefix(f[2], "source!~") {
		if sub := strings.TrimPrefix(f[2], "source!~"); strings.Contains(c.Source, sub) {
			r.errorf(e.line, "%s source %q contains %q", f[1], c.Source, sub)
		}
		return
	}
	if len(f) < 4 || f[2] != "=" {
		r.errorf(e.line, "want: expect <T> <cell> = <value> [attrs]")
		return
	}
	r.checkCell(e.line, f[1], c, f[3], f[4:])
}

func (r *runner) checkCell(line int, name string, c engine.Cell, want string, attrs []string) {
	tol := 1e-9
	if len(attrs) > 0 && strings.HasPrefix(attrs[0], "±") {
		tol, _ = strconv.ParseFloat(strings.TrimPrefix(attrs[0], "±"), 64)
		attrs = attrs[1:]
	}
	desc := func() string {
		b, _ := c.Cell.Value.MarshalJSON()
		return fmt.Sprintf("%s (reason %q, window %s, source %q)", b, c.Reason, c.Window, c.Source)
	}
	if want == "null" {
		if c.Value.Valid {
			r.errorf(line, "%s = %s, want null", name, desc())
		}
	} else {
		w, err := strconv.ParseFloat(want, 64)
		if err != nil {
			r.errorf(line, "bad value %q", want)
			return
		}
		if !c.Value.Valid || math.Abs(c.Value.V-w) > tol*max(1, math.Abs(w)) {
			r.errorf(line, "%s = %s, want %v", name, desc(), w)
		}
	}
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		switch {
		case k == "reason" && c.Reason != v:
			r.errorf(line, "%s reason %q, want %q", name, c.Reason, v)
		case k == "window" && v == "none" && c.Window.Valid:
			r.errorf(line, "%s window %s, want none", name, c.Window)
		case k == "window" && v != "none":
			w, _ := strconv.ParseFloat(v, 64)
			if !c.Window.Valid || math.Abs(c.Window.V-w) > 1e-6 {
				r.errorf(line, "%s window %s, want %s", name, c.Window, v)
			}
		case k == "source" && c.Source != v:
			r.errorf(line, "%s source %q, want %q", name, c.Source, v)
		case k == "severity" && (c.Severity != v && !(v == "none" && c.Severity == "")):
			r.errorf(line, "%s severity %q, want %q", name, c.Severity, v)
		case k == "derived" && strconv.FormatBool(c.Derived) != v:
			r.errorf(line, "%s derived %v, want %s", name, c.Derived, v)
		case k == "note" && !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, v) }):
			r.errorf(line, "%s notes %q, want one containing %q", name, c.Notes, v)
		case k == "flags" && strings.Join(c.Bucket.Flags.Words(), ",") != v:
			r.errorf(line, "%s bucket flags %q, want %s", name, c.Bucket.Flags.Words(), v)
		case k == "bucket" && strings.ReplaceAll(c.Bucket.Interval(func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }), " ", "") != v:
			r.errorf(line, "%s bucket %+v, want %s", name, c.Bucket, v)
		case strings.HasPrefix(k, "by."):
			got, ok := c.By[strings.TrimPrefix(k, "by.")]
			w, _ := strconv.ParseFloat(v, 64)
			if !ok || got != w {
				r.errorf(line, "%s by %v, want %s=%s", name, c.By, k, v)
			}
		case k != "reason" && k != "window" && k != "source" && k != "severity" && k != "derived" && k != "note" && k != "flags" && k != "bucket" && !strings.HasPrefix(k, "by."):
			r.errorf(line, "unknown attribute %q", k)
		}
	}
}
