package render

// Report is everything the page and the summary show, already worked out:
// rendering lays it out and computes nothing. Every string in it is data
// (a scraped label, a model name, a target name) and is escaped wherever it
// is written.
type Report struct {
	Title     string // the page title and the summary's heading
	Generator string // "llmrec v0.3.0": the footer and <meta name=generator>
	// Banner, if set, is the page's first line under the title: the
	// overall verdict in a word (Topic, shown as a badge) and in a
	// sentence (Text), its class the worst it sums up (the diff page's).
	Banner *Verdict
	// Answer is the first table: a row per target and one for the fleet,
	// with the busy figures and a status and its reason.
	Answer Table
	// Overview, if set, is the one chart between the answer and the
	// findings: throughput over time with the phases shaded.
	Overview *Chart
	Verdicts []Verdict // the findings in brief, one line per kind, under the answer
	Header   Header    // the run header: below the answer
	Sections []Section // the body: per target, fleet, incidents, settle polls...
	Appendix []Section // series catalogs, unknown series, effective config
}

// Header is the run header: targets, engines and versions, duration,
// cadence, span, llmrec version.
type Header struct {
	Facts  []Fact  // name: value pairs, in order
	Tables []Table // for example the targets with their engines and versions
}

// Fact is one named value of the header.
type Fact struct {
	Name  string
	Value Cell
}

// Verdict is one line of the verdict strip: a topic (queueing, incidents,
// seams, drift), its class and its text, with provenance.
type Verdict struct {
	Topic string
	Class string // one of the Class constants
	Text  string
	Prov  string // provenance shown on hover (HTML only)
	Href  string // "#section-id" to jump to the evidence, or ""
}

// Section is a titled part of the report. Sections nest; the page shows
// three levels of headings, deeper ones as the third.
type Section struct {
	ID       string   // anchor, unique in the report; see ID
	Title    string   //
	Notes    []string // paragraphs under the title (in the summary, folded with the section)
	Tables   []Table
	Charts   []Chart
	Blocks   []Block // preformatted text, such as the effective config
	Sections []Section
}

// Table is a table of cells. Rows should have as many cells as there are
// columns; HTML and Markdown reject a table whose rows do not.
type Table struct {
	Title   string
	Columns []Column
	Rows    [][]Cell
	Notes   []string // lines under the table
	Summary bool     // also in the Markdown summary
	Fold    bool     // shown folded (<details>) in the page: long catalogs
}

// Column is a table column.
type Column struct {
	Title string
	Prov  string // what the column means, shown on hover; may be ""
	Num   bool   // numbers: right-aligned
}

// Cell is one shown value: its text, its provenance and its class.
type Cell struct {
	Text  string // what is shown, already formatted
	Prov  string // provenance: source, window, derived, reason; "" for plain text
	Class string // one of the Class constants
	Href  string // "#section-id" to link to, or ""
	// Badge shows the cell as a badge of its class's colour: a verdict in
	// a word, never a sign (an emoji renders as a box without a font).
	Badge bool
}

// Classes of cells and verdicts. They style the value; the text must say
// the same in words, since colour alone tells nothing to some readers and
// nothing at all in Markdown.
const (
	ClassNone    = ""
	ClassOK      = "ok"
	ClassWarn    = "warn"
	ClassFail    = "fail"
	ClassRefused = "refused" // the estimator refused a value: null with a reason
	ClassUnknown = "unknown" // no data, or nothing to judge by
)

// Block is a titled piece of preformatted text, shown folded in the page.
type Block struct {
	Title string
	Text  string
}

// Chart is one chart of the page: an ECharts option object and what the
// page's own script needs to label it. Build one with TimeSeries.Chart or
// Bars.Chart, or set Option to any value encoding/json can marshal (such as
// the map a go-echarts chart's JSON method returns). Option is written into
// the page by encoding/json only, and the page's script never evaluates a
// string of it, so no option string can become code.
type Chart struct {
	ID     string   // DOM id: fixed and unique in the report (see ID), so output is deterministic
	Title  string   //
	Notes  []string // lines under the chart, such as "refused windows shaded; 1,000 of 43,200 points drawn"
	Height int      // pixels; 0 means 280
	Option any      // the ECharts option

	// Prov is the provenance table of the chart's data: a data item
	// [x, y, i] has provenance Prov[i]; an item [x, y] has that of its
	// series, SeriesProv[seriesIndex] (-1: none).
	Prov       []string
	SeriesProv []int
	// SeriesCanon is each series' canonical cell name, shown on hover
	// beside its human name; "" for none. May be shorter than the series.
	SeriesCanon []string
	// X says how the page labels the x axis: XElapsed (seconds since T0),
	// XCategory or XValue.
	X  string
	T0 float64 // Unix seconds at x = 0, for XElapsed
	// Unit is appended to values in tooltips (values are in it: "ms" when
	// the chart scaled seconds); Percent shows ratios 0..1 as percentages.
	Unit    string
	Percent bool
}

// How the page labels a chart's x axis.
const (
	XElapsed  = "elapsed"  // x is seconds since Chart.T0: axis "1:02:03", tooltip also the UTC time
	XCategory = "category" // x is a category name
	XValue    = "value"    // x is a plain number
)
