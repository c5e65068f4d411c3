package analyze

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/record/sim"
)

// A record far outside the recording (one started an hour before its
// first poll, inside the client's own span) is left out of the client's
// phases and figures and named in the file's skipped records: the
// "profiling" phase starts with the load, not an hour before, and its
// output tokens/s is the load's. The run given is not changed.
func TestClientRecordOutsideRecording(t *testing.T) {
	path := clientFile(t, load{})
	t0 := float64(sim.DefaultStart.UnixNano())/1e9 + clientLoadAt
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"start":%.6f,"end":%.6f,"ttft_s":0.1,"input_tokens":400,"output_tokens":200,"status":"ok","phase":"profiling"}`+"\n", t0-3600, t0+1)
	f.Close()
	run, err := client.ReadFile(path, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(run.Requests)
	res, err := Analyze(Options{Dirs: []string{clientRecording(t)}, SkipPolls: true, Clients: []*client.Run{run}})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Requests) != n || len(run.Meta.Skipped) != 0 {
		t.Errorf("the run given changed: %d requests of %d, skipped %v", len(run.Requests), n, run.Meta.Skipped)
	}
	in := res.ClientInputs[0]
	if len(in.Run.Requests) != n-1 || len(in.Run.Meta.Skipped) != 1 || !strings.Contains(in.Run.Meta.Skipped[0].Reason, "outside the recording") {
		t.Errorf("%d requests, skipped %+v", len(in.Run.Requests), in.Run.Meta.Skipped)
	}
	if len(in.Phases) != 1 || in.Phases[0].Start < t0-1 {
		t.Fatalf("phases %+v", in.Phases)
	}
	fs := client.Measure(in.Run, in.Phases)[0]
	if g, _ := fs.Get(client.FOutputTokensPS); !g.Value.Valid || g.Value.V < 1800 || g.Value.V > 2100 {
		t.Errorf("output tokens/s %+v", g)
	}
}
