package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveOne serves a scenario of one idle engine with the given serve
// table.
func serveOne(t *testing.T, format, serve string) (*Server, *Engine, string) {
	t.Helper()
	sc, err := ParseScenario([]byte(`
[[engine]]
name = "e"
format = "`+format+`"
  [engine.serve]
`+serve), "serve.toml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, srv.Engines()[0], srv.Targets()[0].URL
}

// streamed is what a client saw of one streamed completion.
type streamed struct {
	chunks int // chunks with a token
	usage  map[string]int
	reason string
	done   bool
	text   string
}

// stream posts a streaming completion and reads its SSE answer.
func stream(t *testing.T, url, body string) streamed {
	t.Helper()
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return streamed{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		return streamed{}
	}
	var out streamed
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Errorf("line %q is not an SSE data line", line)
			continue
		}
		if data == "[DONE]" {
			out.done = true
			continue
		}
		var c struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]int `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Errorf("chunk %q: %v", data, err)
			continue
		}
		if c.Usage != nil {
			out.usage = c.Usage
		}
		for _, ch := range c.Choices {
			out.chunks++
			out.text += ch.Text
			if ch.FinishReason != nil {
				out.reason = *ch.FinishReason
			}
		}
	}
	return out
}

// sample is the value of the sample line starting with name{ or name  in
// body; NaN-free, or the test fails.
func sample(t *testing.T, body, name string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no sample %s in the body", name)
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func prompt(n int) string { return strings.TrimSpace(strings.Repeat("hi ", n)) }

// Three streamed requests into a batch of two: every token, prompt token,
// request, step and histogram observation of the requests served shows in
// /metrics and the truth, and the stream has one chunk per token, the
// usage chunk and [DONE].
func TestCompletionsFollowMetricsVLLM(t *testing.T) {
	srv, e, url := serveOne(t, "vllm", `batch = 2
