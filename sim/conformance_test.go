package sim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			Role             string         `json:"role"`
			Content          *string        `json:"content"`
			ReasoningContent *string        `json:"reasoning_content"`
			Reasoning        *string        `json:"reasoning"`
			ToolCalls        []toolCallJSON `json:"tool_calls"`
		} `json:"delta"`
		Logprobs     any     `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
		StopReason   any     `json:"stop_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens            int `json:"prompt_tokens"`
		TotalTokens             int `json:"total_tokens"`
		CompletionTokens        int `json:"completion_tokens"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// toolCallJSON is a chat tool call, whole or a delta of it.
type toolCallJSON struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// streamSummary is what a conforming stream of any API says.
type streamSummary struct {
	text          string // answer text (chat content, completions text, output_text, text_delta)
	reasoning     string // reasoning deltas
	args          string // tool-call arguments deltas
	tool          string // the called tool's name
	contentChunks int    // events carrying tokens (reasoning, text or arguments)
	finish        string
	usage         [3]int // prompt, completion, total; -1 when absent
	reasoningUse  int    // reasoning tokens in the usage; -1 when absent
	truth         xsim
}

// checkStream decodes a conforming stream of API a, checks its framing rules and the x-sim
// comment just before the terminal event, and that sent_ns has one stamp per token event.
func checkStream(t *testing.T, body []byte, a api) streamSummary {
	t.Helper()
	evs, err := parseSSE(body)
	if err != nil {
		t.Fatalf("strict SSE parse: %v\n%s", err, body)
	}
	terminal := map[api]string{apiResponses: "response.completed", apiMessages: "message_stop"}[a]
	if n := len(evs); n < 3 || terminal == "" && evs[n-1].data != "[DONE]" || terminal != "" && evs[n-1].name != terminal {
		t.Fatalf("stream does not end with its terminal event:\n%s", body)
	}
	last := evs[len(evs)-2]
	if last.data != "" || last.name != "" || len(last.comments) != 1 || !strings.HasPrefix(last.comments[0], "x-sim ") {
		t.Fatalf("event before the terminal event = %+v; want only the x-sim comment", last)
	}
	s := streamSummary{usage: [3]int{-1, -1, -1}, reasoningUse: -1, truth: groundTruth(t, evs)}
	switch a {
	case apiResponses:
		checkResponses(t, evs, &s)
	case apiMessages:
		checkMessages(t, evs, &s)
	default:
		checkChunks(t, evs[:len(evs)-2], a == apiChat, &s)
	}
	if len(s.truth.SentNs) != s.contentChunks {
		t.Errorf("x-sim sent_ns has %d entries; want one per token event (%d)", len(s.truth.SentNs), s.contentChunks)
	}
	return s
}

// checkChunks decodes the chunks of a completions or chat stream (without x-sim and [DONE]).
func checkChunks(t *testing.T, evs []event, chat bool, s *streamSummary) {
	t.Helper()
	wantObj := "text_completion"
	if chat {
		wantObj = "chat.completion.chunk"
	}
	for i, e := range evs {
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
			if c.Usage.CompletionTokensDetails != nil {
				s.reasoningUse = c.Usage.CompletionTokensDetails.ReasoningTokens
			}
			continue
		}
		if len(c.Choices) != 1 {
			t.Fatalf("event %d has %d choices; want 1", i, len(c.Choices))
		}
		ch := c.Choices[0]
		if s.finish != "" {
			t.Errorf("event %d comes after the finish_reason chunk", i)
		}
		tokens := 0 // how many of text, reasoning and arguments the event carries
		if chat {
			if ch.Delta == nil || ch.Text != nil {
				t.Fatalf("chat event %d lacks delta or has text: %s", i, e.data)
			}
			dl := ch.Delta
			for _, f := range []struct {
				v   *string
				dst *string
			}{{dl.Content, &s.text}, {dl.ReasoningContent, &s.reasoning}, {dl.Reasoning, &s.reasoning}} {
				if f.v != nil && *f.v != "" {
					*f.dst += *f.v
					tokens++
				}
			}
			for _, tc := range dl.ToolCalls {
				if tc.Index != 0 || (tc.ID != "") != (s.tool == "") || (tc.Function.Name != "") != (s.tool == "") {
					t.Errorf("event %d: tool call %+v; want index 0, and the id and name in the first delta only", i, tc)
				}
				if tc.ID != "" && (!strings.HasPrefix(tc.ID, "call_") || tc.Type != "function") {
					t.Errorf("event %d: tool call id %q type %q; want call_..., function", i, tc.ID, tc.Type)
				}
				if tc.Function.Name != "" {
					s.tool = tc.Function.Name
				}
				s.args += tc.Function.Arguments
				tokens++
			}
		} else {
			if ch.Text == nil || ch.Delta != nil {
				t.Fatalf("completion event %d lacks text or has delta: %s", i, e.data)
			}
			if *ch.Text != "" {
				s.text += *ch.Text
				tokens++
			}
		}
		if tokens > 1 {
			t.Errorf("event %d carries %d kinds of tokens; want one per event: %s", i, tokens, e.data)
		}
		s.contentChunks += tokens
		if ch.FinishReason != nil {
			if tokens > 0 {
				t.Errorf("finish chunk carries tokens: %s", e.data)
			}
			s.finish = *ch.FinishReason
		}
	}
	if s.finish == "" {
		t.Error("no chunk with a finish_reason")
	}
}

// conformanceCase is one golden exchange of a successful request.
type conformanceCase struct {
	name      string
	cfg       func(*Config)
	api       api
	body      string
	stream    bool
	prompt    int
	tokens    int    // output tokens, reasoning included
	reasoning int    // of which reasoning
	tool      string // the tool the answer calls
	usage     bool   // chat, completions: stream_options.include_usage
	nChunks   int    // events carrying tokens
}

var (
	k3        = func(c *Config) { c.TokensPerChunk = 3 }
	reason3   = func(c *Config) { c.ReasoningTokens = 3 }
	images7   = func(c *Config) { c.ImageTokens = 7 }
	toolsJSON = `"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}],"tool_choice":"auto"`
)

