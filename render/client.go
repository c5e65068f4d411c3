package render

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmrec/llmrec/analyze"
	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

// clientSection lays out the client files beside the fleet (the analysis'
// client section): per file its side-by-side table, what it is and how it
// was read, and its charts; then the disagreements and their seams.
func clientSection(res *analyze.Result, polls *Polls) (Section, bool, error) {
	c := res.Client
	if c == nil || len(c.Files) == 0 {
		return Section{}, false, nil
	}
	s := Section{ID: "client", Title: "Client",
		Notes: []string{"The load generator's own record beside the engines' counters over the same bounds: each client phase is a named phase of the analysis, " +
			"measured on every target; the server's figure is the fleet's (rates and gauge means add across engines, quantiles only for a fleet of one). " +
			"The agreement is client ÷ server against the quantity's tolerance; hover a cell for its formula."}}
	if len(c.Findings) > 0 {
		t := Table{Title: "Where client and server disagree, and the likely seam", Summary: true,
			Columns: []Column{{Title: "file"}, {Title: "phase"}, {Title: "seam"}, {Title: "quantities"}, {Title: "what it means"}}}
		for _, f := range c.Findings {
			t.Rows = append(t.Rows, []Cell{text(filepath.Base(f.File)), text(cmpOr(f.Phase, "the whole file")),
				{Text: seamName(f.Seam), Class: ClassWarn, Prov: f.Seam}, text(strings.Join(f.Quantities, ", ")), text(f.Detail)})
		}
		s.Tables = append(s.Tables, t)
	}
	t0 := runStart(res)
	for i := range c.Files {
		sub, err := clientFileSection(res, &c.Files[i], i, t0, polls)
		if err != nil {
			return Section{}, false, err
		}
		s.Sections = append(s.Sections, sub)
	}
	return s, true, nil
}

// seamNames are the seams in words.
var seamNames = map[string]string{
	clientcmp.SeamQueueBeforeEngine: "queue before the engine",
	clientcmp.SeamChunks:            "streamed chunks counted as tokens",
	clientcmp.SeamCancelled:         "cancelled requests the server still served",
	clientcmp.SeamTokenizer:         "tokenizer mismatch",
	clientcmp.SeamUnrecorded:        "requests sent to engines not recorded",
	clientcmp.SeamClockOffset:       "clock offset between client and recorder",
	clientcmp.SeamUnexplained:       "unexplained",
}

func seamName(s string) string { return cmpOr(seamNames[s], s) }

func clientFileSection(res *analyze.Result, f *clientcmp.File, k int, t0 float64, polls *Polls) (Section, error) {
	m := &f.Meta
	name := filepath.Base(m.File)
	s := Section{ID: ID("client", strconv.Itoa(k+1)), Title: "Client file " + name}
	tool := m.Tool
	if m.Version != "" {
		tool += " " + m.Version
	}
	s.Notes = append(s.Notes, fmt.Sprintf("%s: %s (%s), %d per-request records; times: %s; aligned %s; phases: %s.",
		name, m.Format, tool, f.Requests, m.TimeBase, m.Aligned, f.Phases))
	o := f.Offset
	if o.Value.Valid {
		s.Notes = append(s.Notes, fmt.Sprintf("Clock offset estimated from the engines' load edges: %+.2f s (%s; tolerance %.2f s).", o.Value.V, o.Why, o.Tolerance))
	} else {
		s.Notes = append(s.Notes, "Clock offset: unknown ("+o.Why+").")
	}
	for _, n := range m.Notes {
		s.Notes = append(s.Notes, name+": "+n)
	}
	for _, sk := range m.Skipped {
		s.Notes = append(s.Notes, fmt.Sprintf("%s: %d records skipped: %s", name, sk.Count, sk.Reason))
	}
	for _, sd := range f.Sides {
		s.Tables = append(s.Tables, sideTable(name, &sd, t0))
	}
	charts, err := clientCharts(res, f, k, polls)
	if err != nil {
		return Section{}, err
	}
	s.Charts = charts
	return s, nil
}

