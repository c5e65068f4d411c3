package client

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmrec/llmrec/record/redact"
)

// seeds are small made-up inputs of every format, and near misses.
var seeds = []string{
	`{"metadata":{"timestamp_ns":1759522419154829652,"credit_phase":"profiling"},"metrics":{"error_request_count":{"value":1,"unit":"requests"}},"error":{"code":499,"type":"RequestCancellationError","message":"cancelled"}}`,
	`{"metadata":{"timestamp_ns":1759522419154829652,"credit_phase":"profiling"},"metrics":{"ttft":{"value":464.6,"unit":"ms"},"max_response_timestamp":{"value":1759522428472357876,"unit":"ns"},"output_sequence_length":{"value":247,"unit":"tokens"}},"error":null}`,
	`{"metadata":{"request_start_ns":1762551534797067827,"request_end_ns":1762551538441354976,"benchmark_phase":"warmup","was_cancelled":false},"metrics":{"time_to_first_token":{"value":31.7,"unit":"ms"},"inter_token_latency":{"value":18.1,"unit":"ms"},"input_sequence_length":{"value":100,"unit":"tokens"}},"error":null}`,
	`{"timestamp_ns":1762551530946074466,"dcgm_url":"http://u:p@h:9400/metrics","gpu_index":0,"gpu_uuid":"GPU-1","telemetry_data":{"gpu_power_usage":30.257,"energy_consumption":32.62748095}}`,
	`{"backend":"sglang","request_rate":1.0,"completed":300,"duration":298.3,"median_ttft_ms":85.7}`,
	`{"benchmarks":[{"args":{"strategy":{"type_":"synchronous"}},"start_time":1749157168.18,"end_time":1749157198.17,"request_totals":{"total":2},"requests":{"successful":[{"start_time":1749157168.18,"end_time":1749157168.87,"first_token_time":1749157168.2,"prompt_tokens":257,"output_tokens":128}],"errored":[{"start_time":1749157169.0,"error":"Get http://x?token=1"}],"incomplete":[]}}]}`,
	"benchmarks:\n- start_time: 1749157168.18\n  end_time: 1749157198.17\n  requests:\n    successful:\n    - start_time: 1749157168.18\n      end_time: 1749157168.87\n",
	`{"metadata":{"version":2,"guidellm_version":"0.8"},"benchmarks":[{"config":{"strategy":{"type_":"constant","rate":2}},"start_time":1786678148.25,"end_time":1786678153.27,"scheduler_metrics":{"measure_start_time":1786678148.25,"measure_end_time":1786678153.27,"requests_made":{"total":2}},"requests":{"successful":[],"errored":[],"incomplete":[]}}]}`,
	`{"load_summary":{"count":4,"achieved_rate":2.6},"successes":{"count":3,"latency":{"time_to_first_token":{"median":0.11}}},"failures":{"count":1}}`,
	`{"results_num_completed_requests":104,"results_num_completed_requests_per_min":36.04,"results_ttft_s_mean":3.0,"timestamp":1718209114}`,
	`[{"start_time":0.0,"end_time":1.0,"info":{"input_tokens":100,"response_metrics":{"output_tokens":8,"output_token_times":[0.1,0.2]}},"error":null}]`,
	`[{"error_code":null,"error_msg":"","ttft_s":4.29,"end_to_end_latency_s":12.4,"inter_token_latency_s":0.08,"number_output_tokens":154}]`,
	"start_ms,end_ms,ttft_ms,input_tokens,output_tokens,status,error,phase\n1762551534000,1762551536000,250,100,21,ok,,warmup\n1762551536000,1762551536500,,100,,error,\"Get https://a:b@h/?k=v\",p\n",
	"start,e2e_s\n2025-11-07T21:38:54.5Z,1.5\n",
	`{"start_s":1762551534.1,"ttft_ms":12,"status":"cancelled"}` + "\n\n" + `{"start_s":1762551535.1,"end_s":1762551536.1}`,
	"start_s,end_s\n1762551534.1,1762551533.1\n",
	"request_id,phase,start_unix_ms,end_unix_ms,first_token_unix_ms,status,input_tokens,output_tokens,error\n1,load-4clients,1796399827563,1796399828191,1796399827574,200,48,128,\n2,p,1796399827564,,,503,,,\"Post http://u:p@h/x?key=1\"\n",
	"start_epoch,end_epoch_s,ttft_unix_ms\n1762551534.1,1762551535.1,20\n",
	"start_s,end_s,phase\n1762551534.1,9200000000,a\n1762551535.1,1762551536.1,a\n",
	"start_s,e2e_s,ttft_s\n1762551534.1,1.79e308,1e300\n",
	"",
	"[]",
	`{"foo":1}`,
}

