package findings

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/engine"
	"github.com/llmrec/llmrec/analyze/rate"
)

func incidentAt(t *testing.T, f *Findings, kind, target string) Incident {
	t.Helper()
	for _, in := range f.Incidents {
		if in.Kind == kind && string(in.Target) == target {
			return in
		}
	}
	t.Fatalf("no %s incident of %q in %v", kind, target, kinds(f))
	return Incident{}
}

// Every kind of incident, each once, in time order: a scrape error before
// the first poll, the recorder not running for both targets (one host
// stall, not two gaps), a target down and back up, a missed tick that left
// no hole, a slow scrape the stale gate refused, a floor refusal with what a
// naive Δ/Δt would have printed, a restart with its process start time, a
// label set leaving, and a target down at the end.
func TestIncidentKinds(t *testing.T) {
	a := newTarget("a", engine.LlamaCpp)
	a.fail(999, "http_error", "HTTP 503 Service Unavailable")
	a.series(1000, 0, rep(10, 9)...)
	a.poll(1020, 200)
	for s := 1021.0; s <= 1032; s++ {
		a.fail(s, "error", "connection refused")
	}
	a.series(1033, 300, rep(10, 10)...)
	for s := 1044.0; s <= 1046; s++ {
		a.fail(s, "http_error", "HTTP 500 Internal Server Error")
	}

	b := newTarget("b", engine.VLLM)
	b.series(1000, 0, rep(0, 9)...)
	b.series(1020, 0, rep(0, 20)...)
	b.fail(1040.99, "missed", "previous scrape still running")
	b.poll(1041.3, 0)
	b.series(1042, 0, rep(0, 28)...)
	for i := range b.ps {
		p := &b.ps[i]
		p.ProcessStart = rate.Some(500)
		switch {
		case p.T == 1050:
			p.Start, p.Rates[Decode] = 1049.6, Value{Window: rate.Some(10), Reason: rate.ReasonStale}
		case p.T == 1055:
			p.Rates[Decode] = Value{Window: rate.Some(0.22), Reason: rate.ReasonFloor}
			p.Rates[Prompt] = Value{Window: rate.Some(0.22), Reason: rate.ReasonFloor}
			p.Totals[Decode] = rate.Some(713)
		case p.T == 1060:
			p.Rates[Decode] = Value{Reason: rate.ReasonReset}
		case p.T == 1065:
			p.DecodeNotes = []string{`absent {engine="1"}`}
		}
		if p.T >= 1056 {
			p.Totals[Decode] = rate.Some(0)
		}
		if p.T >= 1060 {
			p.ProcessStart = rate.Some(1059.5)
		}
	}
	f := run(a, b)
	want := []string{"scrape_error/a", "host_stall/", "target_down/a", "target_up/a", "missed_tick/b", "target_down/a",
		"slow_scrape/b", "refused/b", "restart/b", "label_leave/b"}
	if got := kinds(f); !slices.Equal(got, want) {
		t.Fatalf("incidents\n %v\nwant\n %v", got, want)
	}

	if in := f.Incidents[0]; in.T.V != 999-0.01 || in.Rows["http_error"] != 1 || !strings.Contains(in.Detail, "before the first poll") {
		t.Errorf("scrape error %+v", in)
	}
	hs := incidentAt(t, f, KindHostStall, "")
	if hs.Cause != "not_recording" || hs.Start.V != 1009 || hs.End.V != 1020 || !slices.Equal(hs.Targets, []string{"a", "b"}) ||
		len(hs.Cells) != 2 || hs.Rows != nil {
		t.Errorf("host stall %+v", hs)
	}
	down := f.Incidents[2]
	if down.T.V != 1021-0.01 || down.Rows["error"] != 12 || down.Errors["connection refused"] != 12 {
		t.Errorf("down %+v", down)
	}
	if up := f.Incidents[3]; up.T.V != 1033 || len(up.Cells) != 1 || !strings.Contains(up.Detail, "answered again") {
		t.Errorf("up %+v", up)
	}
	if mt := f.Incidents[4]; mt.Rows["missed"] != 1 || !strings.Contains(mt.Detail, "between two polls") {
		t.Errorf("missed tick %+v", mt)
	}
	if end := f.Incidents[5]; end.Rows["http_error"] != 3 || len(end.Cells) != 0 {
		t.Errorf("down at the end %+v", end)
	}
	slow := incidentAt(t, f, KindSlow, "b")
	if slow.Gate != rate.ReasonStale || slow.T.V != 1050 || !strings.Contains(slow.Counterfactual, "1 of 1 decode value(s) refused") {
		t.Errorf("slow %+v", slow)
	}
	ref := incidentAt(t, f, KindRefused, "b")
	if ref.Gate != rate.ReasonFloor || len(ref.Cells) != 2 || ref.Naive.V != 713 ||
		ref.Counterfactual != "naive 713.0 tok/s; refused: 0.22 s window below the 0.5 s floor" {
		t.Errorf("refused %+v", ref)
	}
	rs := incidentAt(t, f, KindRestart, "b")
	if rs.ProcessStart == nil || rs.ProcessStart.V != 1059.5 || rs.Start.V != 1059 || rs.End.V != 1060 ||
		!strings.Contains(rs.Detail, "process started at") {
		t.Errorf("restart %+v", rs)
	}
	lv := incidentAt(t, f, KindLabelLeave, "b")
	if lv.Labels != `{engine="1"}` || lv.Gate != "" || !strings.Contains(lv.Detail, "left") {
		t.Errorf("label leave %+v", lv)
	}
	// Nulls in JSON: a target of every target, a gate that did not fire.
	js, _ := json.Marshal(hs)
	if !strings.Contains(string(js), `"target":null`) || !strings.Contains(string(js), `"gate":null`) {
		t.Errorf("host stall JSON %s", js)
	}
}

