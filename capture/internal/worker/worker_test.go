package worker

import (
	"encoding/json"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestOwnerSplitsKeysEvenly(t *testing.T) {
	tests := []struct {
		name            string
		shards, workers int
	}{
		{"one host two workers", 1, 2},
		{"two hosts two workers", 2, 2},
		{"three hosts four workers", 3, 4},
	}
	for _, tt := range tests {
		counts := map[[2]int]int{}
		for seq := range int64(1200) {
			r := schemas.ScheduleRequest{Seq: seq, Conversation: -1, User: -1}
			s, w := Owner(&r, tt.shards, tt.workers)
			counts[[2]int{s, w}]++
		}
		if len(counts) != tt.shards*tt.workers {
			t.Errorf("%s: %d (shard, worker) cells used; want %d", tt.name, len(counts), tt.shards*tt.workers)
		}
		for cell, n := range counts {
			if want := 1200 / (tt.shards * tt.workers); n != want {
				t.Errorf("%s: cell %v got %d requests; want %d", tt.name, cell, n, want)
			}
		}
	}
	// A conversation stays together whatever its seqs.
	a := schemas.ScheduleRequest{Seq: 1, Conversation: 7, User: -1}
	b := schemas.ScheduleRequest{Seq: 2, Conversation: 7, User: -1}
	sa, wa := Owner(&a, 2, 3)
	sb, wb := Owner(&b, 2, 3)
	if sa != sb || wa != wb {
		t.Errorf("Owner(conversation 7 seq 1) = (%d, %d), Owner(seq 2) = (%d, %d); want equal", sa, wa, sb, wb)
	}
}

func TestBodyBuilder(t *testing.T) {
	tests := []struct {
		name   string
		target schemas.Target
		text   string
		msgs   string
		prev   []byte
		answer string
		want   string
	}{
		{"completions", schemas.Target{Model: "m"}, "hi there", "", nil, "",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"prompt":"hi there"}`},
		{"completions max_tokens none", schemas.Target{Model: "m", MaxTokens: "none"}, "hi", "", nil, "",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"prompt":"hi"}`},
		{"completions ignore_eos extra", schemas.Target{Model: "m", IgnoreEOS: true, ExtraBody: map[string]any{"temperature": 0}}, "x", "", nil, "",
			`{"model":"m","stream":true,"ignore_eos":true,"stream_options":{"include_usage":true},"temperature":0,"max_tokens":4,"prompt":"x"}`},
		{"completions next turn", schemas.Target{Model: "m"}, "more", "", []byte("first"), "answer",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"prompt":"firstanswer\n\nmore"}`},
		{"chat with system", schemas.Target{Model: "m", API: "chat"}, "q", `[{"role":"system","content":"s"}]`, nil, "",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`},
		{"chat next turn", schemas.Target{Model: "m", API: "chat"}, "q2", `ignored`, []byte(`{"role":"user","content":"q1"}`), "a1",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"}]}`},
	}
	for _, tt := range tests {
		bb, err := newBodyBuilder(tt.target, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, _, err := bb.build("", 4, &schemas.Prompt{Text: tt.text, MessagesJSON: tt.msgs}, tt.prev, tt.answer)
		if err != nil || string(body) != tt.want {
			t.Errorf("%s: build = (%s, %v); want %s", tt.name, body, err, tt.want)
		}
		if !json.Valid(body) {
			t.Errorf("%s: body is not valid JSON: %s", tt.name, body)
		}
	}
	if _, err := newBodyBuilder(schemas.Target{ExtraBody: map[string]any{"max_tokens": 3}}, nil); err == nil {
		t.Error("newBodyBuilder(extra_body.max_tokens) = nil error; want an error")
	}
	if _, err := newBodyBuilder(schemas.Target{MaxTokens: "some"}, nil); err == nil {
		t.Error("newBodyBuilder(max_tokens some) = nil error; want an error")
	}
	if _, err := newBodyBuilder(schemas.Target{API: "grpc"}, nil); err == nil {
		t.Error("newBodyBuilder(api grpc) = nil error; want an error")
	}
}

func TestEndpoint(t *testing.T) {
	tests := []struct{ base, api, want string }{
		{"http://h:1", "completions", "http://h:1/v1/completions"},
		{"http://h:1/", "chat", "http://h:1/v1/chat/completions"},
		{"http://h:1/v1", "chat", "http://h:1/v1/chat/completions"},
		{"http://h:1", "responses", "http://h:1/v1/responses"},
		{"http://h:1/v1/", "messages", "http://h:1/v1/messages"},
		{"http://h:1", "embeddings", "http://h:1/v1/embeddings"},
		{"http://h:1", "rerank", "http://h:1/v1/rerank"},
		{"http://h:1/v1", "score", "http://h:1/v1/score"},
		{"http://h:1", "tei_rerank", "http://h:1/rerank"},
		{"http://h:1/v1/", "tei_rerank", "http://h:1/rerank"}, // TEI has no /v1/rerank
	}
	for _, tt := range tests {
		if got := endpoint(tt.base, tt.api); got != tt.want {
			t.Errorf("endpoint(%q, %q) = %q; want %q", tt.base, tt.api, got, tt.want)
		}
	}
}