// sharedSeeds are the shared real client files, when present.
func sharedSeeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(sharedDir, "*", "*", "*"))
	more, _ := filepath.Glob(filepath.Join(sharedDir, "*", "*"))
	// The real runs' per-request CSVs (start_unix_ms, …).
	runs, _ := filepath.Glob(filepath.Join(sharedDir, "..", "real-runs", "*", "*", "requests.csv"))
	for _, p := range slices.Concat(paths, more, runs) {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Size() > 1<<20 || strings.HasSuffix(p, ".md") {
			continue
		}
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data, uint8(0))
		}
	}
}

// FuzzRead reads anything through detection or a forced format: it never
// panics; an error comes alone; a read's requests are well formed (a
// status, finite times, an end not before the start, error text that
// redacting leaves as it is); reading twice reads the same and encodes
// as JSON (no value that is not finite); and the phases, at most
// MaxPhases, and figures of any read compute without NaN.
func FuzzRead(f *testing.F) {
	for _, s := range seeds {
		for k := range uint8(len(formats) + 1) {
			f.Add([]byte(s), k)
		}
	}
	sharedSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		opt := Options{}
		if int(k) <= len(formats) && k > 0 {
			opt.Format = formats[k-1]
		}
		if k%3 == 1 {
			opt.Anchor = &Anchor{Mono: 0, Epoch: 1.8e9}
		}
		run, err := Read(data, "fuzz", opt)
		if err != nil {
			if run != nil {
				t.Fatal("a run beside an error")
			}
			if !strings.HasPrefix(err.Error(), "client: ") {
				t.Fatalf("error %q not prefixed", err)
			}
			return
		}
		for _, r := range run.Requests {
			switch r.Status {
			case StatusOK, StatusError, StatusCancelled, StatusIncomplete:
			default:
				t.Fatalf("line %d: status %q", r.Line, r.Status)
			}
			if math.IsNaN(r.Start) || math.IsInf(r.Start, 0) || r.End.Valid && (math.IsNaN(r.End.V) || r.End.V < r.Start) {
				t.Fatalf("line %d: %v to %v", r.Line, r.Start, r.End)
			}
			if redact.Text(r.Error) != r.Error {
				t.Fatalf("line %d: error text %q not redacted", r.Line, r.Error)
			}
		}
		again, err := Read(data, "fuzz", opt)
		if err != nil {
			t.Fatalf("second read failed: %v", err)
		}
		// A read holds only finite numbers: it encodes (render writes it).
		a, err := json.Marshal(run)
		if err != nil {
			t.Fatalf("the read does not encode: %v", err)
		}
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("two reads differ:\n%s\n%s", a, b)
		}
		ps, _ := Phases(run)
		if len(ps) > MaxPhases {
			t.Fatalf("%d phases", len(ps))
		}
		for _, fs := range Measure(run, ps) {
			for _, g := range fs.Figures {
				if g.Value.Valid && (math.IsNaN(g.Value.V) || math.IsInf(g.Value.V, 0)) {
					t.Fatalf("%s %s = %v", fs.Phase.Name, g.Name, g.Value.V)
				}
			}
		}
	})
}
