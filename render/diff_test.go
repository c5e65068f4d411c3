package render_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/diff"
	"github.com/llmrec/llmrec/analyze/rate"
	"github.com/llmrec/llmrec/render"
	"github.com/llmrec/llmrec/render/browsertest"
)

// sampleDiff is a comparison as package diff returns it, written out by
// hand: rendering computes nothing, so any numbers will do. Its target,
// phase and seam texts come from n.
func sampleDiff(n names, targets int) *diff.Report {
	rep := &diff.Report{Schema: diff.Schema, Generator: "llmrec test",
		Settings: diff.Settings{Alpha: 0.05, Conf: 0.95, Thresholds: diff.Thresholds{Default: 0.05, By: map[string]float64{"ttft_p99": 0.1}},
			Match: diff.MatchName, Samples: "blocks", Rule: diff.Rule},
		Baseline:  diff.SideInfo{Dirs: []string{"runs/main"}, Repeats: 1, Targets: []string{n.Target}},
		Candidate: diff.SideInfo{Dirs: []string{"runs/" + n.Config}, Repeats: 1, Targets: []string{n.Target}},
		Seams: []diff.Seam{
			{Kind: diff.SeamVersion, Target: n.Target, Baseline: "0.10.1.1", Candidate: n.Engine, Blocks: true, Detail: n.Target + ": engine version 0.10.1.1 on the baseline, " + n.Engine + " on the candidate"},
			{Kind: diff.SeamIncidents, Target: n.Target, Phase: "steady 1", Baseline: "none", Candidate: "1 restart", Detail: "an incident: " + n.Label},
		},
		NotCompared: []string{"ITL p50 on " + n.Target + ", steady 1: null on both sides (not_exported)"},
	}
	verdicts := []string{diff.Worse, diff.Better, diff.Same, diff.Unlike, diff.Insufficient}
	for k := range targets {
		target := fmt.Sprintf("%s-%d", n.Target, k)
		for i, q := range diff.Quantities {
			v := verdicts[(i+k)%len(verdicts)]
			base := 100 + float64(i)
			ch := -0.1 + 0.02*float64(i%7)
			r := diff.Row{Phase: "steady 1", Target: target, CandTarget: target, Quantity: q.Key, Label: q.Label, Unit: q.Unit, Better: q.Better,
				Baseline:  diff.Value{Figure: rate.Some(base), Source: "computed:Δ" + n.Series + "/Δt", N: 8, Median: rate.Some(base), Lo: rate.Some(base * 0.98), Hi: rate.Some(base * 1.01)},
				Candidate: diff.Value{Figure: rate.Some(base * (1 + ch)), Source: "computed:Δ" + n.Series + "/Δt", N: 8, Median: rate.Some(base * (1 + ch)), Lo: rate.Some(base * (1 + ch) * 0.99), Hi: rate.Some(base * (1 + ch) * 1.02)},
				Change:    rate.Some(ch), ChangeLo: rate.Some(ch - 0.01), ChangeHi: rate.Some(ch + 0.01), P: rate.Some(0.0011),
				Method: "Mann-Whitney U", Samples: "blocks", Threshold: 0.05, Verdict: v, Why: "why: " + n.Label, Notes: []string{"note: " + n.Model}}
			if v == diff.Insufficient {
				r.Baseline.Median, r.Change, r.ChangeLo, r.ChangeHi, r.P = rate.Num{}, rate.Num{}, rate.Num{}, rate.Num{}, rate.Num{}
				if i%2 == 0 {
					r.NeedSeconds = 50 // a side's phase too short for blocks
				}
			}
			// A ratio compared in points carries its shift.
			if q.Points > 0 && r.Change.Valid {
				r.Shift, r.ShiftLo, r.ShiftHi = rate.Some(ch/10), rate.Some(ch/10-0.002), rate.Some(ch/10+0.002)
			}
			rep.Rows = append(rep.Rows, r)
			if i < 3 {
				c := diff.Chart{Phase: "steady 1", Target: target, CandTarget: target, Quantity: q, Verdict: v, Change: r.Change,
					BaselineIncidents:  []diff.Span{},
					CandidateIncidents: []diff.Span{{From: 10, To: 14, Label: "candidate: restart: " + n.Label}}}
				for s := range 60 {
					cell := rate.Cell{Value: rate.Some(base + float64(s%5)), Source: n.Series, Window: rate.Some(1)}
					c.Baseline = append(c.Baseline, diff.Point{T: float64(s) + 0.3, Cell: cell})
					cell.Value = rate.Some(base*(1+ch) + float64(s%3))
					if s == 20 {
						cell = rate.Cell{Source: n.Series, Reason: rate.ReasonStale}
					}
					c.Candidate = append(c.Candidate, diff.Point{T: float64(s) + 0.6, Cell: cell})
				}
				rep.Charts = append(rep.Charts, c)
			}
		}
	}
	return rep
}

