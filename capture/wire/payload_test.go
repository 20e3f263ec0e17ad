package wire

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestParsePayload(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want payload // Text compared as string below
		text string
		err  bool
	}{
		{"chat content", `{"choices":[{"index":0,"delta":{"content":"héllo"},"finish_reason":null}]}`,
			payload{Content: 6, Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "héllo", false},
		{"escapes", `{"choices":[{"delta":{"content":"a\n\"b\" \u00e9 \ud83d\ude00 \/"}}]}`,
			payload{Content: 15, Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "a\n\"b\" é 😀 /", false},
		{"reasoning", `{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}`,
			payload{Reasoning: 5, Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "", false},
		{"reasoning field", `{"choices":[{"delta":{"reasoning":"hm"}}]}`,
			payload{Reasoning: 2, Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "", false},
		{"tool calls", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":""}},{"index":1}]}}]}`,
			payload{ToolCalls: 2, Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "", false},
		{"completions text and finish", `{"choices":[{"text":"abc","finish_reason":"length"}]}`,
			payload{Content: 3, Choices: 1, Tokens: -1, FinishReason: []byte("length"), Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "abc", false},
		{"token ids", `{"choices":[{"delta":{"content":"ab"},"token_ids":[1,2,3]}]}`,
			payload{Content: 2, Choices: 1, Tokens: 3, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "ab", false},
		{"logprobs count tokens", `{"choices":[{"delta":{"content":"ab"},"logprobs":{"content":[{"token":"a","logprob":-0.1},{"token":"b","logprob":-1e-3}]}}]}`,
			payload{Content: 2, Choices: 1, Tokens: 2, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "ab", false},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,"prompt_tokens_details":{"cached_tokens":4}}}`,
			payload{Tokens: -1, HasUsage: true, Prompt: 10, Total: 30, MaxIndex: -1, Completion: 20, Cached: 4, ReasoningTok: -1}, "", false},
		{"null usage", `{"choices":[{"delta":{}}],"usage":null}`,
			payload{Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "", false},
		{"error object", `{"error":{"message":"boom","type":"server_error"}}`,
			payload{Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1, Error: []byte(`{"message":"boom","type":"server_error"}`)}, "", false},
		{"unknown fields skipped", `{"x":[1,{"y":true,"z":null},"s"],"choices":[{"delta":{"content":"a","extra":{"k":[1.5e3]}}}],"n":-2.5}`,
			payload{Content: 1, Choices: 1, Tokens: -1, Prompt: -1, Total: -1, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "a", false},
		{"truncated", `{"choices":[{"delta":{"content":"a`, payload{}, "", true},
		{"trailing garbage", `{"choices":[]} x`, payload{}, "", true},
		{"not an object", `[DONE]`, payload{}, "", true},
		{"bare minus", `{"n":-}`, payload{}, "", true},
		{"leading zero", `{"n":01}`, payload{}, "", true},
		{"no fraction digits", `{"n":1.}`, payload{}, "", true},
		{"no exponent digits", `{"n":1e+}`, payload{}, "", true},
		{"unknown escape", `{"s":"a\q"}`, payload{}, "", true},
		{"short unicode escape", `{"s":"\u12"}`, payload{}, "", true},
		{"non-hex unicode escape", `{"s":"\u12g4"}`, payload{}, "", true},
		{"integer of a usage with fraction and exponent", `{"usage":{"prompt_tokens":-0.5e+3,"total_tokens":12.75}}`,
			payload{Tokens: -1, HasUsage: true, Prompt: 0, Total: 12, MaxIndex: -1, Completion: -1, Cached: -1, ReasoningTok: -1}, "", false},
	}
	for _, tt := range tests {
		var p payload
		err := parsePayload([]byte(tt.in), &p, true)
		if (err != nil) != tt.err {
			t.Errorf("%s: parsePayload(%s) error = %v; want error %v", tt.name, tt.in, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		text := string(p.Text)
		p.Text, tt.want.Text = nil, nil
		gotJSON, _ := json.Marshal(p)
		wantJSON, _ := json.Marshal(tt.want)
		if string(gotJSON) != string(wantJSON) || text != tt.text {
			t.Errorf("%s: parsePayload(%s) = %s text %q; want %s text %q", tt.name, tt.in, gotJSON, text, wantJSON, tt.text)
		}
	}
}

// FuzzParsePayload checks that the payload scanner never panics, that it accepts every object
// encoding/json accepts, and that it counts at least the content bytes encoding/json decodes.
func FuzzParsePayload(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"content":"a\u00e9\n"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"error":{"message":"x"}}`))
	f.Add([]byte(`{"choices":[{"text":"\ud800"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p payload
		err := parsePayload(b, &p, true)
		var generic map[string]any
		refErr := json.Unmarshal(b, &generic)
		if refErr != nil || generic == nil {
			return // the scanner is lenient about what it skips; only valid JSON objects are compared ("null" unmarshals into a map too)
		}
		if !utf8.Valid(b) {
			return // encoding/json turns each invalid byte into U+FFFD (3 bytes); content_bytes counts the bytes received
		}
		if err != nil {
			t.Fatalf("parsePayload(%q) = %v; encoding/json accepts it", b, err)
		}
		// The reference walks the decoded map by exact keys: JSON keys are case-sensitive, and
		// encoding/json's struct fields would match "Content" or "deltA" too.
		choices, _ := generic["choices"].([]any)
		want := 0
		for _, c := range choices {
			c, _ := c.(map[string]any)
			delta, _ := c["delta"].(map[string]any)
			if content, ok := delta["content"].(string); ok {
				want += len(content)
			}
		}
		// Only delta.content is compared; text and message also count as content.
		if p.Content < want {
			t.Fatalf("parsePayload(%q).Content = %d; want >= %d (encoding/json)", b, p.Content, want)
		}
	})
}
