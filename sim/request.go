package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"strconv"
	"unsafe"

	gojson "github.com/goccy/go-json"
)

// api is the wire format of a request: its endpoint, body, response events and errors.
type api uint8

const (
	apiCompletions api = iota // POST /v1/completions (OpenAI completions)
	apiChat                   // POST /v1/chat/completions (OpenAI chat)
	apiResponses              // POST /v1/responses (OpenAI Responses)
	apiMessages               // POST /v1/messages (Anthropic Messages)
	apiEmbeddings             // POST /v1/embeddings (OpenAI embeddings)
	apiRerank                 // POST /v1/rerank (vLLM; Cohere and Jina style)
	apiScore                  // POST /v1/score (vLLM)
	apiTEIRerank              // POST /rerank (Hugging Face text-embeddings-inference)
)

// apiPaths are the generation endpoints, by API.
var apiPaths = [...]string{
	apiCompletions: "/v1/completions",
	apiChat:        "/v1/chat/completions",
	apiResponses:   "/v1/responses",
	apiMessages:    "/v1/messages",
	apiEmbeddings:  "/v1/embeddings",
	apiRerank:      "/v1/rerank",
	apiScore:       "/v1/score",
	apiTEIRerank:   "/rerank",
}

// apiOf returns the API served at path (the fast server's request target).
func apiOf(path []byte) (api, bool) {
	for a, p := range apiPaths {
		if string(path) == p {
			return api(a), true
		}
	}
	return 0, false
}

// request is the part of a request body that the simulator reads, for every API.
type request struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`       // completions
	Messages            []message       `json:"messages"`     // chat, messages
	Input               json.RawMessage `json:"input"`        // responses, embeddings
	Instructions        json.RawMessage `json:"instructions"` // responses
	System              json.RawMessage `json:"system"`       // messages
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MaxOutputTokens     *int            `json:"max_output_tokens"` // responses
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N              *int            `json:"n"`
	IgnoreEOS      bool            `json:"ignore_eos"`
	Tools          []tool          `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	EncodingFormat string          `json:"encoding_format"` // embeddings
	Dimensions     *int            `json:"dimensions"`      // embeddings
	Query          json.RawMessage `json:"query"`           // rerank, TEI rerank
	Documents      json.RawMessage `json:"documents"`       // rerank
	Texts          json.RawMessage `json:"texts"`           // TEI rerank
	Text1          json.RawMessage `json:"text_1"`          // score
	Text2          json.RawMessage `json:"text_2"`          // score
	TopN           *int            `json:"top_n"`           // rerank
	ReturnText     bool            `json:"return_text"`     // TEI rerank
}