func diffMarkdown(t *testing.T, rep *diff.Report) string {
	t.Helper()
	var b strings.Builder
	if err := render.DiffMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// diffVisibleLines counts the lines GitHub shows before anything is unfolded.
func diffVisibleLines(md string) int {
	n, folded := 0, false
	for _, l := range strings.Split(strings.TrimRight(md, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "<details>"):
			n++ // its summary shows
			folded = true
		case l == "</details>":
			folded = false
		case !folded:
			n++
		}
	}
	return n
}

// The summary for a pull request: the verdict table first, at most 40
// lines visible, the rest folded; every outside string escaped.
func TestDiffMarkdown(t *testing.T) {
	for _, c := range []struct {
		name string
		n    names
		k    int
	}{{"diff.md.golden", plain, 1}, {"diff-hostile.md.golden", hostile, 1}, {"diff-long.md.golden", plain, 8}} {
		md := diffMarkdown(t, sampleDiff(c.n, c.k))
		golden(t, c.name, md)
		if v := diffVisibleLines(md); v > render.MaxDiffVisible {
			t.Errorf("%s: %d visible lines, at most %d", c.name, v, render.MaxDiffVisible)
		}
		if i, j := strings.Index(md, "| phase |"), strings.Index(md, "<summary>Seams"); i < 0 || j < i {
			t.Errorf("%s: the verdict table is not first", c.name)
		}
	}
	md := diffMarkdown(t, sampleDiff(hostile, 1))
	for _, bad := range []string{"<img", "<script", "x](javascript"} {
		if strings.Contains(md, bad) {
			t.Errorf("hostile summary holds %q unescaped", bad)
		}
	}
}

// The terminal table names the seams first and every row's verdict.
func TestDiffText(t *testing.T) {
	var b bytes.Buffer
	if err := render.DiffText(&b, sampleDiff(plain, 1)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if i, j := strings.Index(out, "seams:"), strings.Index(out, "decode tokens/s"); i < 0 || j < i {
		t.Errorf("seams not first:\n%s", out)
	}
	contains(t, "table", out, "! version", " worse\n", " better\n", " unlike\n", " insufficient\n", " no change\n", "-10.0% [-11.0%, -9.0%]", "p=0.001",
		"insufficient: needs a 50 s phase\n", "record phases of at least 50 s", "worse: 5 worse, 4 better, 4 no change, 4 unlike, 4 insufficient (of 21 rows)")
	noEmoji(t, "table", out)
}

// noEmoji fails on any sign of the emoji ranges (and the dingbats and
// symbols an emoji font draws): without such a font they show as boxes.
func noEmoji(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		if r >= 0x1F000 || r >= 0x2600 && r <= 0x27BF || r >= 0x2B00 && r <= 0x2BFF || r == 0xFE0F {
			t.Errorf("%s holds %q (U+%04X) at byte %d: %q", what, r, r, i, s[max(0, i-40):min(len(s), i+40)])
			return
		}
	}
}

