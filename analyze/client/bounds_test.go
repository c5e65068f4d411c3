package client

import (
	"fmt"
	"strings"
	"testing"
)

// requestsCSV is a generic CSV of n one-second requests labelled phase,
// one every second from t0, each 100 output tokens.
func requestsCSV(t0 float64, n int, phase string) *strings.Builder {
	var b strings.Builder
	b.WriteString("start_s,end_s,output_tokens,phase\n")
	for i := range n {
		s := t0 + float64(i)
		fmt.Fprintf(&b, "%.3f,%.3f,100,%s\n", s, s+1, phase)
	}
	return &b
}

// A straggler, one request last seen an hour after the run (or in 2262),
// is left out and counted; it no longer stretches its phase, whose output
// tokens/s stays that of the run (100 tokens a second), not near 0.
func TestStragglerLeftOut(t *testing.T) {
	const t0 = 1.7e9
	for name, end := range map[string]float64{"an hour later": t0 + 120 + 3600, "in 2262": 9.2e9} {
		b := requestsCSV(t0, 120, "load")
		fmt.Fprintf(b, "%.3f,%.3f,100,load\n", t0+60.5, end)
		run, err := Read([]byte(b.String()), "f.csv", Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(run.Requests) != 120 || len(run.Meta.Skipped) != 1 || run.Meta.Skipped[0].Lines[0] != 122 ||
			!strings.Contains(run.Meta.Skipped[0].Reason, "outside the client's own run") {
			t.Errorf("%s: %d requests, skipped %+v", name, len(run.Requests), run.Meta.Skipped)
		}
		ps, _ := Phases(run)
		if len(ps) != 1 || ps[0].End-ps[0].Start > 121 {
			t.Fatalf("%s: phases %+v", name, ps)
		}
		f := Measure(run, ps)[0]
		if g, _ := f.Get(FOutputTokensPS); !g.Value.Valid || g.Value.V < 95 || g.Value.V > 105 {
			t.Errorf("%s: output tokens/s %+v", name, g)
		}
	}
	// A long request within the margin (60 s, or a tenth of the run) stays.
	b := requestsCSV(t0, 120, "load")
	fmt.Fprintf(b, "%.3f,%.3f,100,load\n", t0+60.5, t0+119+50)
	if run, err := Read([]byte(b.String()), "f.csv", Options{}); err != nil || len(run.Requests) != 121 {
		t.Errorf("a 110 s request: %v", err)
	}
}

// A value that is not finite, or a time or count no request can have, is
// refused with the file and line; so are phase labels past their bounds.
func TestClientValuesBounded(t *testing.T) {
	for _, c := range []struct{ name, extra, want string }{
		{"e2e near the largest float", "1700000010,,1.79e308,100,x", "f.csv:4: end 1.79e+308 is not a Unix time"},
		{"ttft near the largest float", "1700000010,1700000011,,1.79e308,x", "f.csv:4: first token 1.79e+308 is not a Unix time"},
		{"tokens past a trillion", "1700000010,1700000011,,1e300,x", "f.csv:4: output tokens 1e+300"},
		{"a 201-byte label", "1700000010,1700000011,,100," + strings.Repeat("p", 201), "f.csv:4: a phase label of 201 bytes"},
	} {
		data := "start_s,end_s,e2e_s,ttft_s,phase\n1700000000,1700000001,,0.1,x\n1700000001,1700000002,,0.1,x\n" + c.extra + "\n"
		data = strings.Replace(data, "ttft_s", "output_tokens", 1)
		if strings.Contains(c.name, "ttft") {
			data = strings.Replace(data, "output_tokens", "ttft_s", 1)
		}
		_, err := Read([]byte(data), "f.csv", Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	var b strings.Builder
	b.WriteString("start_s,end_s,phase\n")
	for i := range MaxPhases + 1 {
		fmt.Fprintf(&b, "%d,%d,p%d\n", 1700000000+i, 1700000001+i, i)
	}
	if _, err := Read([]byte(b.String()), "f.csv", Options{}); err == nil || !strings.Contains(err.Error(), "f.csv:1002: more than 1000 distinct phase labels") {
		t.Errorf("1001 labels: %v", err)
	}
}
