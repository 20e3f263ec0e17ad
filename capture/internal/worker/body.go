package worker

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/internal/secret"
	"github.com/wirebench/wirebench/schemas"
)

// bodyBuilder turns a prompt into a request body for the target's API (docs/apis.md has each
// format). The constant part (model, stream options, tools, extra_body) is encoded once; per
// request only the output limit and the prompt, messages or inputs are appended.
type bodyBuilder struct {
	api       string
	maxTokens bool   // send the output limit (target.max_tokens policy "workload", the default)
	topN      int    // rerank: top_n sent with every request (workload.documents.top_n); 0: none
	prefix    []byte // `{"model":...,"stream":true,...` up to and excluding the per-request fields
	// rest is prefix after the model: `,"stream":true,...`; byModel holds the prefix of each
	// model a schedule row names (target.models).
	rest    []byte
	byModel map[string][]byte
	// urls maps each images_json entry seen by prepareImages to the URL sent: a synthetic
	// reference's rendered data: URL, any other entry itself.
	urls map[string]string
}

func newBodyBuilder(t schemas.Target, tools *schemas.Tools) (*bodyBuilder, error) {
	api := t.API
	if api == "" {
		api = schemas.APICompletions
	}
	switch api {
	case schemas.APICompletions, schemas.APIChat, schemas.APIResponses, schemas.APIMessages, schemas.APIEmbeddings, schemas.APIRerank, schemas.APIScore, schemas.APITEIRerank:
	default:
		return nil, fmt.Errorf("target.api: %q is not completions, chat, responses, messages, embeddings, rerank, score or tei_rerank", api)
	}
	fields, err := constantFields(api, t, tools)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	if schemas.OutputAPI(api) {
		b.WriteString(`,"stream":true`)
	}
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
	case "", schemas.MaxTokensWorkload:
		sendMax = schemas.OutputAPI(api)
	case schemas.MaxTokensNone:
		if api == schemas.APIMessages {
			return nil, fmt.Errorf("target.max_tokens: none: the messages API requires max_tokens")
		}
	default:
		return nil, fmt.Errorf("target.max_tokens: %q is not workload or none", t.MaxTokens)
	}
	bb := &bodyBuilder{api: api, maxTokens: sendMax, rest: []byte(b.String()), byModel: map[string][]byte{}, urls: map[string]string{}}
	bb.prefix = bb.addModel(t.Model)
	return bb, nil
}

// addModel builds the constant prefix of requests to model: `{"model":"M"` and the rest. The
// worker adds every model of its schedule rows before building bodies, so build only reads.
func (bb *bodyBuilder) addModel(model string) []byte {
	if p, ok := bb.byModel[model]; ok {
		return p
	}
	m, _ := json.Marshal(model)
	p := append(append([]byte(`{"model":`), m...), bb.rest...)
	bb.byModel[model] = p
	return p
}

// prefixOf returns the prefix of requests to model (a schedule row's; empty: target.model).
func (bb *bodyBuilder) prefixOf(model string) ([]byte, error) {
	if model == "" {
		return bb.prefix, nil
	}
	if p, ok := bb.byModel[model]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("model %q was not added to the body builder", model)
}

// constantFields returns the body fields every request of the API carries besides model and
// stream: stream options (completions, chat: usage in the stream), ignore_eos, the tools,
// embeddings' encoding_format, then target.extra_body, which may override all but the fields
// schemas.FixedBodyKey names.
func constantFields(api string, t schemas.Target, tools *schemas.Tools) (map[string]any, error) {
	fields := map[string]any{}
	switch api {
	case schemas.APICompletions, schemas.APIChat:
		fields["stream_options"] = map[string]any{"include_usage": true}
	case schemas.APIEmbeddings:
		fields["encoding_format"] = "float"
	}
	if t.IgnoreEOS && schemas.OutputAPI(api) {
		fields["ignore_eos"] = true
	}
	if tools != nil {
		fields["tools"], fields["tool_choice"] = toolFields(api, tools)
	}
	for k, v := range t.ExtraBody {
		if schemas.FixedBodyKey(api, tools != nil, k) {
			return nil, fmt.Errorf("target.extra_body.%s: capture sets %s itself", k, k)
		}
		fields[k] = v
	}
	return fields, nil
}

