package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A target on a closed loopback port never answers: the report says so in
// words (its attempts and its error), its incident has a clock time rather
// than an offset from time zero, and the gates are not "ok" when they
// judged nothing.
func TestReportOfTargetThatNeverAnswered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	url := "http://" + freeAddr(t) + "/metrics"
	_, _, err := runCLI("record", "--out", dir, "--duration", "2s", "--interval", "250ms", "--target", "dead="+url)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 target(s) never answered") {
		t.Fatalf("record of a closed port: %v", err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	if _, stderr, err := runCLI("render", dir, "-o", out); err != nil {
		t.Fatalf("render: %v\n%s", err, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !regexp.MustCompile(`never answered: [1-9]\d* attempt\(s\); error \(×\d+\): [^<]*connection refused`).MatchString(page) {
		t.Error("the report does not say the target never answered, with its attempts and its error")
	}
	if m := regexp.MustCompile(`&#43;\d{3,}:\d\d:\d\d|\+\d{3,}:\d\d:\d\d`).FindString(page); m != "" {
		t.Errorf("an incident at %s: an offset from time zero", m)
	}
	if strings.Contains(page, `<li class="verdict ok">`) && strings.Contains(page, "passed the estimator&#39;s gates") {
		t.Error(`the gates say "ok" although no value reached them`)
	}
	if !strings.Contains(page, "No target answered a scrape: there was no value for the gates to judge.") {
		t.Error("the gates verdict does not say that nothing reached them")
	}
}
