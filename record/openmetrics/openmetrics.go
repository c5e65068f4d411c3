// Package openmetrics writes a recording's samples as OpenMetrics text
// that `promtool tsdb create-blocks-from openmetrics FILE OUTDIR` loads
// into Prometheus blocks, so a run can be queried (and looked at in
// Grafana) beside production data.
//
// What is written:
//   - every sample of every ok scrape of the metrics endpoint, at the
//     scrape's first-byte time (when the engine began to answer, the
//     closest the recording has to the moment it rendered the page; the
//     send time when a row has none), in milliseconds: an exposition's own
//     timestamps are not used (the engines publish none);
//   - each series keeps the engine's name and labels, plus llmrec_run (the
//     session's run id) and llmrec_target (the target's name); an engine
//     label of either name is renamed exported_NAME, as Prometheus does
//     for a scrape's clashing labels;
//   - a family once, with its TYPE and HELP (the first seen), and no UNIT
//     (the classic text format the engines serve has none); its series'
//     samples grouped, in time order, a histogram's buckets (by le), count
//     and sum of one scrape together, and "# EOF" at the end;
//   - a counter family whose samples end in _total is the family without
//     the suffix, as OpenMetrics wants; a counter whose samples lack it
//     would have to be renamed, so it is written as "unknown" under its
//     own name: the series stored are those a Prometheus scraping the
//     engine stores. The engines' _created gauges stay gauges;
//   - NaN and ±Inf as NaN, +Inf and -Inf; a second sample of a series at
//     the same millisecond is dropped (the TSDB refuses it) and counted;
//   - a series whose name or a label name OpenMetrics cannot carry is left
//     out and counted.
//
// Memory stays bounded by the number of series, not by the recording's
// length: samples are read once, as records of 20 bytes (series, time,
// value), sorted in memory in runs of a bounded size, each run spilled to a
// temporary file, and the runs merged into the output (an external merge
// sort). A day of eight engines is about 100 M samples: 2 GB of runs on
// disk, a few MB of merge buffers in memory.
package openmetrics

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
)

// Labels added to every series.
const (
	RunLabel    = "llmrec_run"
	TargetLabel = "llmrec_target"
)

// DefaultRunRecords is how many samples are sorted in memory at a time:
// 16 MiB of records.
const DefaultRunRecords = 16 << 20 / recordSize

// Options of an export.
type Options struct {
	TempDir string // where the sorted runs are spilled; "" for the system's
	// RunRecords bounds the samples sorted in memory at once (0:
	// DefaultRunRecords).
	RunRecords int
	Run        string   // only this session's rows; "" for all
	Targets    []string // only these targets; empty for all
}

// Stats say what an export wrote and left out.
type Stats struct {
	Scrapes  int64 // ok scrapes whose samples were written
	Samples  int64
	Series   int
	Families int
	Runs     int // sorted runs spilled
	// Left out: samples of series OpenMetrics cannot name, second samples
	// at one millisecond.
	Unnamable  int64
	Duplicates int64
	// TypeClashes lists families declared with two types (the first is
	// written).
	TypeClashes []string
	// Problems are the files skipped or read in part (damaged), as the
	// other readers say them.
	Problems []string
}

// Write exports the run folder r to w.
func Write(w io.Writer, r *capture.Run, opt Options) (Stats, error) {
	e := newExporter(opt)
	defer e.sorter.close()
	if err := e.read(r); err != nil {
		return e.stats, err
	}
	err := e.write(w)
	return e.stats, err
}

// family is one OpenMetrics metric family.
type family struct {
	name, typ, help string
	id              int32
}

// series is one exported series; its fields order the output.
type series struct {
	fam    int32   // family, in first-seen order
	metric int32   // the series' metric (its labels without le or quantile), first-seen order
	class  int8    // place within one scrape's point: bucket or quantile, count, sum, other
	ord    float64 // le or quantile
	text   []byte  // name{labels} as written, with a trailing space
}

type seriesKey struct{ run, target, name, labels string }

