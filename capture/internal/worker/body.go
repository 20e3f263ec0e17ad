package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// bodyBuilder turns a prompt into an OpenAI-compatible streaming request body. The constant part
// (model, stream options, extra_body) is encoded once; per request only max_tokens and the prompt
// or messages are appended.
type bodyBuilder struct {
	chat      bool
	maxTokens bool   // send max_tokens (target.max_tokens policy "workload", the default)
	prefix    []byte // `{"model":...,"stream":true,...` up to and excluding the per-request fields
}

// fixedKeys are set by capture and may not be overridden by extra_body.
var fixedKeys = map[string]bool{"model": true, "stream": true, "max_tokens": true, "prompt": true, "messages": true}

func newBodyBuilder(t schemas.Target) (*bodyBuilder, error) {
	api := t.API
	if api == "" {
		api = "completions"
	}
	if api != "completions" && api != "chat" {
		return nil, fmt.Errorf("target.api: %q is not completions or chat", api)
	}
	fields := map[string]any{
		"stream_options": map[string]any{"include_usage": true},
	}
	if t.IgnoreEOS {
		fields["ignore_eos"] = true
	}
	for k, v := range t.ExtraBody {
		if fixedKeys[k] {
			return nil, fmt.Errorf("target.extra_body.%s: capture sets %s itself", k, k)
		}
		fields[k] = v
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(`{"model":`)
	m, _ := json.Marshal(t.Model)
	b.Write(m)
	b.WriteString(`,"stream":true`)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(fields[k])
		if err != nil {
			return nil, fmt.Errorf("target.extra_body.%s: %w", k, err)
		}
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	var sendMax bool
	switch t.MaxTokens {
	case "", "workload":
		sendMax = true
	case "none":
	default:
		return nil, fmt.Errorf("target.max_tokens: %q is not workload or none", t.MaxTokens)
	}
	return &bodyBuilder{chat: api == "chat", maxTokens: sendMax, prefix: []byte(b.String())}, nil
}

// history is what a later conversation turn builds on: for chat the JSON message list without
// its brackets, for completions the prompt text.
//
// build returns the body for one request and the history a following turn would extend. For a
// first turn, prev is nil and messagesJSON (a JSON array, maybe empty) precedes the user text.
// For a later turn, prev is the history of the turn it follows and answer that turn's real output;
// messagesJSON is then ignored (the earlier turns are in prev).
func (bb *bodyBuilder) build(maxTokens int32, text, messagesJSON string, prev []byte, answer string) (body, hist []byte, err error) {
	var h []byte
	if bb.chat {
		switch {
		case prev != nil:
			h = append(h, prev...)
			h = appendMessage(h, "assistant", answer)
		case strings.TrimSpace(messagesJSON) != "":
			inner, err := arrayInner(messagesJSON)
			if err != nil {
				return nil, nil, err
			}
			h = append(h, inner...)
		}
		h = appendMessage(h, "user", text)
	} else {
		if prev != nil {
			h = append(h, prev...)
			h = append(h, answer...)
			h = append(h, "\n\n"...)
		}
		h = append(h, text...)
	}
	body = make([]byte, 0, len(bb.prefix)+len(h)+48)
	body = append(body, bb.prefix...)
	if bb.maxTokens {
		body = append(body, `,"max_tokens":`...)
		body = strconv.AppendInt(body, int64(maxTokens), 10)
	}
	if bb.chat {
		body = append(body, `,"messages":[`...)
		body = append(body, h...)
		body = append(body, "]}"...)
	} else {
		body = append(body, `,"prompt":`...)
		body = appendJSONString(body, string(h))
		body = append(body, '}')
	}
	return body, h, nil
}

func appendMessage(h []byte, role, content string) []byte {
	if len(h) > 0 {
		h = append(h, ',')
	}
	h = append(h, `{"role":"`...)
	h = append(h, role...)
	h = append(h, `","content":`...)
	h = appendJSONString(h, content)
	return append(h, '}')
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // never fails for a string
	return append(b, enc...)
}

// arrayInner checks that s is a JSON array and returns its elements without the brackets.
func arrayInner(s string) ([]byte, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		return nil, fmt.Errorf("prompt messages_json is not a JSON array: %w", err)
	}
	var out []byte
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return out, nil
}

// endpoint returns the streaming endpoint for the target's API under base.
func endpoint(base, api string) string {
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	if api == "chat" {
		return base + "/chat/completions"
	}
	return base + "/completions"
}

// requestHeader builds the shared, read-only header of every request: JSON content type, the
// target's extra headers and, when target.api_key_env names a set variable, the bearer token.
func requestHeader(t schemas.Target) (http.Header, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	for k, v := range t.Headers {
		h.Set(k, v)
	}
	if t.APIKeyEnv != "" {
		key, ok := os.LookupEnv(t.APIKeyEnv)
		if !ok || key == "" {
			return nil, fmt.Errorf("target.api_key_env: environment variable %s is not set", t.APIKeyEnv)
		}
		h.Set("Authorization", "Bearer "+key)
	}
	return h, nil
}