// message is a chat or Anthropic message.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// tool is a tool definition: chat nests the name in function, responses and messages do not.
type tool struct {
	Name     string `json:"name"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
}

// part is a content part of any API: text (text, input_text, output_text), an image
// (image_url, input_image, image) or an Anthropic tool_result (content).
type part struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
	Source   json.RawMessage `json:"source"`
	Content  json.RawMessage `json:"content"`
}

// inputItem is an item of a Responses API input list: a message, or a tool call's output or
// arguments.
type inputItem struct {
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Output    json.RawMessage `json:"output"`
	Arguments string          `json:"arguments"`
}

// job is a decoded, validated request.
type job struct {
	api           api
	stream, usage bool
	model         string // the model name as a JSON string literal
	offset        int64  // the model's extra prefill, ns (a LoRA adapter's offset)
	bh            blockHasher
	maxTokens     int    // output tokens (0: embeddings)
	reasoning     int    // of which reasoning
	tool          string // the called tool's name as a JSON string literal; "" for text
	fault         string
	read          int64 // engine clock when the request was read, before decoding: its arrival
	in            int64 // the same, kept when read moves past the request's CPU work
	embed         embedJob
	rank          rankJob
}

// unsafeString views b as a string; b must not change while the string is in use (the decoded
// request's own bytes, never modified, only hashed inside the handler).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// writeError writes an error body in a's format: OpenAI's {"error":{...}} or Anthropic's
// {"type":"error","error":{...}}.
func writeError(w http.ResponseWriter, a api, code int, msg string) {
	var b []byte
	switch a {
	case apiTEIRerank: // TEI's error body
		b, _ = json.Marshal(struct {
			Error     string `json:"error"`
			ErrorType string `json:"error_type"`
		}{msg, teiErrorType(code)})
	case apiMessages:
		type body struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		b, _ = json.Marshal(struct {
			Type  string `json:"type"`
			Error body   `json:"error"`
		}{"error", body{anthropicErrorType(code), msg}})
	default:
		type body struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    int     `json:"code"`
		}
		b, _ = json.Marshal(struct {
			Error body `json:"error"`
		}{body{Message: msg, Type: openAIErrorType(code), Code: code}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// openAIErrorType is the error type vLLM's OpenAI server gives a status.
func openAIErrorType(code int) string {
	switch code {
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusInternalServerError:
		return "InternalServerError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	return "BadRequestError"
}

// teiErrorType is the error_type TEI gives a status.
func teiErrorType(code int) string {
	switch code {
	case http.StatusTooManyRequests:
		return "overloaded"
	case http.StatusServiceUnavailable:
		return "unhealthy"
	case http.StatusInternalServerError:
		return "backend"
	}
	return "validation"
}

// anthropicErrorType is the error type Anthropic's API gives a status (503, which Anthropic
// calls 529, is overloaded_error).
func anthropicErrorType(code int) string {
	switch code {
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusInternalServerError:
		return "api_error"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	return "invalid_request_error"
}

func badRequest(w http.ResponseWriter, a api, format string, args ...any) {
	writeError(w, a, http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// parseJob decodes and validates a request body of API a (readErr: the error reading it); on
// failure it writes the error response to w and returns false.
func (s *Server) parseJob(w http.ResponseWriter, body []byte, readErr error, faultHeader string, a api, j *job) bool {
	// The model's clock starts when the request is in, not after this server has decoded and
	// tokenized it: a fixed TTFT is then TTFT from the request's arrival.
	j.read = s.eng.now()
	j.in = j.read
	j.api = a
	if readErr != nil {
		badRequest(w, a, "read request body: %v", readErr)
		return false
	}
	var req request
	err := gojson.Unmarshal(body, &req) // goccy/go-json: a third of encoding/json's CPU per request
	if err != nil {
		if e := json.Unmarshal(body, &req); e != nil {
			err = e // encoding/json's messages name the problem more plainly
		}
		badRequest(w, a, "invalid JSON body: %v", err)
		return false
	}
	if req.Model == "" {
		badRequest(w, a, "model: required")
		return false
	}
	model, ok := s.models[req.Model]
	if !ok {
		writeError(w, a, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return false
	}
	j.model, j.offset = model.lit, model.offset
	if err := s.promptOf(&req, j); err != nil {
		badRequest(w, a, "%v", err)
		return false
	}
	if req.N != nil && *req.N != 1 {
		badRequest(w, a, "n: %d is not supported (only n=1)", *req.N)
		return false
	}
	if err := s.outputOf(&req, j); err != nil {
		badRequest(w, a, "%v", err)
		return false
	}
	fault, err := s.pickFault(faultHeader)
	if err != nil {
		badRequest(w, a, "%v", err)
		return false
	}
	j.stream, j.fault = req.Stream && a != apiEmbeddings && !a.ranks(), fault
	j.usage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	return true
}

// promptOf counts and hashes the prompt of req into j.bh (embeddings: every input, and the
// vectors' shape into j.embed).
func (s *Server) promptOf(req *request, j *job) error {
	j.bh = newBlockHasher(s.cfg.BlockSize)
	p := prompter{bh: &j.bh, imageTokens: s.cfg.ImageTokens}
	switch j.api {
	case apiCompletions:
		return promptTokens(req.Prompt, &j.bh)
	case apiChat:
		if len(req.Messages) == 0 {
			return errors.New("messages: required")
		}
		return p.messages(req.Messages)
	case apiMessages:
		if len(req.Messages) == 0 {
			return errors.New("messages: required")
		}
		if err := p.content(req.System, "system"); err != nil {
			return err
		}
		return p.messages(req.Messages)
	case apiResponses:
		return p.responsesInput(req.Instructions, req.Input)
	case apiRerank, apiScore, apiTEIRerank:
		return s.rankInputs(req, j)
	}
	return s.embedInputs(req, j)
}

// outputOf sets the output limit, the reasoning tokens and the called tool of j, and checks
// the limit against MaxModelLen.
func (s *Server) outputOf(req *request, j *job) error {
	if j.api == apiEmbeddings || j.api.ranks() {
		return nil
	}
	limit, name := s.cfg.DefaultMaxTokens, "max_tokens"
	switch {
	case j.api == apiResponses:
		name = "max_output_tokens"
		if req.MaxOutputTokens != nil {
			limit = *req.MaxOutputTokens
		}
	case req.MaxTokens != nil:
		limit = *req.MaxTokens
	case j.api == apiMessages:
		return errors.New("max_tokens: required")
	case req.MaxCompletionTokens != nil:
		limit = *req.MaxCompletionTokens
	}
	if limit < 1 {
		return fmt.Errorf("%s: %d must be at least 1", name, limit)
	}
	if j.bh.tokens+limit > s.cfg.MaxModelLen {
		return fmt.Errorf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.MaxModelLen, j.bh.tokens+limit, j.bh.tokens, limit)
	}
	j.maxTokens = limit
	if j.api == apiCompletions {
		return nil
	}
	j.reasoning = min(s.cfg.ReasoningTokens, limit-1)
	if len(req.Tools) == 0 || toolChoiceNone(req.ToolChoice) {
		return nil
	}
	t := req.Tools[0]
	if t.Function != nil {
		t.Name = t.Function.Name
	}
	if t.Name == "" {
		return errors.New("tools[0]: the tool has no name")
	}
	lit, _ := json.Marshal(t.Name)
	j.tool = string(lit)
	return nil
}

// toolChoiceNone reports a tool_choice that forbids tool calls: "none" (OpenAI) or
// {"type":"none"} (Anthropic).
func toolChoiceNone(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' { // absent or null
		return false
	}
	var s string
	if gojson.Unmarshal(raw, &s) == nil {
		return s == "none"
	}
	var o struct {
		Type string `json:"type"`
	}
	return gojson.Unmarshal(raw, &o) == nil && o.Type == "none"
}

// promptTokens counts and hashes a completions prompt: a string, [string] or token ids.
func promptTokens(raw json.RawMessage, bh *blockHasher) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return errors.New("prompt: required")
	}
	if str, ok := plainString(raw); ok {
		bh.text(str)
		return nil
	}
	var str string
	if err := gojson.Unmarshal(raw, &str); err == nil {
		bh.text(str)
		return nil
	}
	var strs []string
	if err := gojson.Unmarshal(raw, &strs); err == nil {
		if len(strs) != 1 {
			return fmt.Errorf("prompt: a list of %d prompts; only one prompt per request is supported", len(strs))
		}
		bh.text(strs[0])
		return nil
	}
	var ids []int64
	if err := gojson.Unmarshal(raw, &ids); err == nil {
		for _, id := range ids {
			bh.id(id)
		}
		return nil
	}
	return errors.New("prompt: want a string, a list of one string or a list of token ids")
}

// plainString returns the contents of a JSON string literal without escapes, without
// decoding or allocating (the common case for prompts).
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	return unsafeString(in), true
}

// prompter counts and hashes the prompt of a chat, responses or messages request: the words
// of every text, imageTokens tokens for every image.
type prompter struct {
	bh          *blockHasher
	imageTokens int
}

// imageSeed keys the hashes of images (their identity in the prefix cache is their URL or
// source, hashed whole).
var imageSeed = maphash.MakeSeed()

func (p *prompter) messages(msgs []message) error {
	for i, m := range msgs {
		if err := p.content(m.Content, "messages["+strconv.Itoa(i)+"].content"); err != nil {
			return err
		}
	}
	return nil
}

// content counts a message's content: null, a string, or a list of parts.
func (p *prompter) content(raw json.RawMessage, where string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if str, ok := plainString(raw); ok {
		p.bh.text(str)
		return nil
	}
	var str string
	if err := gojson.Unmarshal(raw, &str); err == nil {
		p.bh.text(str)
		return nil
	}
	var parts []part
	if err := gojson.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("%s: want a string or a list of parts", where)
	}
	for i, pt := range parts {
		switch pt.Type {
		case "image_url", "input_image", "image":
			id := pt.ImageURL
			if len(id) == 0 {
				id = pt.Source
			}
			if len(id) == 0 {
				return fmt.Errorf("%s[%d]: an image part without image_url or source", where, i)
			}
			p.bh.image(maphash.Bytes(imageSeed, id), p.imageTokens)
		case "tool_result":
			if err := p.content(pt.Content, where+"["+strconv.Itoa(i)+"].content"); err != nil {
				return err
			}
		default:
			p.bh.text(pt.Text)
		}
	}
	return nil
}

// responsesInput counts a Responses API prompt: the instructions, and the input (a string or
// a list of items: messages, tool calls' arguments and outputs).
func (p *prompter) responsesInput(instructions, input json.RawMessage) error {
	if err := p.content(instructions, "instructions"); err != nil {
		return err
	}
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		return errors.New("input: required")
	}
	if input[0] == '"' {
		return p.content(input, "input")
	}
	var items []inputItem
	if err := gojson.Unmarshal(input, &items); err != nil {
		return errors.New("input: want a string or a list of items")
	}
	for i, it := range items {
		where := "input[" + strconv.Itoa(i) + "]"
		if err := p.content(it.Content, where+".content"); err != nil {
			return err
		}
		if err := p.content(it.Output, where+".output"); err != nil {
			return err
		}
		p.bh.text(it.Arguments)
	}
	return nil
}
