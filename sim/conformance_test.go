package sim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/tokenizer"
)

// chunkJSON is the strict shape of a streamed chunk (both endpoints).
type chunkJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int     `json:"index"`
		Text  *string `json:"text"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Logprobs     any     `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
		StopReason   any     `json:"stop_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		TotalTokens      int `json:"total_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// streamSummary decodes a conforming stream and checks the OpenAI framing rules.
type streamSummary struct {
	text          string
	contentChunks int
	finish        string
	usage         [3]int // prompt, completion, total; -1 when absent
	truth         xsim
}

func checkStream(t *testing.T, body []byte, chat bool) streamSummary {
	t.Helper()
	evs, err := parseSSE(body)
	if err != nil {
		t.Fatalf("strict SSE parse: %v\n%s", err, body)
	}
	if n := len(evs); n < 3 || evs[n-1].data != "[DONE]" {
		t.Fatalf("stream does not end with data: [DONE]:\n%s", body)
	}
	last := evs[len(evs)-2]
	if last.data != "" || len(last.comments) != 1 || !strings.HasPrefix(last.comments[0], "x-sim ") {
		t.Fatalf("event before [DONE] = %+v; want only the x-sim comment", last)
	}
	s := streamSummary{usage: [3]int{-1, -1, -1}, truth: groundTruth(t, evs)}
	wantObj := "text_completion"
	if chat {
		wantObj = "chat.completion.chunk"
	}
	for i, e := range evs[:len(evs)-2] {
		var c chunkJSON
		d := json.NewDecoder(strings.NewReader(e.data))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			t.Fatalf("event %d %q: %v", i, e.data, err)
		}
		if c.Object != wantObj || c.Model == "" || c.ID == "" || c.Created == 0 {
			t.Errorf("event %d: object %q model %q id %q created %d; want %s and all set", i, c.Object, c.Model, c.ID, c.Created, wantObj)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk has %d choices; want []", len(c.Choices))
			}
			s.usage = [3]int{c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens}
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("event %d has %d choices; want 1", i, len(c.Choices))
		}
		ch := c.Choices[0]
		if s.finish != "" {
			t.Errorf("event %d comes after the finish_reason chunk", i)
		}
		var content string
		if chat {
			if ch.Delta == nil || ch.Text != nil {
				t.Fatalf("chat event %d lacks delta or has text: %s", i, e.data)
			}
			if ch.Delta.Content != nil {
				content = *ch.Delta.Content
			}
		} else {
			if ch.Text == nil || ch.Delta != nil {
				t.Fatalf("completion event %d lacks text or has delta: %s", i, e.data)
			}
			content = *ch.Text
		}
		if content != "" {
			s.contentChunks++
			s.text += content
		}
		if ch.FinishReason != nil {
			if content != "" {
				t.Errorf("finish chunk carries content %q", content)
			}
			s.finish = *ch.FinishReason
		}
	}
	if s.finish == "" {
		t.Error("no chunk with a finish_reason")
	}
	if len(s.truth.SentNs) != s.contentChunks {
		t.Errorf("x-sim sent_ns has %d entries; want one per content chunk (%d)", len(s.truth.SentNs), s.contentChunks)
	}
	return s
}

// conformanceCase is one golden exchange of a successful request.
type conformanceCase struct {
	name    string
	cfg     func(*Config)
	path    string
	body    string
	chat    bool
	stream  bool
	prompt  int
	tokens  int
	usage   bool
	nChunks int
}

var k3 = func(c *Config) { c.TokensPerChunk = 3 }

var conformanceCases = []conformanceCase{
	{name: "completions-stream-usage", path: "/v1/completions", stream: true, usage: true, prompt: 3, tokens: 5, nChunks: 5,
		body: `{"model":"sim","prompt":"one two  three","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "completions-stream", path: "/v1/completions", stream: true, prompt: 2, tokens: 2, nChunks: 2,
		body: `{"model":"other","prompt":["a b"],"max_tokens":2,"stream":true,"ignore_eos":true}`},
	{name: "completions-stream-token-ids", path: "/v1/completions", stream: true, usage: true, prompt: 4, tokens: 1, nChunks: 1,
		body: `{"model":"sim","prompt":[1,2,3,4],"max_tokens":1,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "completions-stream-k3", cfg: k3, path: "/v1/completions", stream: true, usage: true, prompt: 1, tokens: 8, nChunks: 4,
		body: `{"model":"sim","prompt":"x","max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat-stream-usage", path: "/v1/chat/completions", chat: true, stream: true, usage: true, prompt: 6, tokens: 3, nChunks: 3,
		body: `{"model":"sim","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there, sim"}]},{"role":"assistant","content":null},{"role":"user","content":"go"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat-stream-default-max", cfg: func(c *Config) { c.DefaultMaxTokens = 4 }, path: "/v1/chat/completions", chat: true, stream: true, prompt: 1, tokens: 4, nChunks: 4,
		body: `{"model":"sim","messages":[{"role":"user","content":"hi"}],"stream":true}`},
	{name: "completions-json", path: "/v1/completions", prompt: 3, tokens: 4,
		body: `{"model":"sim","prompt":"one two three","max_tokens":4}`},
	{name: "chat-json", path: "/v1/chat/completions", chat: true, prompt: 2, tokens: 3,
		body: `{"model":"sim","messages":[{"role":"user","content":"hi there"}],"max_completion_tokens":3}`},
}