// toolFields returns workload.tools as the API's tools array and tool_choice: count functions
// tool_0, tool_1, ... taking one string argument "text".
func toolFields(api string, tt *schemas.Tools) (tools []any, choice any) {
	params := map[string]any{
		"type":       "object",
		"properties": map[string]any{"text": map[string]any{"type": "string", "description": "what to pass on"}},
		"required":   []string{"text"},
	}
	for i := range tt.Count {
		name := "tool_" + strconv.Itoa(i)
		desc := fmt.Sprintf("Synthetic tool %d of the wirebench tools workload: takes a text.", i)
		switch api {
		case schemas.APIChat:
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": name, "description": desc, "parameters": params}})
		case schemas.APIResponses:
			tools = append(tools, map[string]any{"type": "function", "name": name, "description": desc, "parameters": params})
		default: // messages
			tools = append(tools, map[string]any{"name": name, "description": desc, "input_schema": params})
		}
	}
	if api != schemas.APIMessages {
		return tools, tt.Choice
	}
	if tt.Choice == "required" {
		return tools, map[string]any{"type": "any"}
	}
	return tools, map[string]any{"type": tt.Choice}
}

// prepareImages resolves the entries of a prompt's images_json that were not seen yet
// (synthetic references are rendered: a few milliseconds each, once per distinct image).
func (bb *bodyBuilder) prepareImages(imagesJSON string) error {
	if imagesJSON == "" {
		return nil
	}
	var refs []string
	if err := json.Unmarshal([]byte(imagesJSON), &refs); err != nil {
		return fmt.Errorf("prompt images_json is not a JSON array of strings: %w", err)
	}
	for _, r := range refs {
		if _, ok := bb.urls[r]; ok {
			continue
		}
		u, err := resolveImage(r)
		if err != nil {
			return err
		}
		bb.urls[r] = u
	}
	return nil
}

// history is what a later conversation turn builds on: for the message APIs the JSON message
// list without its brackets, for completions the prompt text.
//
// build returns the body for one request and the history a following turn would extend. For a
// first turn, prev is nil and p.MessagesJSON (a JSON array, maybe empty) precedes the user text.
// For a later turn, prev is the history of the turn it follows and answer that turn's real output;
// p.MessagesJSON is then ignored (the earlier turns are in prev). Images must have been prepared.
func (bb *bodyBuilder) build(model string, maxTokens int32, p *schemas.Prompt, prev []byte, answer string) (body, hist []byte, err error) {
	prefix, err := bb.prefixOf(model)
	if err != nil {
		return nil, nil, err
	}
	switch bb.api {
	case schemas.APIEmbeddings:
		body, err = bb.embeddings(prefix, p)
		return body, nil, err
	case schemas.APIRerank, schemas.APIScore, schemas.APITEIRerank:
		body, err = bb.rank(prefix, p)
		return body, nil, err
	}
	if bb.api == schemas.APICompletions {
		if prev != nil {
			hist = append(hist, prev...)
			hist = append(hist, answer...)
			hist = append(hist, "\n\n"...)
		}
		hist = append(hist, p.Text...)
		body = bb.start(prefix, len(hist), maxTokens, "max_tokens")
		body = append(body, `,"prompt":`...)
		body = appendJSONString(body, string(hist))
		return append(body, '}'), hist, nil
	}
	switch {
	case prev != nil:
		hist = append(hist, prev...)
		hist = appendMessage(hist, "assistant", answer)
	case strings.TrimSpace(p.MessagesJSON) != "":
		inner, err := arrayInner(p.MessagesJSON)
		if err != nil {
			return nil, nil, err
		}
		hist = append(hist, inner...)
	}
	if hist, err = bb.appendUser(hist, p.Text, p.ImagesJSON); err != nil {
		return nil, nil, err
	}
	body, err = bb.messages(prefix, hist, maxTokens)
	return body, hist, err
}