// The page and the summary open with the verdict: a banner in a word and
// the counts in words, its class the worst verdict's (worse: fail, even
// with better rows and no seam); the worse and better rows first with
// their change, then the seams; no emoji anywhere.
func TestDiffOpensWithVerdict(t *testing.T) {
	rep := sampleDiff(plain, 1)
	page, err := render.DiffReport(rep)
	if err != nil {
		t.Fatal(err)
	}
	if b := page.Banner; b == nil || b.Topic != "worse" || b.Class != render.ClassFail || b.Text != "5 worse, 4 better, 4 no change, 4 unlike, 4 insufficient (of 21 rows)" {
		t.Errorf("banner %+v, want worse, fail, the counts in words", page.Banner)
	}
	if n := len(page.Answer.Rows); n != 9 {
		t.Fatalf("the answer holds %d rows, want the 5 worse and 4 better", n)
	}
	for i, row := range page.Answer.Rows {
		want := map[bool]string{true: "worse", false: "better"}[i < 5]
		if v := row[len(row)-1]; v.Text != want || !v.Badge || row[5].Text == "—" {
			t.Errorf("answer row %d: verdict %+v, change %q; want %s as a badge, with the change", i, v, row[5].Text, want)
		}
	}
	if page.Verdicts[0].Topic != "phase length" || !strings.Contains(page.Verdicts[0].Text, "at least 50 s") {
		t.Errorf("first strip line %+v, want the phase length insufficient rows need", page.Verdicts[0])
	}
	// Only better and no change: the banner is green; an insufficient row
	// makes it yellow; no row at all says so.
	for _, c := range []struct {
		keep        []string
		word, class string
	}{
		{[]string{diff.Better, diff.Same}, "better", render.ClassOK},
		{[]string{diff.Same}, "no change", render.ClassOK},
		{[]string{diff.Same, diff.Insufficient, diff.Better}, "insufficient", render.ClassWarn},
		{[]string{diff.Same, diff.Unlike, diff.Insufficient}, "unlike", render.ClassWarn},
		{nil, "nothing compared", render.ClassUnknown},
	} {
		r := sampleDiff(plain, 1)
		r.Seams = nil
		r.Rows = slices.DeleteFunc(r.Rows, func(x diff.Row) bool { return !slices.Contains(c.keep, x.Verdict) })
		p, err := render.DiffReport(r)
		if err != nil {
			t.Fatal(err)
		}
		if p.Banner.Topic != c.word || p.Banner.Class != c.class {
			t.Errorf("rows %v: banner %q %q, want %q %q", c.keep, p.Banner.Topic, p.Banner.Class, c.word, c.class)
		}
	}
	// A blocking seam (here a version) keeps rows of no change from green.
	r := sampleDiff(plain, 1)
	r.Rows = slices.DeleteFunc(r.Rows, func(x diff.Row) bool { return x.Verdict != diff.Same })
	if p, err := render.DiffReport(r); err != nil || p.Banner.Topic != "no change" || p.Banner.Class != render.ClassWarn {
		t.Errorf("no change beside a blocking seam: %v %+v, want no change, warn", err, p.Banner)
	}
	md := diffMarkdown(t, rep)
	if !strings.HasPrefix(md, "## llmrec diff\n\n**Verdict: worse.** 5 worse, 4 better, 4 no change, 4 unlike, 4 insufficient (of 21 rows)\n") {
		t.Errorf("summary does not open with the verdict:\n%s", md[:min(len(md), 300)])
	}
	if i, j, k := strings.Index(md, "| worse |"), strings.Index(md, "| better |"), strings.Index(md, "blocking seam"); i < 0 || j < i || k < j {
		t.Errorf("summary: worse at %d, better at %d, the seams at %d; want them in that order", i, j, k)
	}
	noEmoji(t, "summary", md)
	html, err := os.ReadFile(writeDiffPage(t, rep))
	if err != nil {
		t.Fatal(err)
	}
	noEmoji(t, "page", withoutECharts(t, string(html)))
}

func writeDiffPage(t *testing.T, rep *diff.Report) string {
	t.Helper()
	page, err := render.DiffReport(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "diff.html")
	var b bytes.Buffer
	if err := render.HTML(&b, page); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The diff page loads offline, draws every chart (baseline and candidate
// overlaid on the phase's own axis, incidents marked), and hostile labels
// show as text and run nothing.
func TestDiffBrowser(t *testing.T) {
	b := browsertest.Start(t)
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		p := loadAndDraw(t, b, writeDiffPage(t, sampleDiff(plain, 2)))
		tip, err := p.HoverChart("chart-0-decode", 1, 12)
		if err != nil {
			t.Fatal(err)
		}
		contains(t, "tooltip", tip, "candidate", "tokens/s", "candidate: restart")
		tip, err = p.HoverChart("chart-0-decode", 0, 40)
		if err != nil {
			t.Fatal(err)
		}
		contains(t, "tooltip", tip, "baseline", "tokens/s", "vllm:generation_tokens_total")
		checkClean(t, p)
	})
	t.Run("hostile", func(t *testing.T) {
		t.Parallel()
		p := loadAndDraw(t, b, writeDiffPage(t, sampleDiff(hostile, 1)))
		type dom struct {
			Imgs  int
			Text  string
			Pwned bool
		}
		d, err := browsertest.Eval[dom](p, `({imgs: document.querySelectorAll('img').length, text: document.body.innerText, pwned: typeof window.__pwned !== 'undefined'})`)
		if err != nil {
			t.Fatal(err)
		}
		if d.Imgs != 0 || d.Pwned {
			t.Errorf("the hostile strings made elements or ran code: %+v", d)
		}
		contains(t, "page text", d.Text, evilHTML+evilFunc)
		checkClean(t, p)
	})
}