// The recorder's own stalled ticks make a host stall even where a single
// target shows them; a gap of missed ticks and failed scrapes says both;
// refusals of other gates name theirs.
func TestHostStallAndGaps(t *testing.T) {
	a := newTarget("a", engine.VLLM)
	a.series(1000, 0, rep(0, 4)...)
	for s := 1005.0; s < 1010; s++ {
		a.fail(s, "missed", "recorder stalled: tick due 3s ago was not fired")
	}
	a.series(1010, 0, rep(0, 10)...)
	f := run(a)
	hs := incidentAt(t, f, KindHostStall, "a")
	if hs.Cause != "recorder_stalled" || hs.Start.V != 1005-0.01 || hs.End.V != 1010-0.01 || hs.Errors[StalledPrefix] != 5 {
		t.Errorf("host stall %+v", hs)
	}

	b := newTarget("b", engine.VLLM)
	b.series(1000, 0, rep(0, 4)...)
	b.fail(1005, "missed", "previous scrape still running")
	b.fail(1006, "parse_error", "")
	b.series(1007, 0, rep(0, 6)...)
	b.ps[len(b.ps)-1].Rates[Decode] = Value{Reason: rate.ReasonCeiling}
	b.ps[len(b.ps)-3].Rates[Decode] = Value{Reason: rate.ReasonJump}
	f = run(b)
	g := incidentAt(t, f, KindGap, "b")
	if g.Cause != "missed_tick+unparsed" || g.Rows["missed"] != 1 || g.Rows["parse_error"] != 1 {
		t.Errorf("gap %+v", g)
	}
	var gates []string
	for _, in := range f.Incidents {
		if in.Kind == KindRefused {
			gates = append(gates, string(in.Gate)+": "+in.Counterfactual)
		}
	}
	if len(gates) != 2 || !strings.Contains(gates[0], "jump") || !strings.Contains(gates[1], "ceiling (2 × the 10 s span)") {
		t.Errorf("refusals %v", gates)
	}

	// Empty holes on one target only, while another recorded: that target's gap.
	c := newTarget("c", engine.VLLM)
	c.series(1000, 0, rep(0, 20)...)
	d := newTarget("d", engine.VLLM)
	d.series(1000, 0, 0, 0)
	d.series(1010, 0, 0, 0)
	if g := incidentAt(t, run(c, d), KindGap, "d"); g.Cause != "no_rows" || !strings.Contains(g.Detail, "no row at all") {
		t.Errorf("empty gap %+v", g)
	}
}

