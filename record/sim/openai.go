package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// CompletionLog is the truth about one completion request, in its
// [LogEntry].
type CompletionLog struct {
	// Chat is true for /v1/chat/completions.
	Chat   bool `json:"chat,omitempty"`
	Stream bool `json:"stream,omitempty"`
	// PromptTokens and OutputTokens are as the engine counted them;
	// MaxTokens as asked (or defaulted).
	PromptTokens int `json:"prompt_tokens"`
	MaxTokens    int `json:"max_tokens"`
	OutputTokens int `json:"output_tokens"`
	// FrontNs is how long the request waited for an HTTP thread before the
	// engine saw it (serve.front_threads); 0 without a front queue.
	FrontNs int64 `json:"front_ns,omitempty"`
	// EngineNs is when it entered the engine's queue, FirstTokenNs when
	// the engine produced its first token (Unix ns).
	EngineNs     int64 `json:"engine_ns,omitempty"`
	FirstTokenNs int64 `json:"first_token_ns,omitempty"`
	// FinishReason is length, or abort when the client left.
	FinishReason string `json:"finish_reason,omitempty"`
}

// Request bodies larger than this are refused.
const maxCompletionBody = 1 << 20

// Default max_tokens of a request that sets none: OpenAI's 16 for
// completions; chat runs to DefaultOutputLen.
const defaultCompletionTokens = 16

