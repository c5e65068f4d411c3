package promimport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrec/llmrec/record"
	"github.com/llmrec/llmrec/record/capture"
	"github.com/llmrec/llmrec/record/expo"
	"github.com/llmrec/llmrec/record/openmetrics"
	"github.com/llmrec/llmrec/record/redact"
)

// Options configure Import.
type Options struct {
	URL   string   // the store's base URL (http://host:9090, or a prefix it serves under)
	Match []string // series selectors: {job="vllm"}, vllm:num_requests_running, ...
	// Start and End bound the samples read, both included.
	Start, End time.Time
	// Chunk is how much time one query reads (0: DefaultChunk): memory
	// holds one chunk's samples.
	Chunk time.Duration
	// TargetLabel groups series into targets by its value; "" groups by
	// job and instance, as Prometheus names a scrape target.
	TargetLabel string
	Out         string       // the run folder to write
	Client      *http.Client // nil: http.DefaultClient; its redirect policy is replaced
	// FollowRedirects follows a redirect to the same scheme, host and port
	// (never elsewhere); by default a redirect is an error.
	FollowRedirects bool
	// Budget bounds one chunk's answers; a zero field takes DefaultBudget's.
	Budget Budget
	// MaxTargets bounds the targets of the import (0: DefaultMaxTargets).
	MaxTargets int
	// Progress, when set, is called after each chunk.
	Progress func(Progress)
}

// DefaultChunk is how much time one query reads. A chunk's samples cost
// about 200 bytes each while it is turned into rows (measured: 480,000
// samples in one chunk, 187 MB peak RSS; the same in five, 84 MB): eight
// engines of 500 series scraped every second fill a chunk of 2 min with
// 480,000.
const DefaultChunk = 2 * time.Minute

// DefaultMaxTargets bounds the targets one import makes: each holds its
// rows' state for the whole import, and a store answering for every
// instance of a fleet (150,000 of them) ran out of memory. Ten times what
// one recorder scrapes at 1 s (record.MaxScrapeRate).
const DefaultMaxTargets = 10 * record.MaxScrapeRate

// Progress says how far an import has read.
type Progress struct {
	Done, Total time.Duration // of the range
	Rows        int64
	Samples     int64
}

// Summary is what Import wrote.
type Summary struct {
	RunID    string
	Targets  []TargetSummary
	Rows     int64 // ok rows
	Failed   int64 // rows of scrapes the store says failed (up = 0)
	Samples  int64
	Segments int
	Types    string // where the types came from (capture.Import.Types)
	Notes    []string
}

// TargetSummary is one target imported.
type TargetSummary struct {
	Name     string
	Rows     int64
	Interval time.Duration // the median spacing of its scrapes
}

// Names of series a Prometheus server makes of each scrape itself: they
// are not on the target's page. up = 0 marks a failed scrape.
var storeSeries = map[string]bool{
	"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true,
	"scrape_samples_post_metric_relabeling": true, "scrape_series_added": true,
	"scrape_timeout_seconds": true, "scrape_sample_limit": true, "scrape_body_size_bytes": true,
}

// errNoSamples is an import that found nothing to import.
var errNoSamples = errors.New("no samples")

