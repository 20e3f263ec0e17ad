package wire

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// doAPI sends one request of api to a server running h and returns the result.
func doAPI(t *testing.T, api API, h http.HandlerFunc) *Result {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := NewClient(ClientConfig{API: api, MaxConns: 1, KeepText: true, Timestamps: true})
	t.Cleanup(func() { c.Close() })
	res := new(Result)
	c.do(context.Background(), &Request{Seq: 1, URL: srv.URL, Body: []byte(`{}`)}, res)
	return res
}

func kinds(res *Result) string {
	var b []string
	for _, ch := range res.Chunks {
		b = append(b, ch.Kind)
	}
	return strings.Join(b, ",")
}

// TestDoStreamAPIs reads a Responses and a Messages stream end to end: event kinds, text,
// usage, the final event.
func TestDoStreamAPIs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		api       API
		body      string
		kinds     string
		finish    string
		reasoning *int32
		prompt    int32
	}{
		{"responses", apiResponses, responsesStream, "empty,empty,content,content,content,content,content,usage", "completed", ptr32(2), 4},
		{"messages", apiMessages, messagesStream, "usage,empty,empty,content,content,empty,content,content,content,usage,done", "max_tokens", nil, 4},
	} {
		res := doAPI(t, tc.api, rawSSE(tc.body))
		q := res.Req
		if q.ErrorKind != "" {
			t.Fatalf("%s: error %s: %s", tc.name, q.ErrorKind, q.ErrorMessage)
		}
		if k := kinds(res); k != tc.kinds {
			t.Errorf("%s: kinds %s; want %s", tc.name, k, tc.kinds)
		}
		if res.Text != "token token token " || q.ContentBytes != 18 || q.ReasoningBytes != 7 || q.FinishReason != tc.finish {
			t.Errorf("%s: text %q content %d reasoning %d finish %q; want 3 tokens, 18, 7, %s", tc.name, res.Text, q.ContentBytes, q.ReasoningBytes, q.FinishReason, tc.finish)
		}
		if q.UsagePrompt == nil || *q.UsagePrompt != tc.prompt || q.UsageComplete == nil || *q.UsageComplete != 5 {
			t.Errorf("%s: usage prompt %v completion %v; want %d, 5", tc.name, q.UsagePrompt, q.UsageComplete, tc.prompt)
		}
		if (q.UsageReasoning == nil) != (tc.reasoning == nil) || (q.UsageReasoning != nil && *q.UsageReasoning != *tc.reasoning) {
			t.Errorf("%s: usage reasoning %v; want %v", tc.name, q.UsageReasoning, tc.reasoning)
		}
		if q.DoneNs == nil {
			t.Errorf("%s: done_ns null; want the final event's time", tc.name)
		}
	}
}

func ptr32(v int32) *int32 { return &v }

// TestDoAPIErrors: each API's error formats become the usual error kinds, with the server's
// message kept.
func TestDoAPIErrors(t *testing.T) {
	status := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}
	}
	tests := []struct {
		name    string
		api     API
		h       http.HandlerFunc
		kind    string
		message string
	}{
		{"messages overloaded", apiMessages, status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), schemas.ErrHTTPStatus, "overloaded_error"},
		{"messages error event", apiMessages, rawSSE("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}\n\n"), schemas.ErrServerEvent, "boom"},
		{"messages cut before message_stop", apiMessages, rawSSE("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n"), schemas.ErrIncompleteStream, "without [DONE]"},
		{"responses 429", apiResponses, status(429, `{"error":{"message":"rate limited","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), schemas.ErrHTTPStatus, "rate limited"},
		{"responses error event", apiResponses, rawSSE("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"kaput\",\"param\":null,\"sequence_number\":1}\n\n"), schemas.ErrServerEvent, "kaput"},
		{"responses failed", apiResponses, rawSSE("event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"gone\"}}}\n\n"), schemas.ErrServerEvent, "gone"},
		{"responses cut before completed", apiResponses, rawSSE("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n"), schemas.ErrIncompleteStream, "without [DONE]"},
		{"embeddings 400", apiEmbeddings, status(400, `{"error":{"message":"input too long","type":"BadRequestError","code":400}}`), schemas.ErrHTTPStatus, "input too long"},
	}
	for _, tt := range tests {
		q := doAPI(t, tt.api, tt.h).Req
		if q.ErrorKind != tt.kind || !strings.Contains(q.ErrorMessage, tt.message) {
			t.Errorf("%s: ErrorKind, ErrorMessage = %q, %q; want %q containing %q", tt.name, q.ErrorKind, q.ErrorMessage, tt.kind, tt.message)
		}
	}
}

// TestDoEmbeddings: a non-streaming embeddings list is one usage chunk with its vector count.
func TestDoEmbeddings(t *testing.T) {
	res := doAPI(t, apiEmbeddings, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]},{"object":"embedding","index":1,"embedding":[1,0]},{"object":"embedding","index":2,"embedding":[0,1]}],"model":"m","usage":{"prompt_tokens":12,"total_tokens":12}}`)
	})
	q := res.Req
	if q.ErrorKind != "" || q.Chunks != 1 || kinds(res) != schemas.ChunkUsage {
		t.Fatalf("error %q (%s), chunks %d kinds %s; want none, 1, usage", q.ErrorKind, q.ErrorMessage, q.Chunks, kinds(res))
	}
	if q.Embeddings != 3 || q.UsagePrompt == nil || *q.UsagePrompt != 12 || q.UsageComplete != nil || q.DoneNs == nil {
		t.Errorf("embeddings %d, usage prompt %v completion %v, done %v; want 3, 12, nil, set", q.Embeddings, q.UsagePrompt, q.UsageComplete, q.DoneNs)
	}
}

// TestDoChatReasoningTools: vLLM's two reasoning field names and tool-call deltas are token
// events (kind content); the usage's reasoning tokens are kept.
func TestDoChatReasoningTools(t *testing.T) {
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"a \"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"b \"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"tool_0\",\"arguments\":\"{\\\"text\\\":\\\"x \"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"y\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n" +
		"data: [DONE]\n\n"
	res := doAPI(t, apiOpenAI, rawSSE(body))
	q := res.Req
	if q.ErrorKind != "" {
		t.Fatalf("error %s: %s", q.ErrorKind, q.ErrorMessage)
	}
	if k := kinds(res); k != "empty,content,content,content,content,usage,done" {
		t.Errorf("kinds %s; want empty,content,content,content,content,usage,done", k)
	}
	if res.Chunks[3].ToolCalls != 1 || res.Chunks[4].ToolCalls != 1 || q.ReasoningBytes != 4 || q.FinishReason != "tool_calls" {
		t.Errorf("tool calls %d %d, reasoning bytes %d, finish %q; want 1 1 4 tool_calls", res.Chunks[3].ToolCalls, res.Chunks[4].ToolCalls, q.ReasoningBytes, q.FinishReason)
	}
	if q.UsageReasoning == nil || *q.UsageReasoning != 2 {
		t.Errorf("usage reasoning %v; want 2", q.UsageReasoning)
	}
}