type exporter struct {
	opt      Options
	stats    Stats
	families map[string]*family
	byDecl   map[string]*family // by the family name the page declared
	famList  []*family
	series   []series
	bySeries map[seriesKey]int32 // -1: left out
	metrics  map[string]int32
	sorter   *sorter
	targets  map[string]bool
}

func newExporter(opt Options) *exporter {
	e := &exporter{opt: opt, families: map[string]*family{}, byDecl: map[string]*family{}, bySeries: map[seriesKey]int32{}, metrics: map[string]int32{},
		sorter: newSorter(opt.TempDir, cmp.Or(opt.RunRecords, DefaultRunRecords))}
	e.sorter.less = e.compare
	if len(opt.Targets) > 0 {
		e.targets = map[string]bool{}
		for _, t := range opt.Targets {
			e.targets[t] = true
		}
	}
	return e
}

// row is what an export reads of a scrape row: a segment's rows are read
// without body, headers and help text (the longest string of a sample,
// needed once a family; see helps).
type row = capture.Scrape

// sample is one of its samples.
type sample = expo.Sample

// segmentOmits are the columns an export's first pass leaves out.
const segmentOmits = capture.OmitBody | capture.OmitHeaders | capture.OmitHelp

// read reads every segment (checked against its seal, as every reader
// does) and journal of r into sorted runs.
func (e *exporter) read(r *capture.Run) error {
	seals, err := capture.ReadSeals(r.Dir)
	if err != nil {
		e.stats.Problems = append(e.stats.Problems, err.Error())
	}
	for _, seg := range r.Segments {
		seal, err := seals.Verify(seg)
		if err != nil {
			e.stats.Problems = append(e.stats.Problems, err.Error()+" (skipped)")
			continue
		}
		var n int64
		var addErr error
		families := len(e.famList)
		err = capture.ReadScrapes(seg, segmentOmits, func(x *row) error {
			n++
			addErr = e.add(x)
			return addErr
		})
		if addErr != nil {
			return addErr
		}
		if err == nil {
			err = seal.CheckRows(seg, n)
		}
		if err != nil {
			e.stats.Problems = append(e.stats.Problems, fmt.Sprintf("%v (%d rows read)", err, n))
		}
		if len(e.famList) > families {
			e.helps(seg)
		}
	}
	for _, j := range r.Journals() {
		rows, err := capture.ReadLive(j)
		if err != nil {
			e.stats.Problems = append(e.stats.Problems, err.Error())
		}
		for i := range rows {
			s := &rows[i]
			if err := e.add(s); err != nil {
				return err
			}
			e.helpOf(s.Samples)
		}
	}
	return nil
}

// helps reads the help texts of the families first seen in seg, in a
// second pass over that file alone (they are first seen in the first file
// but for a family that joins later).
func (e *exporter) helps(seg string) {
	_ = capture.ReadScrapes(seg, capture.OmitBody|capture.OmitHeaders, func(h *capture.Scrape) error {
		e.helpOf(h.Samples)
		return nil
	})
}

// helpOf takes the help texts of a journal row's samples.
func (e *exporter) helpOf(ss []expo.Sample) {
	for i := range ss {
		e.setHelp(ss[i].Family, ss[i].Help)
	}
}

// setHelp gives the family declared as decl its first non-empty help.
func (e *exporter) setHelp(decl, help string) {
	if help == "" {
		return
	}
	f := e.byDecl[decl]
	if f != nil && f.help == "" {
		f.help = help
	}
}