// sideTable is one client phase's quantities, client beside server.
func sideTable(file string, sd *clientcmp.Side, t0 float64) Table {
	t := Table{Title: fmt.Sprintf("%s, %s: client beside the %s", file, sd.Phase, sd.Group), Summary: true,
		Columns: []Column{{Title: "quantity"}, {Title: "client", Num: true, Prov: "the load generator's own figure"},
			{Title: "server", Num: true, Prov: "the fleet's figure over the same bounds, from the engines' counters"},
			{Title: "client ÷ server", Num: true}, {Title: "tolerance", Num: true}, {Title: "agreement"}}}
	st := span(t0, sd.Start, sd.End)
	t.Notes = append(t.Notes, fmt.Sprintf("%s (%s), %s; %s; started: %s.", sd.Phase, sd.Kind, st.Text, sd.Records, outcomes(sd.Started)))
	if sd.Aligned == client.RunBounds {
		t.Notes = append(t.Notes, "The client's figures are its file's own summary, "+client.RunBounds+": the server's are over the same bounds, which the client's run may not fill exactly.")
	}
	for _, r := range sd.Rows {
		cl := Cell{Text: quantityText(r.Quantity, r.Client.Value), Prov: r.Client.Formula + fmt.Sprintf(" (%d records)", r.Client.Records)}
		if !r.Client.Value.Valid {
			cl.Class, cl.Prov = ClassUnknown, "unknown: "+r.Client.Why+"; "+r.Client.Formula
		}
		sv := Cell{Text: quantityText(r.Quantity, r.Server.Value), Prov: r.Server.Figure + ": " + r.Server.Source}
		if !r.Server.Value.Valid {
			sv.Class, sv.Prov = ClassUnknown, cmpOr(r.Server.Figure+": ", "")+"unknown: "+r.Server.Reason
		}
		tol := "—"
		if r.Tolerance > 0 {
			tol = "±" + strconv.FormatFloat(100*r.Tolerance, 'f', 0, 64) + " %"
		}
		ag := Cell{Text: r.Agreement, Prov: r.Why}
		switch r.Agreement {
		case clientcmp.Agree:
			ag.Class = ClassOK
		case clientcmp.Disagree:
			ag.Class = ClassWarn
		default:
			ag.Class, ag.Text = ClassUnknown, "not comparable: "+r.Why
		}
		t.Rows = append(t.Rows, []Cell{{Text: quantityName(r.Quantity), Prov: r.Quantity}, cl, sv, text(optionalRatio(r.Ratio)), text(tol), ag})
	}
	return t
}

func optionalRatio(n rate.Num) string {
	if !n.Valid {
		return "—"
	}
	return strconv.FormatFloat(n.V, 'f', 2, 64)
}

// quantityNames are the client quantities in words.
var quantityNames = map[string]string{
	client.FOutputTokensPS: "output tokens/s", client.FInputTokensPS: "input tokens/s", client.FRequestsPS: "requests/s (ended ok)",
	client.FErrorRate: "error rate", client.FCancelRate: "cancel rate", client.FIncompleteRate: "incomplete rate",
	client.FConcMean: "concurrency (mean)", client.FConcMax: "concurrency (max)",
	client.FEnergyPerToken: "GPU energy per output token (J, client-side only)",
}

func quantityName(q string) string {
	if n, ok := quantityNames[q]; ok {
		return n
	}
	base, p, ok := strings.Cut(strings.TrimSuffix(q, "_s"), "_p")
	if !ok {
		return q
	}
	return strings.ToUpper(base) + " p" + p
}

// quantityText is a value in its quantity's unit.
func quantityText(q string, n rate.Num) string {
	switch {
	case !n.Valid:
		return "unknown"
	case strings.HasSuffix(q, "_p50_s"), strings.HasSuffix(q, "_p90_s"), strings.HasSuffix(q, "_p99_s"):
		return seconds(n.V)
	case strings.HasSuffix(q, "_rate"):
		return strconv.FormatFloat(100*n.V, 'f', 1, 64) + " %"
	}
	return format(n.V)
}

