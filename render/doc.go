// Package render lays out an analysed run as one self-contained HTML page
// and a GitHub-flavoured Markdown summary. It computes nothing: a Report is
// plain data, already worked out by the analysis, and HTML and Markdown
// only arrange and escape it.
//
//	Report{Answer, Verdicts, Header, Sections{Tables, Charts, Blocks, Sections}, Appendix}
//	HTML(w, report)      one file: ECharts and the page script inlined, no request to any host
//	Markdown(w, report)  at most MaxMarkdown bytes: the answer and the findings, the rest folded
//
// The answer comes first (answer.go): one table, a row per target and one
// for the fleet, with the busy figures and the analysis' status and reason
// for each, then the findings grouped by kind, a plain sentence each (the
// Verdicts). The run's metadata follows them.
//
// Every shown number carries its provenance (source, window "Δ2.0s",
// derived, the reason it is null): a table Cell has Prov, shown on hover in
// the page (CellOf makes one from a rate.Cell); a chart Point holds its
// rate.Cell, and the chart's tooltip shows Prov of it. The summary has no
// footnotes: the answer's notes are its legend of windows, and it points
// to the page for the rest.
//
// Charts are built with go-echarts' option types (TimeSeries.Chart,
// Bars.Chart), serialised by encoding/json and written into the page by
// html/template; go-echarts' own page renderer is never used, since it
// writes options unescaped and turns strings holding __f__ into code. The
// page's script (templates/report.js) adds the formatters as its own
// functions and reads every string as text. Long series are downsampled
// for drawing only (package downsample): extremes, gaps and incidents are
// kept, nulls stay nulls and are never joined across.
//
// Charts name their series as NameOf names canonical cells ("TTFT p50";
// the canonical name shows on hover and stays in the analysis JSON), name
// the y axis by the one unit the chart draws (seconds whose magnitude stays
// under one drawn as ms), and list every series and every kind of shading
// (incident, restart/down/stall, refused window, no data, fewer engines) in
// a plain legend of as many rows as it needs, never paged. A series with no
// value is not drawn, series equal at every poll are drawn as one line, and
// each says so in a note under the chart. The fleet's sum is drawn as a
// line only where every engine had a value; elsewhere it is partial, drawn
// as points and shaded with the count on hover.
//
// Output is deterministic: chart and section ids are given (ID makes them
// from names), maps are marshalled in key order, and nothing depends on the
// time or on chance. Golden files in testdata/ pin both outputs; rewrite
// them with go test ./render -update.
package render