func TestConformance(t *testing.T) {
	tests := conformanceCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := zeroConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, addr := startServer(t, cfg)
			w := rawPost(t, addr, tt.path, tt.body)
			if w.status != 200 || !w.complete {
				t.Fatalf("status %d complete %v; want 200, complete:\n%s%s", w.status, w.complete, w.head, w.body)
			}
			golden(t, tt.name, normalize(w))
			if !tt.stream {
				checkJSON(t, w, tt.chat, tt.prompt, tt.tokens)
				return
			}
			s := checkStream(t, w.body, tt.chat)
			if s.finish != "length" {
				t.Errorf("finish_reason = %q; want length", s.finish)
			}
			if got := tokenizer.CountWords(s.text); got != tt.tokens {
				t.Errorf("CountWords(streamed text %q) = %d; want %d", s.text, got, tt.tokens)
			}
			if s.contentChunks != tt.nChunks {
				t.Errorf("content chunks = %d; want %d", s.contentChunks, tt.nChunks)
			}
			want := [3]int{-1, -1, -1}
			if tt.usage {
				want = [3]int{tt.prompt, tt.tokens, tt.prompt + tt.tokens}
			}
			if s.usage != want {
				t.Errorf("usage (prompt, completion, total) = %v; want %v", s.usage, want)
			}
		})
	}
}