// The gate texts say why, with the numbers.
func TestGateText(t *testing.T) {
	g := rate.Config{}.WithDefaults()
	for reason, want := range map[string]string{
		rate.ReasonStale: "answered 3 s after its request, above 0.25 of the window",
		rate.ReasonOrder: "not later than the previous one",
		rate.ReasonReset: "the counter reset",
		"other":          "other",
	} {
		if got := gateText(reason, Value{Window: rate.Some(10)}, g, 3); !strings.Contains(got, want) {
			t.Errorf("%s: %q", reason, got)
		}
	}
	if s := rateText(123456); s != "1.235e+05" {
		t.Errorf("rateText %s", s)
	}
	if s := thousands(-1234567); s != "-1,234,567" {
		t.Errorf("thousands %s", s)
	}
	if s := thousands(0.5); s != "0.5" {
		t.Errorf("thousands %s", s)
	}
	var n Name
	if err := json.Unmarshal([]byte(`"x"`), &n); err != nil || n != "x" {
		t.Errorf("name %q %v", n, err)
	}
	if err := json.Unmarshal([]byte(`null`), &n); err != nil || n != "" {
		t.Errorf("name %q %v", n, err)
	}
	if err := json.Unmarshal([]byte(`3`), &n); err == nil {
		t.Error("a number is a name")
	}
}

// A stale refusal names the latency of the sample it rests on: the
// window's base as much as its end.
func TestStaleTextNamesTheBase(t *testing.T) {
	b := newTarget("v", engine.VLLM)
	b.series(1000, 0, rep(100, 10)...)
	b.ps[4].Start = b.ps[4].T - 3
	b.ps[9].Rates[Decode] = Value{Reason: rate.ReasonStale, Window: rate.Some(5)}
	v := newView(b.target(), rate.Config{}.WithDefaults())
	if s := v.refusedText(9, v.gates); !strings.Contains(s, "5 s window was answered 3 s after its request") {
		t.Errorf("%q", s)
	}
	// Without a window, the poll's own latency.
	if l := v.windowLatency(4, rate.Num{}); l != 3 {
		t.Errorf("latency %v", l)
	}
}

// Slow scrapes that overlap may answer out of order: the incident spans
// the earliest to the latest answer, never backwards.
func TestSlowScrapesOutOfOrder(t *testing.T) {
	b := newTarget("v", engine.VLLM)
	b.series(1000, 0, rep(100, 6)...)
	for i, at := range []float64{1003, 1002.5} {
		p := &b.ps[3+i]
		p.T, p.Start = at, at-1.5
	}
	v := newView(b.target(), rate.Config{}.WithDefaults())
	_, incs := v.slowScrapes(v.gates)
	if len(incs) != 1 || incs[0].Start.V != 1002.5 || incs[0].End.V != 1003 {
		t.Fatalf("%+v", incs)
	}
}

// A target whose pages were stored unparsed (too many series) for 16 s
// answered every scrape: its hole is a gap caused by unparsed pages, said
// "up, unparsed", not the target going down (it was "down, failed 16").
func TestUnparsedIsNotDown(t *testing.T) {
	u := newTarget("u", engine.VLLM)
	u.series(1000, 0, rep(0, 4)...)
	for s := 1004.0; s < 1020; s++ {
		u.fail(s, "parse_error", "")
	}
	u.series(1020, 0, rep(0, 4)...)
	f := run(u)
	for _, in := range f.Incidents {
		if in.Kind == KindDown || in.Kind == KindUp {
			t.Errorf("%s: %s", in.Kind, in.Detail)
		}
	}
	g := incidentAt(t, f, KindGap, "u")
	if g.Cause != CauseUnparsed || g.Rows["parse_error"] != 16 || !strings.Contains(g.Detail, "up, unparsed") {
		t.Errorf("gap %+v", g)
	}
}