// add files one row's samples.
func (e *exporter) add(x *row) error {
	if x.Outcome != capture.OutcomeOK || x.Endpoint != capture.EndpointMetrics || len(x.Samples) == 0 {
		return nil
	}
	if (e.opt.Run != "" && x.RunID != e.opt.Run) || (e.targets != nil && !e.targets[x.Target]) {
		return nil
	}
	ns := cmp.Or(x.FirstByteNs, x.StartNs)
	if ns <= 0 {
		return nil
	}
	ts := ns / 1e6
	e.stats.Scrapes++
	for i := range x.Samples {
		s := &x.Samples[i]
		k := seriesKey{x.RunID, x.Target, s.Name, s.Labels}
		id, ok := e.bySeries[k]
		if !ok {
			id = e.newSeries(k, s)
			e.bySeries[k] = id
		}
		if id < 0 {
			e.stats.Unnamable++
			continue
		}
		if err := e.sorter.add(record{sid: uint32(id), ts: ts, v: s.Value}); err != nil {
			return err
		}
	}
	return nil
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// newSeries describes the series of k, first seen in s; -1 when
// OpenMetrics cannot name it.
func (e *exporter) newSeries(k seriesKey, s *sample) int32 {
	var labels map[string]string
	if err := json.Unmarshal([]byte(k.labels), &labels); err != nil || !metricName.MatchString(k.name) {
		return -1
	}
	for n := range labels {
		if !labelName.MatchString(n) || strings.HasPrefix(n, "__") {
			return -1
		}
	}
	name, typ := familyOf(s)
	f := e.families[name]
	if f == nil {
		f = &family{name: name, typ: typ, id: int32(len(e.famList))}
		e.families[name] = f
		e.famList = append(e.famList, f)
		e.byDecl[s.Family] = f
	} else if f.typ != typ {
		if !slices.Contains(e.stats.TypeClashes, name) {
			e.stats.TypeClashes = append(e.stats.TypeClashes, name)
		}
	}
	sr := series{fam: f.id, class: 3}
	// The point's own labels (le, quantile) order it within its metric.
	point := ""
	switch {
	case (typ == "histogram" || typ == "gaugehistogram") && k.name == name+"_bucket":
		point = "le"
		sr.class = 0
	case typ == "summary" && k.name == name:
		point = "quantile"
		sr.class = 0
	case strings.HasSuffix(k.name, "_count") || strings.HasSuffix(k.name, "_gcount"):
		sr.class = 1
	case strings.HasSuffix(k.name, "_sum") || strings.HasSuffix(k.name, "_gsum"):
		sr.class = 2
	}
	if point != "" {
		sr.ord, _ = strconv.ParseFloat(labels[point], 64)
	}
	// Exported labels: the engine's, a clashing name renamed, then ours.
	out := make(map[string]string, len(labels)+2)
	for n, v := range labels {
		if n == RunLabel || n == TargetLabel {
			n = exported(labels, n)
		}
		out[n] = v
	}
	metricKey := fmt.Sprintf("%d\x00%s\x00%s", f.id, k.run, k.target)
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n != point {
			metricKey += "\x00" + n + "\x00" + out[n]
		}
	}
	m, ok := e.metrics[metricKey]
	if !ok {
		m = int32(len(e.metrics))
		e.metrics[metricKey] = m
	}
	sr.metric = m
	out[RunLabel], out[TargetLabel] = k.run, k.target
	names = append(names, RunLabel, TargetLabel)
	slices.Sort(names)
	b := append([]byte(k.name), '{')
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, n...)
		b = append(b, `="`...)
		b = append(b, escapeLabel(out[n])...)
		b = append(b, '"')
	}
	sr.text = append(b, "} "...)
	e.series = append(e.series, sr)
	return int32(len(e.series) - 1)
}

// exported is the name an engine's label n takes when it clashes with one
// of ours: exported_n, prefixed again while the engine has that one too.
func exported(labels map[string]string, n string) string {
	for {
		n = "exported_" + n
		if _, taken := labels[n]; !taken {
			return n
		}
	}
}

// familyOf is the OpenMetrics family and type of a sample (see the
// package comment for counters).
func familyOf(s *sample) (name, typ string) {
	switch s.Type {
	case "counter":
		if base, ok := strings.CutSuffix(s.Family, "_total"); ok && s.Name == s.Family {
			return base, "counter"
		}
		return s.Name, "unknown"
	case "gauge", "histogram", "summary", "gaugehistogram":
		return s.Family, s.Type
	}
	return s.Name, "unknown"
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }

