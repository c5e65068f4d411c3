package analyze

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/analyze/clientcmp"
	"github.com/llmrec/llmrec/record/sim"
)

// readClientText writes text to a new file named name and reads it as a
// client file.
func readClientText(t *testing.T, name, text string) *client.Run {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := client.ReadFile(p, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// A summary-only file (inference-perf's lifecycle metrics: no times) is
// placed over the recording's busy span and compared there, every figure
// and the side saying it is aligned by run bounds only; a summary that
// counts twice the engine's tokens at its request rate is the chunks seam.
func TestClientSummaryByRunBounds(t *testing.T) {
	dir := clientRecording(t)
	summary := func(tokens float64) *client.Run {
		return readClientText(t, "stage_0_lifecycle_metrics.json", fmt.Sprintf(
			`{"load_summary":{"count":600},"successes":{"count":600,"throughput":{"output_tokens_per_sec":%g,"requests_per_sec":10},"latency":{"request_latency":{"median":1.69}}},"failures":{"count":0}}`, tokens))
	}
	for _, c := range []struct {
		tokens float64
		agree  string
		seam   string
	}{{2000, clientcmp.Agree, ""}, {4000, clientcmp.Disagree, clientcmp.SeamChunks}} {
		res, err := Analyze(Options{Dirs: []string{dir}, SkipPolls: true, Clients: []*client.Run{summary(c.tokens)}})
		if err != nil {
			t.Fatal(err)
		}
		f := res.Client.Files[0]
		if len(f.Sides) != 1 || !strings.Contains(f.Phases, client.RunBounds) || !strings.Contains(f.Phases, "busy span") {
			t.Fatalf("%g tokens/s: phases %q, sides %+v", c.tokens, f.Phases, f.Sides)
		}
		s := &f.Sides[0]
		t0 := float64(sim.DefaultStart.UnixNano()) / 1e9
		if s.Aligned != client.RunBounds || math.Abs(s.Start-(t0+clientLoadAt)) > 2 || math.Abs(s.End-(t0+clientLoadEnd)) > 2 {
			t.Errorf("side %q over [%.1f, %.1f] s, want the load's [%g, %g]", s.Aligned, s.Start-t0, s.End-t0, clientLoadAt, clientLoadEnd)
		}
		if a := agreementOf(s, client.FOutputTokensPS); a != c.agree {
			t.Errorf("%g tokens/s: output %s, want %s", c.tokens, a, c.agree)
		}
		if a := agreementOf(s, client.FRequestsPS); a != clientcmp.Agree {
			t.Errorf("%g tokens/s: requests %s", c.tokens, a)
		}
		for _, r := range s.Rows {
			if r.Client.Value.Valid && !strings.Contains(r.Client.Formula, client.RunBounds) {
				t.Errorf("%s: formula %q", r.Quantity, r.Client.Formula)
			}
		}
		var seams []string
		for _, fd := range res.Client.Findings {
			seams = append(seams, fd.Seam)
		}
		if got := strings.Join(seams, ","); got != c.seam {
			t.Errorf("%g tokens/s: seams %q, want %q", c.tokens, got, c.seam)
		}
		res.Close()
	}
}

// GPU telemetry beside a per-request file: energy per output token is a
// client-only row (the server's is unknown because no engine publishes
// energy, not 0), from DCGM's energy counter where the file has one, else
// from power integrated; both give 300 W × the phase ÷ its tokens.
func TestClientEnergyRow(t *testing.T) {
	run, err := client.ReadFile(clientFile(t, load{}), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := float64(sim.DefaultStart.UnixNano()) / 1e9
	for _, counter := range []bool{true, false} {
		var b strings.Builder
		for s := 0.0; s <= 90; s += 0.5 {
			e := ""
			if counter {
				e = fmt.Sprintf(`,"energy_consumption":%g`, (5e6+300*s)/1e6)
			}
			fmt.Fprintf(&b, `{"timestamp_ns":%d,"gpu_uuid":"GPU-1","dcgm_url":"http://127.0.0.1:9400/metrics","telemetry_data":{"gpu_power_usage":300%s}}`+"\n", int64((t0+s)*1e9), e)
		}
		tel := readClientText(t, "gpu_telemetry_export.jsonl", b.String())
		res, err := Analyze(Options{Dirs: []string{clientRecording(t)}, SkipPolls: true, Clients: []*client.Run{run, tel}})
		if err != nil {
			t.Fatal(err)
		}
		f := res.Client.Files[0]
		if len(f.Sides) != 1 || f.Sides[0].Phase != "profiling" {
			t.Fatalf("sides %+v", f.Sides)
		}
		s := &f.Sides[0]
		var row *clientcmp.Row
		for i := range s.Rows {
			if s.Rows[i].Quantity == client.FEnergyPerToken {
				row = &s.Rows[i]
			}
		}
		if row == nil {
			t.Fatalf("no energy row: %+v", s.Rows)
		}
		tps := 0.0
		for _, r := range s.Rows {
			if r.Quantity == client.FOutputTokensPS {
				tps = r.Client.Value.V
			}
		}
		want := 300 / tps
		how := "power integrated"
		if counter {
			how = "the energy counter"
		}
		if !row.Client.Value.Valid || math.Abs(row.Client.Value.V/want-1) > 1e-6 || !strings.Contains(row.Client.Formula, how) {
			t.Errorf("counter %v: %v J/token, want %v; %s", counter, row.Client.Value, want, row.Client.Formula)
		}
		if row.Server.Value.Valid || row.Server.Reason != clientcmp.NoEnergy || row.Agreement != clientcmp.NotComparable {
			t.Errorf("server side of energy: %+v %s", row.Server, row.Agreement)
		}
		res.Close()
	}
}