// completionReq is the part of an OpenAI completions or chat request the
// simulator reads.
type completionReq struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	Stream              bool `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// words is the simulated model's vocabulary: a token is one word, so a
// client counting words counts tokens.
var words = strings.Fields("the a of to and in is it that on for as with was be at by this are from or an " +
	"which but not have had one all were there can more been if will when so no into some time")

var completionSeq atomic.Int64

// promptTokens counts a prompt: one token per whitespace-separated word of
// a string, one per element of a token-id list.
func promptTokens(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("prompt: missing")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return len(strings.Fields(s)), nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		return len(ids), nil
	}
	return 0, errors.New("prompt: want one string or one list of token ids")
}

// chatTokens counts the words of every message's text.
func chatTokens(req *completionReq) (int, error) {
	if len(req.Messages) == 0 {
		return 0, errors.New("messages: missing")
	}
	n := 0
	for i, m := range req.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			n += len(strings.Fields(s))
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return 0, fmt.Errorf("messages[%d].content: want a string or a list of parts", i)
		}
		for _, p := range parts {
			n += len(strings.Fields(p.Text))
		}
	}
	return n, nil
}

// openAIError writes an error in vLLM's shape.
func (s *Server) openAIError(w http.ResponseWriter, r *http.Request, ent *LogEntry, code int, msg string) {
	typ := map[int]string{400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed", 503: "ServiceUnavailableError"}[code]
	body, _ := json.Marshal(map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
	s.send(w, r, ent, code, "application/json", body, 0, 0)
}

// completion serves POST /v1/completions and /v1/chat/completions: the
// request joins the engine's queue (after a free HTTP thread, with
// serve.front_threads), and its tokens come as the engine steps, streamed
// one SSE chunk per token with stream=true (and a usage chunk when
// stream_options.include_usage is set), else as one JSON answer.
func (s *Server) completion(w http.ResponseWriter, r *http.Request, e *Engine, ent *LogEntry) {
	chat := r.URL.Path == "/v1/chat/completions"
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.openAIError(w, r, ent, http.StatusMethodNotAllowed, "POST a request to "+r.URL.Path)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxCompletionBody+1))
	if err != nil {
		ent.Error = err.Error()
		return
	}
	if len(data) > maxCompletionBody {
		s.openAIError(w, r, ent, http.StatusBadRequest, "request body over 1 MiB")
		return
	}
	var req completionReq
	if err := json.Unmarshal(data, &req); err != nil {
		s.openAIError(w, r, ent, http.StatusBadRequest, "request body: "+err.Error())
		return
	}
	sp := &e.spec
	if req.Model != "" && req.Model != sp.Model {
		s.openAIError(w, r, ent, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	var prompt int
	if chat {
		prompt, err = chatTokens(&req)
	} else {
		prompt, err = promptTokens(req.Prompt)
	}
	if err != nil {
		s.openAIError(w, r, ent, http.StatusBadRequest, err.Error())
		return
	}
	maxTok := defaultCompletionTokens
	if chat {
		maxTok = DefaultOutputLen
	}
	for _, m := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if m != nil {
			maxTok = *m
		}
	}
	switch {
	case maxTok < 1:
		s.openAIError(w, r, ent, http.StatusBadRequest, fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTok))
		return
	case prompt+maxTok > sp.MaxModelLen:
		s.openAIError(w, r, ent, http.StatusBadRequest, fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
			sp.MaxModelLen, prompt+maxTok, prompt, maxTok))
		return
	}
	cl := &CompletionLog{Chat: chat, Stream: req.Stream, PromptTokens: prompt, MaxTokens: maxTok}
	ent.Completion = cl
	l := e.live
	if l.front != nil {
		t0 := time.Now()
		select {
		case l.front <- struct{}{}:
			defer func() { <-l.front }()
		case <-r.Context().Done():
			ent.Error = "client gone while waiting for an HTTP thread"
			return
		case <-s.stop:
			ent.Error = errServerClosed.Error()
			return
		}
		cl.FrontNs = time.Since(t0).Nanoseconds()
	}
	began := time.Now()
	lr := l.submit(r.Context(), prompt, maxTok)
	cl.EngineNs = lr.arrived.UnixNano()
	id := fmt.Sprintf("cmpl-sim%d", completionSeq.Add(1))
	if chat {
		id = "chat" + id
	}
	created := began.Unix()
	wire := 0
	defer func() { l.observeHTTP(time.Since(began), len(data), wire) }()
	next := func() (liveToken, bool, error) {
		select {
		case tok, ok := <-lr.out:
			return tok, ok, nil
		case <-s.stop:
			return liveToken{}, false, errServerClosed
		}
	}
	if !req.Stream {
		var text strings.Builder
		reason := ""
		for {
			tok, ok, err := next()
			if err != nil || !ok {
				if err == nil {
					err = errServerClosed
				}
				ent.Error = err.Error()
				return
			}
			if cl.OutputTokens == 0 {
				cl.FirstTokenNs = tok.at.UnixNano()
			}
			text.WriteString(" " + words[cl.OutputTokens%len(words)])
			cl.OutputTokens++
			if tok.reason != "" {
				reason = tok.reason
				break
			}
		}
		cl.FinishReason = reason
		if reason == "abort" {
			ent.Error = "client gone"
			return
		}
		usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": cl.OutputTokens, "total_tokens": prompt + cl.OutputTokens}
		var v map[string]any
		if chat {
			v = map[string]any{"id": id, "object": "chat.completion", "created": created, "model": sp.Model,
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text.String()},
					"logprobs": nil, "finish_reason": reason}}, "usage": usage}
		} else {
			v = map[string]any{"id": id, "object": "text_completion", "created": created, "model": sp.Model,
				"choices": []any{map[string]any{"index": 0, "text": text.String(), "logprobs": nil, "finish_reason": reason,
					"stop_reason": nil}}, "usage": usage}
		}
		body, _ := json.Marshal(v)
		wire = len(body)
		s.send(w, r, ent, http.StatusOK, "application/json", body, 0, 0)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	ent.Status = http.StatusOK
	rc := http.NewResponseController(w)
	write := func(v any) error {
		b, _ := json.Marshal(v)
		b = append(append([]byte("data: "), b...), "\n\n"...)
		n, err := w.Write(b)
		wire += n
		ent.Bytes, ent.WireBytes = ent.Bytes+n, ent.WireBytes+n
		if err == nil {
			err = rc.Flush()
		}
		if ent.FirstByteSentNs == 0 {
			ent.FirstByteSentNs = time.Now().UnixNano()
		}
		return err
	}
	defer func() { ent.SentNs = time.Now().UnixNano() }()
	for {
		tok, ok, err := next()
		if err == nil && !ok {
			err = errServerClosed
		}
		if err != nil {
			ent.Error = err.Error()
			return
		}
		if cl.OutputTokens == 0 {
			cl.FirstTokenNs = tok.at.UnixNano()
		}
		if tok.reason == "abort" {
			cl.FinishReason = tok.reason
			ent.Error = "client gone"
			return
		}
		text := " " + words[cl.OutputTokens%len(words)]
		cl.OutputTokens++
		var reason any
		if tok.reason != "" {
			reason = tok.reason
		}
		var chunk map[string]any
		if chat {
			delta := map[string]any{"content": text}
			if cl.OutputTokens == 1 {
				delta["role"] = "assistant"
			}
			chunk = map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": sp.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": reason}}}
		} else {
			chunk = map[string]any{"id": id, "object": "text_completion", "created": created, "model": sp.Model,
				"choices": []any{map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": reason, "stop_reason": nil}}}
		}
		if err := write(chunk); err != nil {
			ent.Error = err.Error()
			return
		}
		if tok.reason != "" {
			cl.FinishReason = tok.reason
			break
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		object := "text_completion"
		if chat {
			object = "chat.completion.chunk"
		}
		usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": cl.OutputTokens, "total_tokens": prompt + cl.OutputTokens}
		if err := write(map[string]any{"id": id, "object": object, "created": created, "model": sp.Model,
			"choices": []any{}, "usage": usage}); err != nil {
			ent.Error = err.Error()
			return
		}
	}
	n, err := io.WriteString(w, "data: [DONE]\n\n")
	wire += n
	ent.Bytes, ent.WireBytes = ent.Bytes+n, ent.WireBytes+n
	if err == nil {
		err = rc.Flush()
	}
	if err != nil {
		ent.Error = err.Error()
	}
}

// frontQueue is the semaphore of serve.front_threads; nil without one.
func frontQueue(n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	return make(chan struct{}, n)
}