// compare is the output's order: family, metric, time, then the place
// within one scrape's point (buckets by le, count, sum). It reads only
// what a series was at its first sighting, so it never changes.
func (e *exporter) compare(a, b record) int {
	sa, sb := &e.series[a.sid], &e.series[b.sid]
	return cmp.Or(cmp.Compare(sa.fam, sb.fam), cmp.Compare(sa.metric, sb.metric), cmp.Compare(a.ts, b.ts),
		cmp.Compare(sa.class, sb.class), cmp.Compare(sa.ord, sb.ord), cmp.Compare(a.sid, b.sid))
}

// write merges the sorted runs into w, family by family.
func (e *exporter) write(w io.Writer) error {
	e.stats.Series = 0
	seen := make([]bool, len(e.series))
	bw := newLineWriter(w)
	fam := int32(-1)
	var last record
	first := true
	err := e.sorter.merge(func(r record) error {
		if !first && r.sid == last.sid && r.ts == last.ts {
			e.stats.Duplicates++
			return nil
		}
		first, last = false, r
		s := &e.series[r.sid]
		if s.fam != fam {
			fam = s.fam
			f := e.famList[fam]
			e.stats.Families++
			bw.meta(f)
		}
		if !seen[r.sid] {
			seen[r.sid] = true
			e.stats.Series++
		}
		e.stats.Samples++
		bw.sample(s.text, r.v, r.ts)
		return bw.err
	})
	e.stats.Runs = e.sorter.runs
	if err != nil {
		return err
	}
	bw.eof()
	return bw.flush()
}

// lineWriter writes OpenMetrics lines, keeping the first error.
type lineWriter struct {
	w      io.Writer
	buf    []byte
	err    error
	lastTs int64
	tsText []byte
}

func newLineWriter(w io.Writer) *lineWriter {
	return &lineWriter{w: w, buf: make([]byte, 0, 1<<20), lastTs: math.MinInt64}
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func (l *lineWriter) meta(f *family) {
	l.buf = fmt.Appendf(l.buf, "# TYPE %s %s\n", f.name, f.typ)
	if f.help != "" {
		l.buf = fmt.Appendf(l.buf, "# HELP %s %s\n", f.name, helpEscaper.Replace(f.help))
	}
	l.spill()
}

func (l *lineWriter) sample(text []byte, v float64, ts int64) {
	l.buf = append(l.buf, text...)
	l.buf = AppendValue(l.buf, v)
	l.buf = append(l.buf, ' ')
	if ts != l.lastTs {
		l.lastTs, l.tsText = ts, appendSeconds(l.tsText[:0], ts)
	}
	l.buf = append(l.buf, l.tsText...)
	l.buf = append(l.buf, '\n')
	l.spill()
}

func (l *lineWriter) eof() { l.buf = append(l.buf, "# EOF\n"...) }

func (l *lineWriter) spill() {
	if len(l.buf) >= 1<<20-4096 {
		l.flush()
	}
}

func (l *lineWriter) flush() error {
	if l.err == nil && len(l.buf) > 0 {
		_, l.err = l.w.Write(l.buf)
	}
	l.buf = l.buf[:0]
	return l.err
}

// AppendValue writes a value as OpenMetrics (and the Prometheus text
// format) reads it: NaN, +Inf, -Inf or the shortest decimal that reads back
// the same.
func AppendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendSeconds writes a millisecond time as OpenMetrics seconds.
// Prometheus reads seconds as a float and truncates seconds*1000 to an
// integer, so "S.mmm" can read back one millisecond early; then a digit
// more (a tenth of a millisecond) makes it read back as written.
func appendSeconds(b []byte, ms int64) []byte {
	if ms < 0 {
		return strconv.AppendFloat(b, float64(ms)/1000, 'f', 3, 64)
	}
	start := len(b)
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	frac := ms % 1000
	b = append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	if f, err := strconv.ParseFloat(string(b[start:]), 64); err == nil && int64(f*1000) != ms {
		b = append(b, '1')
	}
	return b
}