// Import reads the samples of opts.Match in [Start, End] from the store and
// writes them as one session in opts.Out, which must not hold a recording.
func Import(ctx context.Context, opts Options) (*Summary, error) {
	if len(opts.Match) == 0 {
		return nil, errors.New("no --match selector")
	}
	if !opts.End.After(opts.Start) {
		return nil, fmt.Errorf("--end %s is not after --start %s", opts.End.UTC().Format(time.RFC3339), opts.Start.UTC().Format(time.RFC3339))
	}
	chunk := cmp.Or(opts.Chunk, DefaultChunk)
	if chunk < time.Millisecond {
		return nil, fmt.Errorf("--chunk %s: want at least 1ms", chunk)
	}
	d := DefaultBudget
	opts.Budget = Budget{Bytes: cmp.Or(opts.Budget.Bytes, d.Bytes), Series: cmp.Or(opts.Budget.Series, d.Series),
		Samples: cmp.Or(opts.Budget.Samples, d.Samples)}
	opts.MaxTargets = cmp.Or(opts.MaxTargets, DefaultMaxTargets)
	st, err := newStore(opts.URL, opts.Client, opts.FollowRedirects)
	if err != nil {
		return nil, err
	}
	if err := checkOut(opts.Out); err != nil {
		return nil, err
	}
	meta, err := st.metadata(ctx)
	if err != nil {
		return nil, err
	}
	im := &importer{opts: opts, st: st, meta: meta, runID: record.NewRunID(opts.Start),
		targets: map[string]*target{}, labels: targetLabels(opts.TargetLabel)}
	if err := im.run(ctx, chunk); err != nil {
		return nil, im.fail(err)
	}
	return im.finish()
}

// checkOut refuses a folder that holds a recording: an import is a
// session of its own, never mixed into another's folder by accident.
func checkOut(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".parquet") || strings.HasSuffix(e.Name(), ".manifest.json") || strings.HasSuffix(e.Name(), ".journal") {
			return fmt.Errorf("--out %s holds a recording already (%s): import into an empty folder", dir, e.Name())
		}
	}
	return nil
}

// targetLabels are the labels a target is named by.
func targetLabels(l string) []string {
	if l == "" {
		return []string{"job", "instance"}
	}
	// llmrec's own export labels a series with its run as well.
	if l == "llmrec_target" {
		return []string{"llmrec_target", "llmrec_run"}
	}
	return []string{l}
}

type importer struct {
	opts    Options
	st      *store
	meta    map[string]metadata
	runID   string
	labels  []string
	targets map[string]*target
	seg     int
	wrote   bool // the manifest is on disk
	// failedAt is the start of the chunk that failed (ms).
	failedAt int64
	// parseErrs counts the rows whose samples did not parse; parseErr is
	// the first one's error.
	parseErrs int64
	parseErr  string

	rows, failed, samples int64
	// unlabelled counts series without the target labels (not imported);
	// typedByName and typedByMeta count the families typed each way.
	unlabelled               map[string]bool
	typedByName, typedByMeta int
	storeOwn                 bool // the store's own series were seen
	sawUp                    bool
}

// target is one target's rows so far.
type target struct {
	name   string
	seq    int64
	first  int64 // ms of its first and last row
	last   int64
	diffs  []int64
	intern expo.Interner
}

// point is one sample of a chunk: its series (an index into the chunk's
// series) and value.
type point struct {
	s int32
	v float64
}

// line is a series as a page line: its family, TYPE and HELP, and the
// text before the value.
type line struct {
	family, typ, help, name, text string
}

func (im *importer) run(ctx context.Context, chunk time.Duration) error {
	start, end := im.opts.Start.UnixMilli(), im.opts.End.UnixMilli()
	// Samples in (from, to]: the first chunk starts a millisecond early so
	// that a sample at Start is in it.
	for from := start - 1; from < end; {
		to := min(from+chunk.Milliseconds(), end)
		if err := im.chunk(ctx, from, to); err != nil {
			im.failedAt = from
			return err
		}
		from = to
		if im.opts.Progress != nil {
			im.opts.Progress(Progress{Done: time.Duration(to-start) * time.Millisecond, Total: time.Duration(end-start) * time.Millisecond,
				Rows: im.rows + im.failed, Samples: im.samples})
		}
	}
	return nil
}