// clientCharts are a file's requests by start (latency, errors marked),
// its throughput beside the fleet's decode, and its TTFT beside each
// engine's.
func clientCharts(res *analyze.Result, f *clientcmp.File, k int, polls *Polls) ([]Chart, error) {
	if len(f.Points.Points) == 0 {
		return nil, nil
	}
	id := func(what string) string { return ID("client", strconv.Itoa(k+1), what) }
	name := filepath.Base(f.Meta.File)
	ok := Series{Name: "request latency (ok)", Canon: "end − start", Markers: true}
	bad := Series{Name: "request latency (error, cancelled, incomplete)", Canon: "end − start (else last sign − start)", Markers: true, Symbol: "triangle"}
	ttft := Series{Name: "client TTFT (each request)", Canon: "ttft", Markers: true}
	for _, p := range f.Points.Points {
		src := "the client's record of the request, " + name
		if p.Status == client.StatusOK {
			ok.Points = append(ok.Points, Point{T: p.T, Cell: rate.Cell{Value: p.Latency, Source: src}})
			// A request without a TTFT is no point: absent, not a gap.
			if p.TTFT.Valid {
				ttft.Points = append(ttft.Points, Point{T: p.T, Cell: rate.Cell{Value: p.TTFT, Source: src}})
			}
		} else {
			bad.Points = append(bad.Points, Point{T: p.T, Cell: rate.Cell{Value: p.Latency, Source: src + ", status " + p.Status}})
		}
	}
	notes := []string{fmt.Sprintf("Each point is a request, at its start; %d requests.", f.Points.Total)}
	if f.Points.Note != "" {
		notes = append(notes, "Drawn: "+f.Points.Note+".")
	}
	sc := TimeSeries{ID: id("latency"), Title: name + ": requests by start, latency (errors marked)", Unit: UnitSeconds,
		Notes: notes, Series: []Series{ok}, Budget: clientcmp.MaxPoints}
	if len(bad.Points) > 0 {
		sc.Series = append(sc.Series, bad)
	}
	var out []Chart
	ch, err := sc.Chart()
	if err != nil {
		return nil, fmt.Errorf("client chart: %w", err)
	}
	out = append(out, ch)

	tp := TimeSeries{ID: id("throughput"), Title: name + ": client output tokens/s beside the fleet's decode", Unit: UnitTokensPS,
		Notes: []string{fmt.Sprintf("The client's line is its output tokens of the requests that ended ok in bins of %gs (%s); the fleet's is the sum of the engines' decode at each tick.", f.Throughput.Width, f.Throughput.Source)}}
	cs := Series{Name: "client output tokens/s", Canon: "client " + client.FOutputTokensPS, Step: true}
	for _, p := range f.Throughput.Points {
		cs.Points = append(cs.Points, Point{T: p[0], Cell: rate.Cell{Value: rate.Some(p[1]), Source: f.Throughput.Source, Window: rate.Some(f.Throughput.Width)}})
	}
	tp.Series = append(tp.Series, cs)
	fl := Series{Name: "fleet decode (Σ engines)", Canon: "Σ " + engine.DecodeTokensPerSecond}
	for _, p := range res.Fleet.Polls {
		fl.Points = append(fl.Points, Point{T: p.T, Cell: rate.Cell{Value: p.Decode, Derived: true,
			Source: fmt.Sprintf("Σ decode_tokens_per_second over %d of %d engines", p.DecodeOf, p.Total)}})
	}
	if len(fl.Points) > 0 {
		tp.Series = append(tp.Series, fl)
	}
	if ch, err = tp.Chart(); err != nil {
		return nil, fmt.Errorf("client chart: %w", err)
	}
	out = append(out, ch)

	tt := TimeSeries{ID: id("ttft"), Title: name + ": TTFT, client (each request) vs server (each engine's windowed p50)", Unit: UnitSeconds,
		Notes:  []string{"A client TTFT well above the engine's while the engine's waiting count is 0 is time spent queued before the engine (llama.cpp's HTTP threads, a proxy)."},
		Series: []Series{ttft}, Budget: clientcmp.MaxPoints}
	if polls != nil {
		for _, t := range res.Targets {
			pts, any := polls.series(polls.target(t.Name), engine.TTFT+"__p50")
			if any {
				tt.Series = append(tt.Series, Series{Name: t.Name + " TTFT p50", Canon: engine.TTFT + "__p50", Points: pts})
			}
		}
	}
	if ch, err = tt.Chart(); err != nil {
		return nil, fmt.Errorf("client chart: %w", err)
	}
	return append(out, ch), nil
}

// clientFinding is the verdict on the client files: where client and
// server disagree and the seams, else that they agree.
func clientFinding(res *analyze.Result) *Verdict {
	c := res.Client
	if c == nil || len(c.Files) == 0 {
		return nil
	}
	prov := "each client phase's figures against the fleet's over the same bounds, each quantity within its tolerance (see the Client section)"
	if len(c.Findings) == 0 {
		agree, compared := 0, 0
		for _, f := range c.Files {
			for _, s := range f.Sides {
				for _, r := range s.Rows {
					if r.Agreement != clientcmp.NotComparable {
						compared++
					}
					if r.Agreement == clientcmp.Agree {
						agree++
					}
				}
			}
		}
		if compared == 0 {
			return &Verdict{Topic: "client", Class: ClassUnknown, Href: "#client", Prov: prov,
				Text: "The client's files give nothing the engines' counters can be compared with (no per-request phases, or none over the recording)."}
		}
		return &Verdict{Topic: "client", Class: ClassOK, Href: "#client", Prov: prov,
			Text: fmt.Sprintf("The client and the engines agree on %d of %d quantities compared.", agree, compared)}
	}
	var seams []string
	for _, f := range c.Findings {
		seams = append(seams, seamName(f.Seam))
	}
	return &Verdict{Topic: "client", Class: ClassWarn, Href: "#client", Prov: prov,
		Text: fmt.Sprintf("The client and the engines disagree (%d finding(s)); likely seams: %s.", len(c.Findings), strings.Join(uniq(seams), "; "))}
}