// start begins a body with the constant prefix and the output limit under the API's name.
func (bb *bodyBuilder) start(prefix []byte, n int, maxTokens int32, limitKey string) []byte {
	body := make([]byte, 0, len(prefix)+n+64)
	body = append(body, prefix...)
	if bb.maxTokens {
		body = append(body, `,"`...)
		body = append(body, limitKey...)
		body = append(body, `":`...)
		body = strconv.AppendInt(body, int64(maxTokens), 10)
	}
	return body
}

// messages assembles a chat, responses or messages body around the message list hist.
func (bb *bodyBuilder) messages(prefix, hist []byte, maxTokens int32) ([]byte, error) {
	switch bb.api {
	case schemas.APIResponses:
		body := bb.start(prefix, len(hist), maxTokens, "max_output_tokens")
		body = append(body, `,"input":[`...)
		body = append(body, hist...)
		return append(body, "]}"...), nil
	case schemas.APIMessages:
		system, rest, err := splitSystem(hist)
		if err != nil {
			return nil, err
		}
		body := bb.start(prefix, len(hist), maxTokens, "max_tokens")
		if system != "" {
			body = append(body, `,"system":`...)
			body = appendJSONString(body, system)
		}
		body = append(body, `,"messages":[`...)
		body = append(body, rest...)
		return append(body, "]}"...), nil
	}
	body := bb.start(prefix, len(hist), maxTokens, "max_tokens")
	body = append(body, `,"messages":[`...)
	body = append(body, hist...)
	return append(body, "]}"...), nil
}

// embeddings builds an embeddings body: the prompt's batch of inputs, or its text.
func (bb *bodyBuilder) embeddings(prefix []byte, p *schemas.Prompt) ([]byte, error) {
	in := p.InputsJSON
	if in != "" && !json.Valid([]byte(in)) {
		return nil, fmt.Errorf("prompt inputs_json is not valid JSON")
	}
	body := bb.start(prefix, len(in)+len(p.Text), 0, "")
	body = append(body, `,"input":`...)
	if in != "" {
		body = append(body, in...)
	} else {
		body = appendJSONString(body, p.Text)
	}
	return append(body, '}'), nil
}

// rankKeys are the body keys of the query and the documents, by ranking API.
var rankKeys = map[string][2]string{
	schemas.APIRerank:    {`,"query":`, `,"documents":`}, // vLLM /v1/rerank (Cohere, Jina)
	schemas.APIScore:     {`,"text_1":`, `,"text_2":`},   // vLLM /v1/score
	schemas.APITEIRerank: {`,"query":`, `,"texts":`},     // TEI /rerank
}

// rank builds a ranking body: the prompt's text as the query and its inputs_json as the
// documents.
func (bb *bodyBuilder) rank(prefix []byte, p *schemas.Prompt) ([]byte, error) {
	in := p.InputsJSON
	if in == "" || !json.Valid([]byte(in)) {
		return nil, fmt.Errorf("prompt %d: inputs_json holds no JSON array of documents", p.PromptID)
	}
	k := rankKeys[bb.api]
	body := bb.start(prefix, len(in)+len(p.Text)+32, 0, "")
	body = append(body, k[0]...)
	body = appendJSONString(body, p.Text)
	body = append(body, k[1]...)
	body = append(body, in...)
	if bb.topN > 0 {
		body = append(body, `,"top_n":`...)
		body = strconv.AppendInt(body, int64(bb.topN), 10)
	}
	return append(body, '}'), nil
}

// answers is the number of scores a ranking answer to docs documents holds: all of them, or
// rerank's top_n when fewer.
func (bb *bodyBuilder) answers(docs int32) int32 {
	if bb.topN > 0 {
		return min(docs, int32(bb.topN))
	}
	return docs
}