var conformanceCases = []conformanceCase{
	{name: "completions-stream-usage", api: apiCompletions, stream: true, usage: true, prompt: 3, tokens: 5, nChunks: 5,
		body: `{"model":"sim","prompt":"one two  three","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "completions-stream", api: apiCompletions, stream: true, prompt: 2, tokens: 2, nChunks: 2,
		body: `{"model":"other","prompt":["a b"],"max_tokens":2,"stream":true,"ignore_eos":true}`},
	{name: "completions-stream-token-ids", api: apiCompletions, stream: true, usage: true, prompt: 4, tokens: 1, nChunks: 1,
		body: `{"model":"sim","prompt":[1,2,3,4],"max_tokens":1,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "completions-stream-k3", cfg: k3, api: apiCompletions, stream: true, usage: true, prompt: 1, tokens: 8, nChunks: 4,
		body: `{"model":"sim","prompt":"x","max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`},
	// completions never reason, whatever the flag
	{name: "completions-stream-reasoning-flag", cfg: reason3, api: apiCompletions, stream: true, usage: true, prompt: 1, tokens: 4, nChunks: 4,
		body: `{"model":"sim","prompt":"x","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat-stream-usage", api: apiChat, stream: true, usage: true, prompt: 6, tokens: 3, nChunks: 3,
		body: `{"model":"sim","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there, sim"}]},{"role":"assistant","content":null},{"role":"user","content":"go"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat-stream-default-max", cfg: func(c *Config) { c.DefaultMaxTokens = 4 }, api: apiChat, stream: true, prompt: 1, tokens: 4, nChunks: 4,
		body: `{"model":"sim","messages":[{"role":"user","content":"hi"}],"stream":true}`},
	{name: "chat-stream-reasoning", cfg: reason3, api: apiChat, stream: true, usage: true, prompt: 1, tokens: 5, reasoning: 3, nChunks: 5,
		body: `{"model":"sim","messages":[{"role":"user","content":"think"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat-stream-reasoning-field", cfg: func(c *Config) { c.ReasoningTokens, c.ReasoningField = 2, "reasoning" }, api: apiChat, stream: true, prompt: 1, tokens: 3, reasoning: 2, nChunks: 3,
		body: `{"model":"sim","messages":[{"role":"user","content":"think"}],"max_tokens":3,"stream":true}`},
	// the reasoning takes at most limit − 1 tokens: one answer token remains
	{name: "chat-stream-reasoning-capped", cfg: func(c *Config) { c.ReasoningTokens = 50 }, api: apiChat, stream: true, usage: true, prompt: 1, tokens: 3, reasoning: 2, nChunks: 3,
		body: `{"model":"sim","messages":[{"role":"user","content":"think"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`},
	// K = 3 with 2 reasoning tokens: chunk 1 holds tokens 1–3 and is sent as two deltas
	{name: "chat-stream-reasoning-k3", cfg: func(c *Config) { c.ReasoningTokens, c.TokensPerChunk = 2, 3 }, api: apiChat, stream: true, usage: true, prompt: 1, tokens: 7, reasoning: 2, nChunks: 4,
		body: `{"model":"sim","messages":[{"role":"user","content":"think"}],"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "chat-stream-tools", api: apiChat, stream: true, usage: true, prompt: 3, tokens: 4, tool: "get_weather", nChunks: 4,
		body: `{"model":"sim","messages":[{"role":"user","content":"weather in Paris"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},` + toolsJSON + `}`},
	{name: "chat-stream-reasoning-tools", cfg: reason3, api: apiChat, stream: true, prompt: 3, tokens: 5, reasoning: 3, tool: "get_weather", nChunks: 5,
		body: `{"model":"sim","messages":[{"role":"user","content":"weather in Paris"}],"max_tokens":5,"stream":true,` + toolsJSON + `}`},
	// tool_choice none: a text answer
	{name: "chat-stream-tool-choice-none", api: apiChat, stream: true, prompt: 1, tokens: 2, nChunks: 2,
		body: `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`},
	// every image is ImageTokens prompt tokens: 3 words + 2 × 7
	{name: "chat-stream-images", cfg: images7, api: apiChat, stream: true, usage: true, prompt: 17, tokens: 2, nChunks: 2,
		body: `{"model":"sim","messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`},
	{name: "completions-json", api: apiCompletions, prompt: 3, tokens: 4,
		body: `{"model":"sim","prompt":"one two three","max_tokens":4}`},
	{name: "chat-json", api: apiChat, prompt: 2, tokens: 3,
		body: `{"model":"sim","messages":[{"role":"user","content":"hi there"}],"max_completion_tokens":3}`},
	{name: "chat-json-reasoning-tools", cfg: reason3, api: apiChat, prompt: 3, tokens: 5, reasoning: 3, tool: "get_weather",
		body: `{"model":"sim","messages":[{"role":"user","content":"weather in Paris"}],"max_tokens":5,` + toolsJSON + `}`},
	{name: "responses-stream", api: apiResponses, stream: true, prompt: 4, tokens: 3, nChunks: 3,
		body: `{"model":"sim","input":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"input_text","text":"hello there"}]}],"max_output_tokens":3,"stream":true}`},
	{name: "responses-stream-reasoning", cfg: reason3, api: apiResponses, stream: true, prompt: 3, tokens: 5, reasoning: 3, nChunks: 5,
		body: `{"model":"sim","instructions":"be brief","input":"think","max_output_tokens":5,"stream":true}`},
	{name: "responses-stream-tools", cfg: func(c *Config) { c.ReasoningTokens, c.ImageTokens = 2, 7 }, api: apiResponses, stream: true, prompt: 10, tokens: 4, reasoning: 2, tool: "lookup", nChunks: 4,
		body: `{"model":"sim","input":[{"role":"user","content":[{"type":"input_text","text":"find this"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},{"type":"function_call_output","call_id":"c1","output":"none"}],"max_output_tokens":4,"stream":true,"tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}}]}`},
	{name: "responses-json", cfg: reason3, api: apiResponses, prompt: 1, tokens: 5, reasoning: 3,
		body: `{"model":"sim","input":"think","max_output_tokens":5}`},
	{name: "messages-stream", api: apiMessages, stream: true, prompt: 4, tokens: 3, nChunks: 3,
		body: `{"model":"sim","system":"be brief","messages":[{"role":"user","content":"hello there"}],"max_tokens":3,"stream":true}`},
	{name: "messages-stream-thinking", cfg: reason3, api: apiMessages, stream: true, prompt: 1, tokens: 5, reasoning: 3, nChunks: 5,
		body: `{"model":"sim","messages":[{"role":"user","content":[{"type":"text","text":"think"}]}],"max_tokens":5,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024}}`},
	{name: "messages-stream-tools", cfg: func(c *Config) { c.ReasoningTokens, c.ImageTokens = 2, 7 }, api: apiMessages, stream: true, prompt: 12, tokens: 4, reasoning: 2, tool: "lookup", nChunks: 4,
		body: `{"model":"sim","system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":[{"type":"text","text":"find this"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"lookup","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"nothing"}]}],"max_tokens":4,"stream":true,"tools":[{"name":"lookup","input_schema":{"type":"object"}}]}`},
	{name: "messages-json", cfg: reason3, api: apiMessages, prompt: 1, tokens: 5, reasoning: 3, tool: "lookup",
		body: `{"model":"sim","messages":[{"role":"user","content":"find"}],"max_tokens":5,"tools":[{"name":"lookup","input_schema":{"type":"object"}}]}`},
}

func TestConformance(t *testing.T) {
	for _, tt := range conformanceCases {
		t.Run(tt.name, func(t *testing.T) {
			cfg := zeroConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, addr := startServer(t, cfg)
			w := rawPost(t, addr, apiPaths[tt.api], tt.body)
			if w.status != 200 || !w.complete {
				t.Fatalf("status %d complete %v; want 200, complete:\n%s%s", w.status, w.complete, w.head, w.body)
			}
			golden(t, tt.name, normalize(w))
			if !tt.stream {
				checkOutput(t, tt, checkFull(t, w, tt.api))
				return
			}
			s := checkStream(t, w.body, tt.api)
			checkOutput(t, tt, s)
			if s.contentChunks != tt.nChunks {
				t.Errorf("token events = %d; want %d", s.contentChunks, tt.nChunks)
			}
		})
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
	{"bad-image-part", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, nil, 400},
	{"bad-tool-name", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`, nil, 400},
	{"bad-responses-input", "/v1/responses", `{"model":"sim","max_output_tokens":3}`, nil, 400},
	{"bad-responses-max-output-tokens", "/v1/responses", `{"model":"sim","input":"hi","max_output_tokens":0}`, nil, 400},
	{"bad-messages-max-tokens", "/v1/messages", `{"model":"sim","messages":[{"role":"user","content":"hi"}]}`, nil, 400},
	{"bad-messages-invalid-json", "/v1/messages", `{"model":`, nil, 400},
	{"bad-messages-unknown-model", "/v1/messages", `{"model":"claude-9","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, nil, 404},
	{"bad-embeddings-empty", "/v1/embeddings", `{"model":"sim","input":[]}`, nil, 400},
	{"bad-embeddings-empty-string", "/v1/embeddings", `{"model":"sim","input":["a"," "]}`, nil, 400},
	{"bad-embeddings-encoding", "/v1/embeddings", `{"model":"sim","input":"a","encoding_format":"hex"}`, nil, 400},
	{"bad-embeddings-dimensions", "/v1/embeddings", `{"model":"sim","input":"a","dimensions":0}`, nil, 400},
	// one input of 32,769 token ids, over the default max-model-len
	{"bad-embeddings-too-long", "/v1/embeddings", `{"model":"sim","input":[[` + strings.Repeat("1,", 32768) + `1]]}`, nil, 400},
	{"bad-rerank-query", "/v1/rerank", `{"model":"sim","documents":["a"]}`, nil, 400},
	{"bad-rerank-documents", "/v1/rerank", `{"model":"sim","query":"q","documents":[]}`, nil, 400},
	{"bad-rerank-document", "/v1/rerank", `{"model":"sim","query":"q","documents":[{"title":"a"}]}`, nil, 400},
	{"bad-rerank-top-n", "/v1/rerank", `{"model":"sim","query":"q","documents":["a"],"top_n":-1}`, nil, 400},
	{"bad-score-pairs", "/v1/score", `{"model":"sim","text_1":["a","b"],"text_2":["c","d","e"]}`, nil, 400},
	{"bad-tei-rerank-texts", "/rerank", `{"model":"sim","query":"q"}`, nil, 400},
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
			if tt.path == "/rerank" {
				checkTEIErrorBody(t, w)
			} else {
				checkErrorBody(t, w, tt.path == "/v1/messages")
			}
			golden(t, tt.name, normalize(w))
		})
	}
}

// checkErrorBody checks an error response's body: OpenAI's {"error":{"message","type","param",
// "code"}} with the status as code, or Anthropic's {"type":"error","error":{"type","message"}}
// with the type of the status.
func checkErrorBody(t *testing.T, w wire, anthropic bool) {
	t.Helper()
	if anthropic {
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		strictDecode(t, string(w.body), &e)
		want := map[int]string{400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 503: "overloaded_error"}[w.status]
		if e.Type != "error" || e.Error.Type != want || e.Error.Message == "" {
			t.Errorf("error body %s; want an Anthropic error of type %s", w.body, want)
		}
		return
	}
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    int     `json:"code"`
		} `json:"error"`
	}
	strictDecode(t, string(w.body), &e)
	if e.Error.Message == "" || e.Error.Code != w.status || e.Error.Type == "" {
		t.Errorf("error body %s; want an OpenAI-style error with code %d", w.body, w.status)
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
			s := checkStream(t, w.body, apiCompletions)
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
			checkStream(t, w.body, apiCompletions)
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
