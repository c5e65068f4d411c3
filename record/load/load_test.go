package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrec/llmrec/analyze/client"
	"github.com/llmrec/llmrec/record/sim"
)

// serve starts one simulated vLLM engine with the given serve table and
// returns its base URL.
func serve(t *testing.T, table string) (string, *sim.Server) {
	t.Helper()
	sc, err := sim.ParseScenario([]byte("[[engine]]\nname = \"v\"\nformat = \"vllm\"\n  [engine.serve]\n"+table), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Serve(context.Background(), sc, sim.Options{NoMemoryLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Targets()[0].URL, srv
}

// keys are a JSON object's keys in order.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

type line struct {
	Metadata json.RawMessage `json:"metadata"`
	Metrics  json.RawMessage `json:"metrics"`
	Error    json.RawMessage `json:"error"`
}

// The driver's AIPerf records have the metadata fields and the metrics of
// a real AIPerf 0.3 profile_export.jsonl, in its order, with the same
// units; analyze/client reads them as AIPerf 0.3 with every figure.
func TestAIPerfRecordsMatchTheRealSchema(t *testing.T) {
	real := filepath.Join("..", "..", "..", "shared", "clients", "aiperf", "plot-fixture-qwen_concurrency4", "profile_export.jsonl")
	data, err := os.ReadFile(real)
	if err != nil {
		t.Skipf("the shared AIPerf fixture is absent (%v): nothing to compare the schema with", err)
	}
	var want line
	if err := json.Unmarshal(bytes.SplitN(data, []byte("\n"), 2)[0], &want); err != nil {
		t.Fatal(err)
	}
	url, _ := serve(t, `step = "1ms"`)
	var out bytes.Buffer
	sum, err := Run(context.Background(), Options{URL: url, Stages: []Stage{{2, 300 * time.Millisecond}}, PromptTokens: 20,
		OutputTokens: 10, Grace: time.Second, Format: FormatAIPerf, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Phases) != 1 || sum.Phases[0].Name != PhaseProfiling || sum.Phases[0].OK == 0 || sum.Phases[0].OK != sum.Phases[0].Requests {
		t.Fatalf("summary %+v", sum.Phases)
	}
	var got line
	if err := json.Unmarshal(bytes.SplitN(out.Bytes(), []byte("\n"), 2)[0], &got); err != nil {
		t.Fatal(err)
	}
	if g, w := keys(t, got.Metadata), keys(t, want.Metadata); !slices.Equal(g, w) {
		t.Errorf("metadata keys\n got %v\nwant %v", g, w)
	}
	if g, w := keys(t, got.Metrics), keys(t, want.Metrics); !slices.Equal(g, w) {
		t.Errorf("metric names\n got %v\nwant %v", g, w)
	}
	var gm, wm map[string]struct{ Unit string }
	json.Unmarshal(got.Metrics, &gm)
	json.Unmarshal(want.Metrics, &wm)
	for k, w := range wm {
		if gm[k].Unit != w.Unit {
			t.Errorf("metric %s: unit %q, want %q", k, gm[k].Unit, w.Unit)
		}
	}
	run, err := client.Read(out.Bytes(), "profile_export.jsonl", client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Meta.Format != client.FormatAIPerf || run.Meta.Schema != client.AIPerf03 || len(run.Requests) != sum.Phases[0].Requests {
		t.Fatalf("read as %s %s, %d requests", run.Meta.Format, run.Meta.Schema, len(run.Requests))
	}
	for _, r := range run.Requests {
		if r.Status != client.StatusOK || !r.TTFT.Valid || !r.ITL.Valid || r.OutputTokens.V != 10 || r.InputTokens.V != 20 ||
			r.Phase != PhaseProfiling || !r.End.Valid || r.End.V < r.FirstToken.V {
			t.Errorf("line %d: %+v", r.Line, r)
		}
	}
}

// A request still running when its phase and grace end is cancelled and
// recorded as AIPerf records a cancellation (was_cancelled, error 499);
// the engine counts it as aborted. In the generic JSONL it is status
// cancelled; analyze/client reads both.
func TestCancelledAtTheGraceEnd(t *testing.T) {
	url, srv := serve(t, `step = "20ms"`)
	for _, format := range []string{FormatAIPerf, FormatJSONL} {
		var out bytes.Buffer
		sum, err := Run(context.Background(), Options{URL: url, Stages: []Stage{{1, 100 * time.Millisecond}}, PromptTokens: 5,
			OutputTokens: 1000, Grace: 50 * time.Millisecond, Format: format, Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		if p := sum.Phases[0]; p.Requests != 1 || p.Cancelled != 1 {
			t.Fatalf("%s: %+v", format, p)
		}
		run, err := client.Read(out.Bytes(), "records.jsonl", client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := run.Requests[0]
		if r.Status != client.StatusCancelled || !r.End.Valid || !strings.Contains(r.Error, "cancelled after 0.1") {
			t.Errorf("%s: %+v", format, r)
		}
		if format == FormatJSONL && !strings.HasPrefix(r.Target, url+"/v1/") {
			t.Errorf("the generic record names the engine %q, not the one sent to (%s)", r.Target, url)
		}
		if format == FormatAIPerf {
			var l struct {
				Metadata struct {
					WasCancelled bool   `json:"was_cancelled"`
					Cancel       *int64 `json:"cancellation_time_ns"`
					End          int64  `json:"request_end_ns"`
				} `json:"metadata"`
				Error struct {
					Code int    `json:"code"`
					Type string `json:"type"`
				} `json:"error"`
			}
			json.Unmarshal(out.Bytes(), &l)
			if !l.Metadata.WasCancelled || l.Metadata.Cancel == nil || *l.Metadata.Cancel != l.Metadata.End ||
				l.Error.Code != 499 || l.Error.Type != "RequestCancellationError" {
				t.Errorf("aiperf cancellation record %s", out.String())
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := srv.Engines()[0].Truth(time.Since(srv.Start())).Sets[0].Counters
		if c.RequestsAbort == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine counted %v aborts, want 2", c.RequestsAbort)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Errors are records, never lost: a 404 from the server (a model it does
// not serve) is an error record with the status and the server's message.
// A warmup and two stages are three phases, named in the records.
func TestErrorRecordsAndPhaseNames(t *testing.T) {
	url, _ := serve(t, `step = "1ms"`)
	var out bytes.Buffer
	sum, err := Run(context.Background(), Options{URL: url + "/v1/completions", Warmup: 50 * time.Millisecond,
		Stages: []Stage{{1, 50 * time.Millisecond}, {1, 50 * time.Millisecond}}, PromptTokens: 5, OutputTokens: 2,
		Model: "nope", Grace: time.Second, Format: FormatJSONL, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range sum.Phases {
		names = append(names, p.Name)
		if p.Errors == 0 || p.Errors != p.Requests {
			t.Errorf("%+v", p)
		}
	}
	if strings.Join(names, ",") != "warmup,concurrency 1,concurrency 1 (2)" {
		t.Errorf("phases %v", names)
	}
	sc := bufio.NewScanner(&out)
	sc.Scan()
	var rec map[string]any
	json.Unmarshal(sc.Bytes(), &rec)
	if rec["status"] != "error" || !strings.Contains(rec["error"].(string), "404 HTTPError") ||
		!strings.Contains(rec["error"].(string), "does not exist") || rec["phase"] != "warmup" {
		t.Errorf("error record %v", rec)
	}
}

func TestOptionErrors(t *testing.T) {
	ok := Options{URL: "http://127.0.0.1:1", Stages: []Stage{{1, time.Second}}, PromptTokens: 1, OutputTokens: 1,
		Format: FormatAIPerf, Out: &bytes.Buffer{}}
	for _, tc := range []struct {
		edit func(o *Options)
		want string
	}{
		{func(o *Options) { o.URL = "http://10.1.2.3:8000" }, "not a loopback address"},
		{func(o *Options) { o.URL = "https://127.0.0.1:8000" }, "want http://"},
		{func(o *Options) { o.URL = "http://user:secret@127.0.0.1:8000/other" }, "want a base URL"},
		{func(o *Options) { o.Format = "csv" }, `format: "csv"`},
		{func(o *Options) { o.Stages = nil }, "stages: none"},
		{func(o *Options) { o.Stages = []Stage{{0, time.Second}} }, "stage 1"},
		{func(o *Options) { o.OutputTokens = 0 }, "output tokens"},
	} {
		o := ok
		tc.edit(&o)
		err := o.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the password reached the error: %v", err)
		}
	}
	if err := ok.Check(); err != nil {
		t.Error(err)
	}
	// --allow-remote: any host, http or https; still a URL with a host.
	for raw, want := range map[string]string{
		"http://gpu-node-3:8000": "", "https://10.1.2.3:8000/v1/chat/completions": "", "http://[2001:db8::1]:8000": "",
		"ftp://gpu-node-3:8000": "want http(s)://HOST:PORT", "http:///v1": "want http(s)://HOST:PORT",
	} {
		o := ok
		o.URL, o.AllowRemote = raw, true
		err := o.Check()
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("allow remote %s: %v, want %q", raw, err, want)
		}
	}
	if o := (Options{URL: "http://user:pw@gpu-node-3:8000/v1"}); o.Host() != "gpu-node-3:8000" {
		t.Errorf("Host() = %q", o.Host())
	}
	for in, want := range map[string]string{"1:30s,4:1m": "", "4": "want CONCURRENCY:DURATION", "0:1s": "whole number >= 1", "2:-1s": "positive duration"} {
		st, err := ParseStages(in)
		if want == "" {
			if err != nil || len(st) != 2 || st[1] != (Stage{4, time.Minute}) {
				t.Errorf("%s: %v %v", in, st, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