// appendUser appends the user message: plain text, or with images the API's content parts.
func (bb *bodyBuilder) appendUser(h []byte, text, imagesJSON string) ([]byte, error) {
	if imagesJSON == "" {
		return appendMessage(h, "user", text), nil
	}
	var refs []string
	if err := json.Unmarshal([]byte(imagesJSON), &refs); err != nil {
		return nil, fmt.Errorf("prompt images_json is not a JSON array of strings: %w", err)
	}
	if len(h) > 0 {
		h = append(h, ',')
	}
	h = append(h, `{"role":"user","content":[`...)
	textPart := `{"type":"text","text":`
	if bb.api == schemas.APIResponses {
		textPart = `{"type":"input_text","text":`
	}
	h = append(h, textPart...)
	h = appendJSONString(h, text)
	h = append(h, '}')
	for _, r := range refs {
		u, ok := bb.urls[r]
		if !ok {
			return nil, fmt.Errorf("image %.60q was not prepared", r)
		}
		h = append(h, ',')
		h = bb.appendImage(h, u)
	}
	return append(h, "]}"...), nil
}

// appendImage appends one image content part for url (http(s) or data:).
func (bb *bodyBuilder) appendImage(h []byte, url string) []byte {
	switch bb.api {
	case schemas.APIResponses:
		h = append(h, `{"type":"input_image","image_url":`...)
		h = appendJSONString(h, url)
		return append(h, '}')
	case schemas.APIMessages:
		if media, data, ok := splitDataURL(url); ok {
			h = append(h, `{"type":"image","source":{"type":"base64","media_type":`...)
			h = appendJSONString(h, media)
			h = append(h, `,"data":`...)
			h = appendJSONString(h, data)
			return append(h, "}}"...)
		}
		h = append(h, `{"type":"image","source":{"type":"url","url":`...)
		h = appendJSONString(h, url)
		return append(h, "}}"...)
	}
	h = append(h, `{"type":"image_url","image_url":{"url":`...)
	h = appendJSONString(h, url)
	return append(h, "}}"...)
}

// splitDataURL splits data:MEDIA;base64,DATA.
func splitDataURL(u string) (media, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	media, data, ok = strings.Cut(rest, ";base64,")
	return media, data, ok
}

// splitSystem takes the leading system messages out of a message list (Anthropic's messages
// carry the system prompt as a field of its own) and returns their text joined by blank lines
// and the rest of the list.
func splitSystem(hist []byte) (system string, rest []byte, err error) {
	if !strings.HasPrefix(string(hist), `{"role":"system"`) {
		return "", hist, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(append(append([]byte{'['}, hist...), ']'), &msgs); err != nil {
		return "", nil, fmt.Errorf("messages: %w", err)
	}
	var parts []string
	i := 0
	for ; i < len(msgs); i++ {
		var m struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		if json.Unmarshal(msgs[i], &m) != nil || m.Role != "system" {
			break
		}
		parts = append(parts, m.Content)
	}
	for k, m := range msgs[i:] {
		if k > 0 {
			rest = append(rest, ',')
		}
		rest = append(rest, m...)
	}
	return strings.Join(parts, "\n\n"), rest, nil
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

// endpoint returns the endpoint for the target's API under base.
func endpoint(base, api string) string {
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	switch api {
	case schemas.APIChat:
		return base + "/chat/completions"
	case schemas.APIResponses, schemas.APIMessages, schemas.APIEmbeddings, schemas.APIRerank, schemas.APIScore:
		return base + "/" + api
	case schemas.APITEIRerank: // TEI serves /rerank at its root, not under /v1
		return strings.TrimSuffix(base, "/v1") + "/rerank"
	}
	return base + "/completions"
}

// anthropicVersion is the anthropic-version header the messages API is sent with.
const anthropicVersion = "2023-06-01"

// requestHeader builds the shared, read-only header of every request: JSON content type, the
// messages API's anthropic-version, then the target's own (secret.Resolve: its headers with
// their ${VAR} filled in, the API key of api_key_env), which override those.
func requestHeader(t schemas.Target) (http.Header, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	switch t.API {
	case "embeddings", "rerank", "score", "tei_rerank":
		h.Set("Accept", "application/json")
	case "messages":
		h.Set("anthropic-version", anthropicVersion)
	}
	own, err := secret.Resolve(t)
	if err != nil {
		return nil, err
	}
	maps.Copy(h, own)
	return h, nil
}
