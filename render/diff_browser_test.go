package render_test

import (
	"strings"
	"testing"

	"github.com/llmrec/llmrec/render/browsertest"
)

// In headless Chromium without an emoji font, the diff page's first
// 1400×900 screen shows the verdict banner, red (the worst verdict is
// worse), above the worse rows with their change, and every worse row is
// on that screen; the seams come after; the page holds no emoji.
func TestDiffFirstScreen(t *testing.T) {
	b := browsertest.Start(t)
	p := b.Open(t, writeDiffPage(t, sampleDiff(plain, 1)))
	defer checkClean(t, p)
	if err := p.SetViewport(1400, 900); err != nil {
		t.Fatal(err)
	}
	viewshot(t, p, "diff")
	type row struct {
		Verdict, Change string
		Bottom          float64
	}
	type screen struct {
		Banner, Badge, BannerColour, FailColour, OKColour string
		BannerTop, BannerBottom, AnswerTop, SeamsTop      float64
		Rows                                              []row
		Text                                              string
	}
	s, err := browsertest.Eval[screen](p, `(function () {
		window.scrollTo(0, 0);
		var b = document.querySelector("#banner"), a = document.querySelector("#answer table"), v = document.querySelector("section.verdicts");
		var probe = function (cls) { var e = document.createElement("div"); e.className = "verdict " + cls; document.body.appendChild(e);
			var c = getComputedStyle(e).borderLeftColor; e.remove(); return c; };
		var out = {Banner: b ? b.innerText : "", Badge: b ? b.querySelector(".badge").innerText : "",
			BannerColour: b ? getComputedStyle(b).borderLeftColor : "", FailColour: probe("fail"), OKColour: probe("ok"),
			BannerTop: b ? b.getBoundingClientRect().top : -1, BannerBottom: b ? b.getBoundingClientRect().bottom : -1,
			AnswerTop: a ? a.getBoundingClientRect().top : -1, SeamsTop: v ? v.getBoundingClientRect().top : -1,
			Rows: [], Text: document.body.innerText};
		if (a) a.querySelectorAll("tbody tr").forEach(function (tr) {
			var td = tr.querySelectorAll("td");
			out.Rows.push({Verdict: td[td.length - 1].innerText, Change: td[5].innerText, Bottom: tr.getBoundingClientRect().bottom});
		});
		return out;
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Banner, "5 worse, 4 better, 4 no change, 4 unlike, 4 insufficient") || !strings.EqualFold(s.Badge, "worse") {
		t.Errorf("banner %q (badge %q), want the worse verdict and the counts in words", s.Banner, s.Badge)
	}
	if s.BannerColour == "" || s.BannerColour != s.FailColour || s.BannerColour == s.OKColour {
		t.Errorf("banner colour %q, want the fail colour %q (not ok's %q)", s.BannerColour, s.FailColour, s.OKColour)
	}
	if s.BannerTop < 0 || s.BannerBottom > 900 || s.AnswerTop < s.BannerBottom || s.SeamsTop < s.AnswerTop {
		t.Errorf("banner %g–%g, answer from %g, seams from %g: want banner, then the rows, then the seams, the banner on the first screen",
			s.BannerTop, s.BannerBottom, s.AnswerTop, s.SeamsTop)
	}
	worse := 0
	for _, r := range s.Rows {
		if strings.EqualFold(r.Verdict, "worse") {
			worse++
			if r.Bottom > 900 || r.Change == "" || r.Change == "—" {
				t.Errorf("worse row %+v: want it on the first screen with its change", r)
			}
		}
	}
	if worse != 5 || !strings.EqualFold(s.Rows[0].Verdict, "worse") {
		t.Errorf("%d worse rows in the first table (first %+v), want the 5 first", worse, s.Rows)
	}
	noEmoji(t, "page text", s.Text)
}