func checkJSON(t *testing.T, w wire, chat bool, prompt, tokens int) {
	t.Helper()
	var r struct {
		Object  string `json:"object"`
		Choices []struct {
			Text    string `json:"text"`
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(w.body, &r); err != nil {
		t.Fatalf("decode %s: %v", w.body, err)
	}
	text, obj := r.Choices[0].Text, "text_completion"
	if chat {
		text, obj = r.Choices[0].Message.Content, "chat.completion"
	}
	if r.Object != obj || r.Choices[0].FinishReason != "length" {
		t.Errorf("object %q finish_reason %q; want %q, length", r.Object, r.Choices[0].FinishReason, obj)
	}
	if got := tokenizer.CountWords(text); got != tokens || r.Usage.CompletionTokens != tokens ||
		r.Usage.PromptTokens != prompt || r.Usage.TotalTokens != prompt+tokens {
		t.Errorf("CountWords(text) = %d, usage = %+v; want %d completion, %d prompt", got, r.Usage, tokens, prompt)
	}
	for _, h := range []string{"X-Sim-Queue-Ns", "X-Sim-Prefill-Ns", "X-Sim-Decode-Ns", "X-Sim-Sent-Ns"} {
		if !strings.Contains(w.head, "\r\n"+h+": ") {
			t.Errorf("response lacks header %s:\n%s", h, w.head)
		}
	}
}

// golden compares got with testdata/golden/NAME.txt (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./sim -update): %v", err)
	}
	if got != string(want) {
		t.Errorf("wire transcript differs from %s (go test ./sim -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// badRequestCase is one golden exchange of a refused request.
type badRequestCase struct {
	name, path, body string
	header           []string
	status           int
}

var badRequestCases = []badRequestCase{
	{"bad-invalid-json", "/v1/completions", `{"model":"sim",`, nil, 400},
	{"bad-missing-model", "/v1/completions", `{"prompt":"hi"}`, nil, 400},
	{"bad-missing-prompt", "/v1/completions", `{"model":"sim"}`, nil, 400},
	{"bad-prompt-batch", "/v1/completions", `{"model":"sim","prompt":["a","b"]}`, nil, 400},
	{"bad-missing-messages", "/v1/chat/completions", `{"model":"sim","messages":[]}`, nil, 400},
	{"bad-content-type", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":7}]}`, nil, 400},
	{"bad-n", "/v1/completions", `{"model":"sim","prompt":"hi","n":2}`, nil, 400},
	{"bad-max-tokens", "/v1/completions", `{"model":"sim","prompt":"hi","max_tokens":0}`, nil, 400},
	{"bad-too-long", "/v1/completions", `{"model":"sim","prompt":"hi","max_tokens":40000}`, nil, 400},
	{"bad-fault-header", "/v1/completions", `{"model":"sim","prompt":"hi"}`, []string{FaultHeader, "boom"}, 400},
	{"bad-unknown-model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, nil, 404},
}

func TestBadRequests(t *testing.T) {
	tests := badRequestCases
	_, addr := startServer(t, zeroConfig())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := rawPost(t, addr, tt.path, tt.body, tt.header...)
			if w.status != tt.status {
				t.Errorf("status = %d; want %d\n%s", w.status, tt.status, w.body)
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.body, &e); err != nil || e.Error.Message == "" || e.Error.Code != tt.status {
				t.Errorf("error body %s (%v); want an OpenAI-style error with code %d", w.body, err, tt.status)
			}
			golden(t, tt.name, normalize(w))
		})
	}
}

func TestFaults(t *testing.T) {
	const stall, slow = 300 * time.Millisecond, 300 * time.Millisecond
	body := `{"model":"sim","prompt":"a b c","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`
	tests := []struct {
		fault    string
		status   int
		complete bool
		check    func(t *testing.T, w wire)
	}{
		{Fault429, 429, true, func(t *testing.T, w wire) {
			if !strings.Contains(w.head, "Retry-After: 1") {
				t.Errorf("429 lacks Retry-After:\n%s", w.head)
			}
		}},
		{Fault500, 500, true, nil},
		{Fault503, 503, true, nil},
		{FaultStall, 200, true, func(t *testing.T, w wire) {
			s := checkStream(t, w.body, false)
			// the stall sits between chunk 1 and chunk 2 (mid = 4/2)
			if gap := time.Duration(s.truth.SentNs[2] - s.truth.SentNs[1]); gap < stall {
				t.Errorf("gap across the stall = %v; want at least %v", gap, stall)
			}
		}},
		{FaultDrop, 200, false, func(t *testing.T, w wire) {
			if strings.Contains(string(w.body), "[DONE]") || strings.Count(string(w.body), `"text":"`) != 2 {
				t.Errorf("dropped stream should hold exactly 2 chunks and no [DONE]:\n%s", w.body)
			}
		}},
		{FaultMalformed, 200, true, func(t *testing.T, w wire) {
			if _, err := parseSSE(w.body); err == nil {
				t.Errorf("strict parser accepted the malformed stream:\n%s", w.body)
			}
			if !strings.Contains(string(w.body), `"choices":[{"index":0,"te`+"\n\n") {
				t.Errorf("no event with cut JSON:\n%s", w.body)
			}
		}},
		{FaultSlowHeaders, 200, true, func(t *testing.T, w wire) {
			checkStream(t, w.body, false)
			if w.elapsed < slow {
				t.Errorf("response took %v; want at least the %v header delay", w.elapsed, slow)
			}
		}},
	}
	cfg := zeroConfig()
	cfg.Stall, cfg.SlowHeaders = stall, slow
	_, addr := startServer(t, cfg)
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			w := rawPost(t, addr, "/v1/completions", body, FaultHeader, tt.fault)
			if w.status != tt.status || w.complete != tt.complete {
				t.Fatalf("status %d complete %v; want %d, %v\n%s%s", w.status, w.complete, tt.status, tt.complete, w.head, w.body)
			}
			golden(t, "fault-"+tt.fault, normalize(w))
			if tt.check != nil {
				tt.check(t, w)
			}
		})
	}
}

// TestFaultRates checks that rate-drawn faults are deterministic per seed and near their rates.
func TestFaultRates(t *testing.T) {
	cfg := zeroConfig()
	cfg.Fault500, cfg.Fault429 = 0.2, 0.1
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	counts := map[string]int{}
	for range 2000 {
		f, err := srv.pickFault("")
		if err != nil {
			t.Fatal(err)
		}
		counts[f]++
	}
	for f, want := range map[string]int{Fault500: 400, Fault429: 200, "": 1400} {
		if got := counts[f]; got < want*8/10 || got > want*12/10 {
			t.Errorf("fault %q drawn %d times in 2000; want about %d", f, got, want)
		}
	}
}
