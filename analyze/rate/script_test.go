package rate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The scripts in testdata/*.test pin the estimator's rules in a small text
// language, in the spirit of Prometheus' promqltest. Every block opens with
// `span` and must be preceded by a comment stating the rule it pins.
//
//	# A sentence stating the rule.
//	span 2s [min_window=0.5s] [ceiling=2] [jump=8] [jump_floor=10] [stale=0.25]
//	keyspan <series>{labels} <span>   the key's own span (Estimator.SetSpan)
//	poll <T> [start=<S>] [process_start=<P>] [restart] [<sample>]
//	  <sample>                      indented: one more sample of that poll
//	load <T0> <step>
//	  <series>{labels} <v0> <v1> …  indented: one poll every step; _ is absent,
//	                                a+bxN is N+1 values from a in steps of b
//	expect <T> rate <series>[{matchers}] = <number|null> [±tol] [attrs]
//	expect <T> ratio <num>[{matchers}] / <den> = …
//	expect <T> hist <base>[{matchers}] count|mean|p50|p95|p99 = …
//	expect <T> json rate <series>[{matchers}] = <the cell's exact JSON>
//	expect kv <ratio> = ok|warn|fail|none
//
// A sample is `<series>{labels} <value> [created=<C>]`. Matchers are label
// pairs a set must carry; without them every set matches. attrs are
// reason=<r>, window=<s|none>, source=<s>, derived=<bool>, notes=<count> and
// note=<substring> (repeatable); an attribute not given is not checked.
// Polls are queued and observed in order when an expect names a later time.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

type scriptPoll struct {
	line int
	poll Poll
}

type script struct {
	t        testing.TB
	file     string
	line     int
	est      *Estimator
	queue    []*scriptPoll
	observed bool
	lastT    float64
	header   string // "poll" or "load": what indented lines belong to
	loadT0   float64
	loadStep float64
	rule     bool // a comment since the last block
	checks   int
}

func (s *script) errorf(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf("%s:%d: %s", s.file, s.line, fmt.Sprintf(format, args...))
}

func runScript(t testing.TB, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &script{t: t, file: path}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s.line++
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#"):
			s.rule = true
			continue
		case raw[0] == ' ' || raw[0] == '\t':
			s.indented(line)
			continue
		}
		s.header = ""
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "span":
			s.span(rest)
		case "poll":
			s.pollLine(rest)
		case "load":
			s.loadLine(rest)
		case "keyspan":
			s.keySpan(rest)
		case "expect":
			s.expect(rest)
		default:
			s.errorf("unknown command %q", word)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	s.flush()
	if s.checks == 0 {
		t.Errorf("%s: no expectations", path)
	}
}

// flush observes what is still queued, so that no poll goes untried.
func (s *script) flush() {
	for len(s.queue) > 0 {
		s.observeNext()
	}
}

func (s *script) observeNext() {
	p := s.queue[0]
	s.queue = s.queue[1:]
	s.est.Observe(p.poll)
	s.observed, s.lastT = true, p.poll.T
}

func (s *script) span(rest string) {
	s.flush()
	if !s.rule {
		s.errorf("a block must be preceded by a comment stating the rule it pins")
	}
	s.rule = false
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		s.errorf("span needs a duration")
		return
	}
	var cfg Config
	var err error
	if cfg.Span, err = parseSeconds(fields[0]); err != nil {
		s.errorf("%v", err)
	}
	for _, kv := range fields[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var x float64
		if k == "min_window" {
			x, err = parseSeconds(v)
		} else {
			x, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			s.errorf("%s: %v", k, err)
		}
		switch k {
		case "min_window":
			cfg.MinWindow = x
		case "ceiling":
			cfg.CeilingFactor = x
		case "jump":
			cfg.JumpFactor = x
		case "jump_floor":
			cfg.JumpFloor = x
		case "stale":
			cfg.StaleFraction = x
		default:
			s.errorf("unknown span option %q", k)
		}
	}
	s.est = New(cfg)
	s.queue, s.observed = nil, false
}

// keySpan gives one key a span of its own.
func (s *script) keySpan(rest string) {
	if s.est == nil {
		s.errorf("keyspan before span")
		return
	}
	k, tail, err := parseSeries(rest)
	if err != nil {
		s.errorf("%v", err)
		return
	}
	sp, err := parseSeconds(strings.TrimSpace(tail))
	if err != nil {
		s.errorf("%v", err)
		return
	}
	s.est.SetSpan(s.est.Register(k), sp)
}

func parseSeconds(v string) (float64, error) {
	scale := 1.0
	switch {
	case strings.HasSuffix(v, "ms"):
		v, scale = strings.TrimSuffix(v, "ms"), 1e-3
	case strings.HasSuffix(v, "s"):
		v = strings.TrimSuffix(v, "s")
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q", v)
	}
	return x * scale, nil
}

// queued returns the queued poll at time at, creating it (in time order when
// sorted, else at the end) if there is none.
func (s *script) queued(at float64, sorted bool) *scriptPoll {
	for _, p := range s.queue {
		if sameTime(p.poll.T, at) {
			return p
		}
	}
	p := &scriptPoll{line: s.line, poll: Poll{T: at}}
	i := len(s.queue)
	if sorted {
		for i > 0 && s.queue[i-1].poll.T > at {
			i--
		}
	}
	s.queue = append(s.queue[:i], append([]*scriptPoll{p}, s.queue[i:]...)...)
	return p
}

func sameTime(a, b float64) bool { return math.Abs(a-b) < 1e-9*max(1, math.Abs(b)) }

func (s *script) pollLine(rest string) {
	if s.est == nil {
		s.errorf("poll before span")
		return
	}
	head, tail, _ := strings.Cut(rest, " ")
	at, err := strconv.ParseFloat(head, 64)
	if err != nil {
		s.errorf("bad poll time %q", head)
		return
	}
	p := s.queued(at, false)
	for {
		tail = strings.TrimSpace(tail)
		var word string
		word, rest, _ = strings.Cut(tail, " ")
		if word == "restart" {
			p.poll.Restart = true
			tail = rest
			continue
		}
		k, v, ok := strings.Cut(word, "=")
		if !ok || (k != "start" && k != "process_start") {
			break
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.errorf("bad %s %q", k, v)
		}
		if k == "start" {
			p.poll.Start = x
		} else {
			p.poll.ProcessStart = x
		}
		tail = rest
	}
	if tail != "" {
		s.sample(p, tail)
	}
	s.header = "poll"
}

func (s *script) sample(p *scriptPoll, text string) {
	k, rest, err := parseSeries(text)
	if err != nil {
		s.errorf("%v", err)
		return
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		s.errorf("sample %q has no value", text)
		return
	}
	smp := Sample{Key: k}
	if smp.Value, err = strconv.ParseFloat(fields[0], 64); err != nil {
		s.errorf("bad value %q", fields[0])
	}
	for _, f := range fields[1:] {
		v, ok := strings.CutPrefix(f, "created=")
		if !ok {
			s.errorf("unknown sample attribute %q", f)
			continue
		}
		if smp.Created, err = strconv.ParseFloat(v, 64); err != nil {
			s.errorf("bad created %q", v)
		}
	}
	p.poll.Samples = append(p.poll.Samples, smp)
}

func (s *script) loadLine(rest string) {
	fields := strings.Fields(rest)
	if s.est == nil || len(fields) != 2 {
		s.errorf("want `load <T0> <step>` after a span")
		return
	}
	var err error
	if s.loadT0, err = strconv.ParseFloat(fields[0], 64); err != nil {
		s.errorf("bad load start %q", fields[0])
	}
	if s.loadStep, err = parseSeconds(fields[1]); err != nil {
		s.errorf("%v", err)
	}
	s.header = "load"
}

func (s *script) indented(line string) {
	switch s.header {
	case "poll":
		s.sample(s.queue[len(s.queue)-1], line)
	case "load":
		k, rest, err := parseSeries(line)
		if err != nil {
			s.errorf("%v", err)
			return
		}
		i := 0
		for _, tok := range strings.Fields(rest) {
			vals, err := expandValues(tok)
			if err != nil {
				s.errorf("%v", err)
			}
			for _, v := range vals {
				p := s.queued(s.loadT0+float64(i)*s.loadStep, true)
				if !math.IsNaN(v) {
					p.poll.Samples = append(p.poll.Samples, Sample{Key: k, Value: v})
				}
				i++
			}
		}
	default:
		s.errorf("indented line outside a poll or load")
	}
}

// expandValues reads one load token: a number, _ (absent, as NaN), or a+bxN.
func expandValues(tok string) ([]float64, error) {
	if tok == "_" {
		return []float64{math.NaN()}, nil
	}
	if i := strings.LastIndexByte(tok, 'x'); i > 0 {
		j := strings.LastIndexAny(tok[:i], "+-")
		n, err1 := strconv.Atoi(tok[i+1:])
		if j > 0 && err1 == nil {
			a, err2 := strconv.ParseFloat(tok[:j], 64)
			b, err3 := strconv.ParseFloat(tok[j:i], 64)
			if err2 == nil && err3 == nil {
				out := make([]float64, n+1)
				for k := range out {
					out[k] = a + float64(k)*b
				}
				return out, nil
			}
		}
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return nil, fmt.Errorf("bad value %q", tok)
	}
	return []float64{v}, nil
}

// parseSeries reads `name{labels}` and returns the key and the rest.
func parseSeries(text string) (Key, string, error) {
	i := strings.IndexAny(text, "{ \t")
	if i < 0 {
		return Key{Series: text}, "", nil
	}
	k := Key{Series: text[:i]}
	if k.Series == "" {
		return k, "", fmt.Errorf("no series name in %q", text)
	}
	if text[i] != '{' {
		return k, text[i:], nil
	}
	end, quoted, escaped := -1, false, false
	for j := i; j < len(text) && end < 0; j++ {
		switch c := text[j]; {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == '}' && !quoted:
			end = j
		}
	}
	if end < 0 {
		return k, "", fmt.Errorf("unterminated labels in %q", text)
	}
	var pairs []string
	if !eachLabel(text[i:end+1], func(n, v string) bool { pairs = append(pairs, n, v); return true }) {
		return k, "", fmt.Errorf("malformed labels %q", text[i:end+1])
	}
	k.Labels = Labels(pairs...)
	return k, text[end+1:], nil
}

// matcher returns a match function requiring every pair of labels, or nil
// (every set) when there are none.
func matcher(labels string) func(string) bool {
	if labels == "" {
		return nil
	}
	var pairs []string
	eachLabel(labels, func(n, v string) bool { pairs = append(pairs, n, v); return true })
	return func(set string) bool {
		for i := 0; i < len(pairs); i += 2 {
			if v, ok := labelValue(set, pairs[i]); !ok || v != pairs[i+1] {
				return false
			}
		}
		return true
	}
}

func (s *script) expect(rest string) {
	s.checks++
	lhs, rhs, ok := strings.Cut(rest, " = ")
	if !ok {
		s.errorf("expect needs ` = `")
		return
	}
	fields := strings.Fields(lhs)
	if len(fields) == 2 && fields[0] == "kv" {
		ratio, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			s.errorf("bad ratio %q", fields[1])
		}
		want := strings.TrimSpace(rhs)
		if want == "none" {
			want = ""
		}
		if got := KVSeverity(ratio); got != want {
			s.errorf("KVSeverity(%s) = %q, want %q", fields[1], got, want)
		}
		return
	}
	if len(fields) < 3 || s.est == nil {
		s.errorf("want `expect <T> rate|ratio|hist|json …` after a span")
		return
	}
	at, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		s.errorf("bad time %q", fields[0])
		return
	}
	for len(s.queue) > 0 && !(s.observed && sameTime(s.lastT, at)) {
		s.observeNext()
	}
	if !s.observed || !sameTime(s.lastT, at) {
		s.errorf("no poll at %g to check (the last observed is at %g)", at, s.lastT)
		return
	}
	asJSON := fields[1] == "json"
	if asJSON {
		fields = fields[1:]
	}
	c, what, err := s.query(fields[1:])
	if err != nil {
		s.errorf("%v", err)
		return
	}
	if asJSON {
		b, err := json.Marshal(c)
		if err != nil {
			s.errorf("%s: %v", what, err)
		}
		if got, want := string(b), strings.TrimSpace(rhs); got != want {
			s.errorf("%s at %g:\n got  %s\n want %s", what, at, got, want)
		}
		return
	}
	s.check(what, at, c, strings.Fields(rhs))
}

func (s *script) query(f []string) (Cell, string, error) {
	what := strings.Join(f, " ")
	switch {
	case f[0] == "rate" && len(f) == 2:
		k, _, err := parseSeries(f[1])
		return s.est.Rate(k.Series, matcher(k.Labels)), what, err
	case f[0] == "ratio" && len(f) == 4 && f[2] == "/":
		k, _, err := parseSeries(f[1])
		return s.est.Ratio(k.Series, f[3], matcher(k.Labels)), what, err
	case f[0] == "hist" && len(f) == 3:
		k, _, err := parseSeries(f[1])
		h := s.est.Histogram(k.Series, matcher(k.Labels))
		for name, c := range map[string]Cell{"count": h.Count, "mean": h.Mean, "p50": h.P50, "p95": h.P95, "p99": h.P99} {
			if name == f[2] {
				return c, what, err
			}
		}
	}
	return Cell{}, what, fmt.Errorf("cannot read query %q", what)
}

func (s *script) check(what string, at float64, c Cell, want []string) {
	s.t.Helper()
	fail := func(format string, args ...any) {
		s.t.Helper()
		s.errorf("%s at %g: %s\n got %s", what, at, fmt.Sprintf(format, args...), show(c))
	}
	if len(want) == 0 {
		s.errorf("expect needs a value")
		return
	}
	tol := 0.0
	attrs := want[1:]
	if len(attrs) > 0 && (strings.HasPrefix(attrs[0], "±") || strings.HasPrefix(attrs[0], "+-")) {
		var err error
		if tol, err = strconv.ParseFloat(strings.TrimLeft(attrs[0], "±+-"), 64); err != nil {
			s.errorf("bad tolerance %q", attrs[0])
		}
		attrs = attrs[1:]
	}
	if want[0] == "null" {
		if c.Value.Valid {
			fail("want null")
		}
	} else {
		v, err := strconv.ParseFloat(want[0], 64)
		switch {
		case err != nil:
			s.errorf("bad value %q", want[0])
		case !c.Value.Valid || !near(c.Value.V, v, tol):
			fail("want %s", want[0])
		}
	}
	// The invariant every cell keeps: a null has a reason, a number has none.
	if c.Value.Valid == (c.Reason != "") {
		fail("a null needs a reason and a number none")
	}
	notes := -1
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "reason":
			if c.Reason != v {
				fail("want reason %q", v)
			}
		case "window":
			if v == "none" {
				if c.Window.Valid {
					fail("want no window")
				}
				continue
			}
			w, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.errorf("bad window %q", v)
			} else if !c.Window.Valid || !near(c.Window.V, w, 1e-6) {
				fail("want window %s", v)
			}
		case "source":
			if c.Source != v {
				fail("want source %q", v)
			}
		case "derived":
			if strconv.FormatBool(c.Derived) != v {
				fail("want derived=%s", v)
			}
		case "note":
			found := false
			for _, n := range c.Notes {
				found = found || strings.Contains(n, v)
			}
			if !found {
				fail("want a note containing %q", v)
			}
		case "notes":
			if notes, _ = strconv.Atoi(v); len(c.Notes) != notes {
				fail("want %d notes", notes)
			}
		default:
			s.errorf("unknown attribute %q", k)
		}
	}
}

func near(got, want, tol float64) bool {
	if tol == 0 {
		tol = 1e-9 * max(1, math.Abs(want))
	}
	return math.Abs(got-want) <= tol
}

func show(c Cell) string {
	b, _ := json.Marshal(c)
	return string(b)
}