// A long comparison draws at most MaxDiffCharts charts, worse rows' first,
// and says so.
func TestDiffPageCharts(t *testing.T) {
	rep := sampleDiff(plain, 30)
	page, err := render.DiffReport(rep)
	if err != nil {
		t.Fatal(err)
	}
	n, worse := 0, 0
	for _, s := range page.Sections {
		for _, c := range s.Charts {
			n++
			if strings.Contains(c.Title, "worse") {
				worse++
			}
		}
	}
	all := 0
	for _, c := range rep.Charts {
		if c.Verdict == diff.Worse {
			all++
		}
	}
	if n != render.MaxDiffCharts || worse != all {
		t.Errorf("%d charts (%d worse of %d), want %d with every worse one", n, worse, all, render.MaxDiffCharts)
	}
	if notes := page.Sections[0].Tables[0].Notes; !strings.Contains(strings.Join(notes, "\n"), "64 of 90 charts drawn") {
		t.Errorf("notes %q", notes)
	}
	// The worse and better rows' charts come first, in their own section,
	// each title naming where and the change; every y axis starts at 0.
	first := page.Sections[1]
	if first.ID != "changed-charts" || len(first.Charts) == 0 {
		t.Fatalf("second section %q with %d charts, want the worse and better rows' charts", first.ID, len(first.Charts))
	}
	for _, c := range first.Charts {
		if !strings.Contains(c.Title, "— worse, ") && !strings.Contains(c.Title, "— better, ") || !strings.Contains(c.Title, "steady 1 · vllm-a-") {
			t.Errorf("chart %q in the first section: want a worse or better row's, naming phase, target and change", c.Title)
		}
	}
	for _, s := range page.Sections[2:] {
		for _, c := range s.Charts {
			if strings.Contains(c.Title, "— worse") || strings.Contains(c.Title, "— better") {
				t.Errorf("chart %q of a worse or better row after the first section", c.Title)
			}
		}
	}
	for _, s := range page.Sections {
		for _, c := range s.Charts {
			js, _ := json.Marshal(c.Option)
			if !strings.Contains(string(js), `"yAxis":{"type":"value"`) || !strings.Contains(string(js), `"min":0`) {
				t.Errorf("chart %q: y axis %s, want it from zero", c.Title, js[strings.Index(string(js), `"yAxis"`):][:120])
				return
			}
		}
	}
}

// Over the budget, the charts of rows with no change are taken a phase at
// a time in turn: 40 load levels of 3 charts each (no row worse or
// better) give every level one chart before any gets a second, so the
// last, highest level is drawn.
func TestDiffChartsEveryLevel(t *testing.T) {
	rep := &diff.Report{Schema: diff.Schema, Settings: diff.Settings{Thresholds: diff.Thresholds{Default: 0.05}}}
	for lv := range 40 {
		for _, q := range diff.Quantities[:3] {
			phase := fmt.Sprintf("concurrency %d", lv+1)
			rep.Rows = append(rep.Rows, diff.Row{Phase: phase, Target: "v", Quantity: q.Key, Label: q.Label, Unit: q.Unit, Verdict: diff.Same})
			rep.Charts = append(rep.Charts, diff.Chart{Phase: phase, Target: "v", CandTarget: "v", Quantity: q, Verdict: diff.Same,
				Baseline: []diff.Point{{T: 0, Cell: rate.Cell{Value: rate.Some(1)}}}, Candidate: []diff.Point{{T: 0, Cell: rate.Cell{Value: rate.Some(1)}}}})
		}
	}
	page, err := render.DiffReport(rep)
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]int{}
	n := 0
	for _, s := range page.Sections[1:] {
		drawn[s.Title] += len(s.Charts)
		n += len(s.Charts)
	}
	if n != render.MaxDiffCharts || len(drawn) != 40 || drawn["concurrency 40 · v"] == 0 {
		t.Errorf("%d charts over %d levels (the last %d), want %d over all 40", n, len(drawn), drawn["concurrency 40 · v"], render.MaxDiffCharts)
	}
}
