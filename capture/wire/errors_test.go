package wire

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// rawSSE answers with the given SSE body, flushed at once.
func rawSSE(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}
}

// slowSSE sends a first event, then waits for the client to go away (or 5 s).
func slowSSE(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// resetMid writes headers and half a chunk, then resets the connection.
func resetMid(w http.ResponseWriter, r *http.Request) {
	conn, bw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	bw.WriteString("40\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
	bw.Flush()
	time.Sleep(10 * time.Millisecond)
	conn.(*net.TCPConn).SetLinger(0)
	conn.Close()
}

func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1/completions"
}

func TestDoErrorKinds(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		url     func(t *testing.T) string // overrides the server URL
		timeout time.Duration
		cancel  time.Duration // cancel the caller's context after this
		kind    string
		message string // substring of ErrorMessage
		status  int32
		chunks  int32
	}{
		{name: "ok", handler: rawSSE("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"), status: 200, chunks: 2},
		{name: "ok without [DONE] but finished", handler: rawSSE("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"length\"}]}"), status: 200, chunks: 1},
		{name: "status 503", handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "overloaded", 503) }, kind: schemas.ErrHTTPStatus, message: "overloaded", status: 503},
		{name: "connection refused", url: closedURL, kind: schemas.ErrConnect},
		{name: "timeout", handler: slowSSE, timeout: 100 * time.Millisecond, kind: schemas.ErrTimeout, status: 200, chunks: 1},
		{name: "cancelled", handler: slowSSE, cancel: 100 * time.Millisecond, kind: schemas.ErrCancelled, status: 200, chunks: 1},
		{name: "reset mid-stream", handler: resetMid, kind: schemas.ErrReset, status: 200, chunks: 1},
		{name: "bad JSON", handler: rawSSE("data: {\"choices\":[\n\ndata: [DONE]\n\n"), kind: schemas.ErrMalformedStream, message: "invalid JSON", status: 200, chunks: 2},
		{name: "error object", handler: rawSSE("data: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\ndata: [DONE]\n\n"), kind: schemas.ErrServerEvent, message: "boom", status: 200, chunks: 2},
		{name: "error event type", handler: rawSSE("event: error\ndata: engine died\n\n"), kind: schemas.ErrServerEvent, message: "engine died", status: 200, chunks: 1},
		{name: "vLLM-style error object", handler: rawSSE("data: {\"object\":\"error\",\"message\":\"too long\",\"code\":400}\n\ndata: [DONE]\n\n"), kind: schemas.ErrServerEvent, message: "too long", status: 200, chunks: 2},
		{name: "no [DONE] no finish", handler: rawSSE("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"), kind: schemas.ErrIncompleteStream, message: "without [DONE]", status: 200, chunks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var url string
			if tt.url != nil {
				url = tt.url(t)
			} else {
				srv := httptest.NewServer(tt.handler)
				defer srv.Close()
				url = srv.URL + "/v1/completions"
			}
			c := NewClient(ClientConfig{MaxConns: 1, Timeout: tt.timeout, Timestamps: true})
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			var res Result
			c.do(ctx, &Request{Seq: 1, URL: url, Body: []byte(`{}`)}, &res)
			q := res.Req
			if q.ErrorKind != tt.kind || !strings.Contains(q.ErrorMessage, tt.message) {
				t.Errorf("ErrorKind, ErrorMessage = %q, %q; want %q containing %q", q.ErrorKind, q.ErrorMessage, tt.kind, tt.message)
			}
			if q.Status != tt.status || q.Chunks != tt.chunks {
				t.Errorf("Status, Chunks = %d, %d; want %d, %d", q.Status, q.Chunks, tt.status, tt.chunks)
			}
			// done_ns is null exactly when no response or the stream did not end.
			ended := tt.status != 0 && tt.kind != schemas.ErrTimeout && tt.kind != schemas.ErrCancelled && tt.kind != schemas.ErrReset
			if (q.DoneNs != nil) != ended {
				t.Errorf("DoneNs = %v; want set: %v", q.DoneNs, ended)
			}
		})
	}
}