// chunk imports the samples in (from, to].
func (im *importer) chunk(ctx context.Context, from, to int64) error {
	var lines []line
	seen := map[string]bool{}
	// byTarget[name][ms] are the points of one scrape.
	byTarget := map[string]map[int64][]point{}
	up := map[string]map[int64]float64{}
	var all []series
	tl := &tally{budget: im.opts.Budget}
	for _, sel := range im.opts.Match {
		ss, err := im.st.raw(ctx, sel, from, to, tl)
		if err != nil {
			return err
		}
		for _, s := range ss {
			k := seriesKey(s.Metric)
			// A series two selectors match is read once.
			if seen[k] {
				continue
			}
			seen[k] = true
			all = append(all, s)
		}
	}
	names := bucketNames(all)
	for _, s := range all {
		tname, ok := im.targetName(s.Metric)
		if !ok {
			continue
		}
		name := s.Metric["__name__"]
		own := storeSeries[name]
		im.storeOwn = im.storeOwn || own
		idx := int32(len(lines))
		if !own {
			lines = append(lines, im.line(s.Metric, names))
		}
		pts := byTarget[tname]
		if pts == nil {
			pts = map[int64][]point{}
			byTarget[tname] = pts
		}
		for _, v := range s.Values {
			ms, x := v.ms, v.v
			// The store includes a sample at the range's left end (before
			// Prometheus 3): it was the last chunk's.
			if ms <= from || ms > to {
				continue
			}
			if own {
				if name == "up" {
					im.sawUp = true
					if up[tname] == nil {
						up[tname] = map[int64]float64{}
					}
					up[tname][ms] = x
				}
				continue
			}
			pts[ms] = append(pts[ms], point{idx, x})
		}
	}
	// A failed scrape has up = 0 and no samples.
	for tname, ups := range up {
		for ms, v := range ups {
			if v == 0 {
				if byTarget[tname] == nil {
					byTarget[tname] = map[int64][]point{}
				}
				if _, ok := byTarget[tname][ms]; !ok {
					byTarget[tname][ms] = nil
				}
			}
		}
	}
	// Rule: targets past the cap are refused before any row is made.
	fresh := 0
	for tname := range byTarget {
		if im.targets[tname] == nil {
			fresh++
		}
	}
	if len(im.targets)+fresh > im.opts.MaxTargets {
		return fmt.Errorf("more than %d targets (named by %s): a narrower --match, or a --target-label grouping fewer", im.opts.MaxTargets, strings.Join(im.labels, ", "))
	}
	var rows []capture.Scrape
	for _, tname := range sortedKeys(byTarget) {
		t := im.target(tname)
		pts := byTarget[tname]
		for _, ms := range sortedKeys(pts) {
			failed := up[tname] != nil && up[tname][ms] == 0 && len(pts[ms]) == 0
			// A scrape the selectors matched only the store's own series of
			// is none of theirs.
			if len(pts[ms]) == 0 && !failed {
				continue
			}
			row := im.row(t, ms, pts[ms], lines, failed)
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if !im.wrote {
		if err := os.MkdirAll(im.opts.Out, 0o755); err != nil {
			return fmt.Errorf("create run folder: %w", err)
		}
		// Until it is done the manifest says the import is partial: a
		// process killed now leaves a folder that reads as one.
		if err := im.writeManifest(time.Time{}, partialUnfinished); err != nil {
			return err
		}
		im.wrote = true
	}
	im.seg++
	if _, err := capture.WriteSegment(im.opts.Out, im.runID, im.seg, rows); err != nil {
		return err
	}
	// Written again with the chunk's targets: still partial until done.
	return im.writeManifest(time.Time{}, partialUnfinished)
}

// targetName names the target of a series by its target labels; false
// when it lacks them.
func (im *importer) targetName(m map[string]string) (string, bool) {
	if im.opts.TargetLabel != "" {
		v, ok := m[im.opts.TargetLabel]
		if !ok {
			im.noteUnlabelled(m)
		}
		return v, ok
	}
	job, okj := m["job"]
	inst, oki := m["instance"]
	switch {
	case okj && oki:
		return job + "/" + inst, true
	case okj || oki:
		return job + inst, true
	}
	im.noteUnlabelled(m)
	return "", false
}

func (im *importer) noteUnlabelled(m map[string]string) {
	if im.unlabelled == nil {
		im.unlabelled = map[string]bool{}
	}
	im.unlabelled[m["__name__"]] = true
}

func (im *importer) target(name string) *target {
	t, ok := im.targets[name]
	if !ok {
		t = &target{name: name, first: -1}
		im.targets[name] = t
	}
	return t
}

// row makes one scrape's row: its samples parsed from a page written of
// them, so that they reach the readers as a scraped body's would (families
// and types as expfmt makes them of the page).
func (im *importer) row(t *target, ms int64, pts []point, lines []line, failed bool) capture.Scrape {
	ns := ms * int64(time.Millisecond)
	// The store's timestamp is the only time known: the samples' stamp.
	s := capture.Scrape{RunID: im.runID, Target: t.name, Endpoint: capture.EndpointMetrics, URL: im.st.shown,
		Seq: t.seq, Outcome: capture.OutcomeOK, ScheduledNs: ns, FirstByteNs: ns}
	t.seq++
	if t.first < 0 {
		t.first = ms
	} else {
		t.diffs = append(t.diffs, ms-t.last)
	}
	t.last = ms
	if failed {
		msg := "the store's scrape failed (up = 0); imported, no samples"
		s.Outcome, s.Error = capture.OutcomeError, &msg
		im.failed++
		return s
	}
	s.Body = page(pts, lines)
	ct := "text/plain; version=0.0.4"
	s.ContentType = &ct
	capture.ParseWith(&s, &t.intern)
	// The page was made here: the row has no body.
	s.Body, s.ContentType = nil, nil
	if s.ParseError != nil {
		msg := "imported samples did not parse as one page: " + *s.ParseError
		s.ParseError = &msg
		if im.parseErrs++; im.parseErr == "" {
			im.parseErr = *s.ParseError
		}
	}
	im.rows++
	im.samples += int64(len(s.Samples))
	return s
}

// page writes a scrape's samples as text exposition, each family once
// with its HELP and TYPE when known.
func page(pts []point, lines []line) []byte {
	slices.SortFunc(pts, func(a, b point) int {
		x, y := &lines[a.s], &lines[b.s]
		return cmp.Or(strings.Compare(x.family, y.family), strings.Compare(x.name, y.name), strings.Compare(x.text, y.text))
	})
	var b []byte
	fam := "\x00"
	for _, p := range pts {
		l := &lines[p.s]
		if l.family != fam {
			fam = l.family
			if l.help != "" {
				b = append(b, "# HELP "+l.family+" "+escapeHelp(l.help)+"\n"...)
			}
			if l.typ != "" {
				b = append(b, "# TYPE "+l.family+" "+l.typ+"\n"...)
			}
		}
		b = append(b, l.text...)
		b = append(b, ' ')
		b = openmetrics.AppendValue(b, p.v)
		b = append(b, '\n')
	}
	return b
}

// line makes a series' page line and finds its family: from the store's
// metadata where it has the family, else from the names.
func (im *importer) line(m map[string]string, buckets map[string]bool) line {
	name := m["__name__"]
	keys := make([]string, 0, len(m))
	for k := range m {
		if k == "__name__" || slices.Contains(im.labels, k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	if len(keys) > 0 {
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k + `="` + escapeValue(m[k]) + `"`)
		}
		b.WriteByte('}')
	}
	l := line{name: name, text: b.String()}
	l.family, l.typ, l.help = im.family(name, m, buckets)
	return l
}

// family says which family a sample name belongs to and its type.
func (im *importer) family(name string, m map[string]string, buckets map[string]bool) (fam, typ, help string) {
	base, suffix := splitSuffix(name)
	if im.meta != nil {
		if md, ok := im.meta[name]; ok && (md.Type == "counter" || md.Type == "gauge" || md.Type == "summary" && hasKey(m, "quantile")) {
			im.typedByMeta++
			return name, md.Type, md.Help
		}
		if md, ok := im.meta[base]; ok && suffix != "" && (md.Type == "histogram" || md.Type == "summary" && suffix != "_bucket") {
			im.typedByMeta++
			return base, md.Type, md.Help
		}
		// foo_total and foo_created of a counter foo: untyped lines on its
		// page too (expfmt does not join them to a family of another name).
		for _, sfx := range [...]string{"_total", "_created"} {
			if b, ok := strings.CutSuffix(name, sfx); ok && im.meta[b].Type != "" {
				im.typedByMeta++
				return name, "", ""
			}
		}
		if _, ok := im.meta[name]; ok {
			// Known and untyped (or a type a page line cannot carry alone).
			im.typedByMeta++
			return name, "", im.meta[name].Help
		}
	}
	im.typedByName++
	switch {
	case suffix == "_bucket" && hasKey(m, "le"):
		return base, "histogram", ""
	case (suffix == "_sum" || suffix == "_count") && buckets[base]:
		return base, "histogram", ""
	case hasKey(m, "quantile"):
		return name, "summary", ""
	}
	return name, "", ""
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// splitSuffix splits a histogram's or summary's sample name into its
// family and suffix; "" when it has none.
func splitSuffix(name string) (string, string) {
	for _, s := range [...]string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, s); ok {
			return b, s
		}
	}
	return name, ""
}

// bucketNames are the families of the chunk's _bucket series with le.
func bucketNames(ss []series) map[string]bool {
	out := map[string]bool{}
	for _, s := range ss {
		if b, ok := strings.CutSuffix(s.Metric["__name__"], "_bucket"); ok && hasKey(s.Metric, "le") {
			out[b] = true
		}
	}
	return out
}

func escapeValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func escapeHelp(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(v)
}

func seriesKey(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		b.WriteString(k + "=" + strconv.Quote(m[k]) + ",")
	}
	return b.String()
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// types says where the families' types came from.
func (im *importer) types() string {
	switch {
	case im.meta == nil || im.typedByMeta == 0:
		return "names"
	case im.typedByName > 0:
		return "metadata and names"
	}
	return "metadata"
}

func (im *importer) notes() []string {
	notes := []string{
		"no bodies: each row's samples are what the store kept of a scrape; the page's bytes, its size and whether it parsed are not known",
		"one time per row: the store's timestamp of the scrape, in first_byte_ns and scheduled_ns; when the request went out and when its answer ended are not known (start_ns, end_ns null)",
		"staleness markers are not returned by the store's queries: a target that vanished ends without one",
	}
	if im.types() != "metadata" {
		notes = append(notes, "types from names where the store served no metadata: a _bucket series with le makes a histogram, quantile a summary, the rest is untyped (a gauge or counter typed so by its page reads as untyped)")
	}
	if im.storeOwn {
		notes = append(notes, "the store's own series of each scrape (up, scrape_duration_seconds, scrape_samples_scraped, ...) are not on the page and were left out; up = 0 is a failed scrape (a row of outcome error)")
	} else {
		notes = append(notes, "up was not among the series matched: a scrape the store failed leaves no row")
	}
	if len(im.unlabelled) > 0 {
		notes = append(notes, fmt.Sprintf("series without the target labels %s were not imported: %s", strings.Join(im.labels, ", "), strings.Join(sortedKeys(im.unlabelled), ", ")))
	}
	return notes
}

// partialUnfinished is the manifest's word while an import runs.
const partialUnfinished = "the import did not finish: it was stopped or killed before its last chunk, and the samples after its last segment are missing"

// writeManifest writes the session's manifest. end, when set, is the time
// up to which the samples were read (o.End when every chunk was);
// partial, when set, says what is missing and why.
func (im *importer) writeManifest(end time.Time, partial string) error {
	o := im.opts
	m := capture.Manifest{SchemaVersion: capture.SchemaVersion, RunID: im.runID,
		Start: o.Start.UTC().Format(time.RFC3339Nano), StartNs: o.Start.UnixNano(), Host: "imported", Version: capture.Version,
		Config: map[string]any{"imported": "prometheus"}, Targets: []capture.ManifestTarget{},
		Import: &capture.Import{Source: "prometheus", URL: im.st.shown, Match: o.Match,
			Start: o.Start.UTC().Format(time.RFC3339Nano), End: o.End.UTC().Format(time.RFC3339Nano),
			TargetLabels: im.labels, Types: im.types(), Notes: im.notes(), Partial: partial}}
	if !end.IsZero() {
		e := end.UTC().Format(time.RFC3339Nano)
		endNs := end.UnixNano()
		m.End, m.EndNs = &e, &endNs
	}
	// The targets so far, at every write: a reader of a folder whose
	// import was killed knows them as imported (and partial).
	for _, name := range sortedKeys(im.targets) {
		t := im.targets[name]
		iv := t.interval()
		if iv <= 0 {
			continue
		}
		m.Targets = append(m.Targets, capture.ManifestTarget{Name: name, URL: im.st.shown, IntervalNs: int64(iv), TimeoutNs: int64(iv)})
	}
	return capture.WriteManifest(o.Out, m)
}

// fail ends an import that stopped at a chunk: with nothing written it
// is the error alone; otherwise the folder's manifest says the import is
// partial, up to when and why, so that every later read says so too.
func (im *importer) fail(err error) error {
	if !im.wrote {
		return err
	}
	ms := func(v int64) string { return time.UnixMilli(v).UTC().Format(time.RFC3339Nano) }
	why := redact.Text(err.Error())
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		why = "the import was interrupted"
	}
	partial := fmt.Sprintf("the chunk after %s failed (%s): nothing after %s was imported", ms(im.failedAt), why, ms(im.failedAt))
	if werr := im.writeManifest(time.UnixMilli(im.failedAt), partial); werr != nil {
		return fmt.Errorf("%w (and marking %s partial failed: %w)", err, im.opts.Out, werr)
	}
	return fmt.Errorf("%w; %s holds the samples up to %s, marked partial", err, im.opts.Out, ms(im.failedAt))
}