step = "2ms"
step_per_request = "1ms"`)
	body := fmt.Sprintf(`{"prompt": %q, "max_tokens": 8, "stream": true, "stream_options": {"include_usage": true}}`, prompt(10))
	var wg sync.WaitGroup
	outs := make([]streamed, 3)
	for i := range outs {
		wg.Go(func() { outs[i] = stream(t, url, body) })
	}
	wg.Wait()
	for i, o := range outs {
		if o.chunks != 8 || !o.done || o.reason != "length" || o.usage["completion_tokens"] != 8 || o.usage["prompt_tokens"] != 10 {
			t.Errorf("request %d: %+v", i, o)
		}
		if got := len(strings.Fields(o.text)); got != 8 {
			t.Errorf("request %d: %d words of text, want 8 (a token is a word)", i, got)
		}
	}
	at := time.Since(srv.Start())
	tr := e.Truth(at)
	c := tr.Sets[0].Counters
	if c.GenerationTokens != 24 || c.PromptTokens != 30 || c.Requests != 3 || c.RequestsLength != 3 {
		t.Errorf("counters %+v, want 24 generated, 30 prompt, 3 requests finished by length", c)
	}
	// Three requests into a batch of two take at least 16 steps.
	if c.Steps < 16 {
		t.Errorf("%v steps, want at least 16", c.Steps)
	}
	if tr.Rates.Running != 0 || tr.Rates.Waiting != 0 {
		t.Errorf("gauges after the run: %+v", tr.Rates)
	}
	b := string(e.Render(at))
	for name, want := range map[string]float64{
		"vllm:time_to_first_token_seconds_count":   3,
		"vllm:e2e_request_latency_seconds_count":   3,
		"vllm:request_queue_time_seconds_count":    3,
		"vllm:time_per_output_token_seconds_count": 21,
		"vllm:request_generation_tokens_sum":       24,
		"vllm:request_prompt_tokens_sum":           30,
		"vllm:iteration_tokens_total_sum":          54,
		"vllm:generation_tokens_total":             24,
	} {
		if got := sample(t, b, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got, steps := sample(t, b, "vllm:iteration_tokens_total_count"), c.Steps; got != steps {
		t.Errorf("iteration_tokens_total_count %v, steps %v", got, steps)
	}
	// The third request waited for a place in the batch: its queue time is
	// at least the 8 steps of the first two.
	if sum := sample(t, b, "vllm:request_queue_time_seconds_sum"); sum < 8*0.003 {
		t.Errorf("queue time sum %v s, want at least 24 ms", sum)
	}
	var n int
	for _, ent := range srv.Log() {
		if ent.Completion != nil {
			n++
			if ent.Completion.OutputTokens != 8 || ent.Completion.FirstTokenNs < ent.Completion.EngineNs || ent.Status != 200 {
				t.Errorf("log %+v %+v", ent, ent.Completion)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d completion entries in the log, want 3", n)
	}
}

// A request beyond the batch waits in the engine's queue and the waiting
// gauge shows it; with a front queue of one thread the second request
// waits before the engine instead, and the engine never sees it waiting.
func TestWaitingInEngineOrInFront(t *testing.T) {
	for _, tc := range []struct {
		name, serve string
		front       bool
	}{
		{"engine queue", "batch = 1\nstep = \"5ms\"", false},
		{"front queue", "batch = 4\nstep = \"5ms\"\nfront_threads = 1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, e, url := serveOne(t, "vllm", tc.serve)
			body := fmt.Sprintf(`{"prompt": %q, "max_tokens": 30, "stream": true}`, prompt(4))
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() { stream(t, url, body) })
			}
			maxWaiting, maxRunning := 0, 0
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
		poll:
			for {
				select {
				case <-done:
					break poll
				case <-time.After(2 * time.Millisecond):
				}
				tr := e.Truth(time.Since(srv.Start()))
				maxWaiting, maxRunning = max(maxWaiting, tr.Rates.Waiting), max(maxRunning, tr.Rates.Running)
			}
			var fronts []int64
			for _, ent := range srv.Log() {
				if ent.Completion != nil {
					fronts = append(fronts, ent.Completion.FrontNs)
				}
			}
			if len(fronts) != 2 {
				t.Fatalf("%d completions logged", len(fronts))
			}
			if maxRunning != 1 {
				t.Errorf("most running %d, want 1", maxRunning)
			}
			if tc.front {
				if maxWaiting != 0 {
					t.Errorf("the engine saw %d waiting behind a front queue", maxWaiting)
				}
				// One of the two waited for the thread for about the other's 30 steps.
				if max(fronts[0], fronts[1]) < int64(25*5*time.Millisecond) {
					t.Errorf("front waits %v ns, want one of at least 125 ms", fronts)
				}
				return
			}
			if maxWaiting != 1 {
				t.Errorf("most waiting %d, want 1", maxWaiting)
			}
			if fronts[0] != 0 || fronts[1] != 0 {
				t.Errorf("front waits %v without a front queue", fronts)
			}
		})
	}
}

// Non-streaming completions and chat answer one JSON document; bad
// requests get vLLM's error shape; llama.cpp counts tokens_predicted and
// n_decode from the requests served.
func TestCompletionsJSONChatErrorsLlamaCpp(t *testing.T) {
	srv, e, url := serveOne(t, "llamacpp", `step = "1ms"`)
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, v
	}
	code, v := post("/v1/completions", `{"prompt": [1, 2, 3], "max_tokens": 5}`)
	if u := v["usage"].(map[string]any); code != 200 || u["completion_tokens"] != 5.0 || u["prompt_tokens"] != 3.0 {
		t.Errorf("completion: %d %v", code, v)
	}
	code, v = post("/v1/chat/completions", `{"messages": [{"role": "user", "content": "one two"}], "max_tokens": 4}`)
	if u := v["usage"].(map[string]any); code != 200 || u["completion_tokens"] != 4.0 || u["prompt_tokens"] != 2.0 || v["object"] != "chat.completion" {
		t.Errorf("chat: %d %v", code, v)
	}
	for _, bad := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"prompt": "x", "model": "other"}`, 404, "does not exist"},
		{`{"prompt": "x", "max_tokens": 5000}`, 400, "maximum context length is 4096"},
		{`{"max_tokens": 5}`, 400, "prompt: missing"},
		{`{"prompt": "x", "max_tokens": 0}`, 400, "at least 1"},
		{`not json`, 400, "request body"},
	} {
		code, v := post("/v1/completions", bad.body)
		if msg, _ := v["message"].(string); code != bad.code || !strings.Contains(msg, bad.msg) || v["object"] != "error" {
			t.Errorf("%s: %d %v, want %d with %q", bad.body, code, v, bad.code, bad.msg)
		}
	}
	resp, err := http.Get(url + "/v1/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	b := string(e.Render(time.Since(srv.Start())))
	if got := sample(t, b, "llamacpp:tokens_predicted_total"); got != 9 {
		t.Errorf("tokens_predicted_total %v, want 9", got)
	}
	if got := sample(t, b, "llamacpp:prompt_tokens_total"); got != 5 {
		t.Errorf("prompt_tokens_total %v, want 5", got)
	}
	if got := sample(t, b, "llamacpp:n_decode_total"); got < 9 {
		t.Errorf("n_decode_total %v, want at least 9 steps", got)
	}
	if got := sample(t, b, "llamacpp:n_tokens_max"); got != 8 {
		t.Errorf("n_tokens_max %v, want 8 (3 prompt + 5 generated)", got)
	}
}

// A client that leaves mid-stream is finished by the engine with reason
// abort at its next step.
func TestCompletionAbort(t *testing.T) {
	srv, e, url := serveOne(t, "vllm", `step = "5ms"`)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"prompt": "a b", "max_tokens": 1000, "stream": true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := e.Truth(time.Since(srv.Start())).Sets[0].Counters
		if c.RequestsAbort == 1 {
			if c.Requests != 1 || c.GenerationTokens >= 1000 {
				t.Errorf("counters after the abort: %+v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no abort counted: %+v", c)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