// A whole JSON answer to a streaming request (chat, completions) is kind not_streamed: it carries
// no token timing. Its content is parsed all the same (the row says what came).
func TestDoNonStreaming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Sim-Queue-Ns", "5")
		w.Header().Set("X-Sim-Prefill-Ns", "6")
		w.Header().Set("X-Sim-Decode-Ns", "7")
		w.Header().Set("X-Sim-Sent-Ns", "8")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello \u00e9"},"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`)
	}))
	defer srv.Close()
	c := NewClient(ClientConfig{MaxConns: 1, KeepText: true, Timestamps: true})
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{Seq: 9, URL: srv.URL, Body: []byte(`{}`)}, &res)
	q := res.Req
	if q.ErrorKind != schemas.ErrNotStreamed || !strings.Contains(q.ErrorMessage, `"application/json", not text/event-stream`) || q.Chunks != 1 || len(res.Chunks) != 1 || q.DoneNs == nil {
		t.Fatalf("ErrorKind %q (%s), Chunks %d, done %v; want not_streamed naming the content type, 1 chunk, done set", q.ErrorKind, q.ErrorMessage, q.Chunks, q.DoneNs)
	}
	if res.Text != "hello é" || q.ContentBytes != 8 || q.FinishReason != "length" || res.Chunks[0].Kind != schemas.ChunkContent {
		t.Errorf("Text %q ContentBytes %d FinishReason %q kind %s; want \"hello é\" 8 length content", res.Text, q.ContentBytes, q.FinishReason, res.Chunks[0].Kind)
	}
	if q.UsagePrompt == nil || *q.UsagePrompt != 4 || q.UsageComplete == nil || *q.UsageComplete != 2 || q.UsageCached != nil {
		t.Errorf("usage %v %v %v; want 4 2 nil", q.UsagePrompt, q.UsageComplete, q.UsageCached)
	}
	if q.ServerQueueNs == nil || *q.ServerQueueNs != 5 || q.ServerPrefillNs == nil || *q.ServerPrefillNs != 6 || q.ServerDecodeNs == nil || *q.ServerDecodeNs != 7 {
		t.Errorf("server times %v %v %v; want 5 6 7", q.ServerQueueNs, q.ServerPrefillNs, q.ServerDecodeNs)
	}
	if p := res.Chunks[0].ServerSentNs; p != 8 {
		t.Errorf("chunk ServerSentNs = %v; want 8 (x-sim-sent-ns)", p)
	}
}

func TestDoWithoutTimestamps(t *testing.T) {
	for _, after := range []bool{false, true} {
		testDoWithoutTimestamps(t, ClientConfig{MaxConns: 1, StampAfterDecode: after, Timestamps: after})
	}
}

func testDoWithoutTimestamps(t *testing.T, cfg ClientConfig) {
	srv := httptest.NewServer(stampHandler(streamSpec{events: 3, interval: time.Millisecond}))
	defer srv.Close()
	c := NewClient(cfg)
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{Seq: 1, URL: srv.URL, Body: []byte(`{}`)}, &res)
	if res.Req.ErrorKind != "" || len(res.Chunks) != 6 {
		t.Fatalf("ErrorKind %q, %d chunks; want none, 6", res.Req.ErrorKind, len(res.Chunks))
	}
	for i, ch := range res.Chunks {
		if ch.Quality != qualityUser || ch.RxKernelNs != 0 {
			t.Errorf("chunk %d: quality %s kernel %v; want user, nil", i, ch.Quality, ch.RxKernelNs)
		}
	}
	if res.Req.OffsetMismatch {
		t.Errorf("OffsetMismatch = true; want false (the framing tracker runs without timestamps too)")
	}
	reads, n := c.Stats()
	if reads == 0 || n == 0 {
		t.Errorf("Stats() = %d, %d; want > 0", reads, n)
	}
}