// interval is the median spacing of a target's scrapes; 0 with one.
func (t *target) interval() time.Duration {
	if len(t.diffs) == 0 {
		return 0
	}
	d := slices.Clone(t.diffs)
	slices.Sort(d)
	return time.Duration(d[len(d)/2]) * time.Millisecond
}

func (im *importer) finish() (*Summary, error) {
	if im.rows+im.failed == 0 {
		return nil, fmt.Errorf("%w: %s holds nothing for %s in [%s, %s]", errNoSamples, im.st.shown,
			strings.Join(im.opts.Match, " "), im.opts.Start.UTC().Format(time.RFC3339), im.opts.End.UTC().Format(time.RFC3339))
	}
	// Rule: rows without one sample are no import (a target whose pages
	// were over the series cap parsed to nothing).
	if im.samples == 0 {
		why := "every scrape the store kept failed (up = 0)"
		if im.parseErr != "" {
			why = fmt.Sprintf("%d scrape(s) did not parse, the first: %s", im.parseErrs, im.parseErr)
		}
		err := fmt.Errorf("%w: %d scrape(s) of %d target(s) imported, not one sample: %s", errNoSamples, im.rows+im.failed, len(im.targets), why)
		if werr := im.writeManifest(im.opts.End, "not one sample was imported: "+why); werr != nil {
			return nil, fmt.Errorf("%w (and marking %s partial failed: %w)", err, im.opts.Out, werr)
		}
		return nil, fmt.Errorf("%w; %s is marked partial", err, im.opts.Out)
	}
	if err := im.writeManifest(im.opts.End, ""); err != nil {
		return nil, err
	}
	sum := &Summary{RunID: im.runID, Rows: im.rows, Failed: im.failed, Samples: im.samples, Segments: im.seg,
		Types: im.types(), Notes: im.notes()}
	for _, name := range sortedKeys(im.targets) {
		t := im.targets[name]
		sum.Targets = append(sum.Targets, TargetSummary{Name: name, Rows: t.seq, Interval: t.interval()})
	}
	return sum, nil
}
