package wire

import (
	"fmt"

	"github.com/wirebench/wirebench/schemas"
)

// API selects how the client reads response events: the JSON each event carries and which
// event ends the stream. The SSE framing (decoder) is the same for all.
type API uint8

// The response formats. docs/apis.md has the wire contract of each.
const (
	// apiOpenAI: chat.completion.chunk or text_completion events, a usage chunk, data: [DONE]
	// (target.api completions and chat).
	apiOpenAI API = iota
	// apiResponses: OpenAI Responses typed events (response.output_text.delta, ...), ended by
	// response.completed, response.incomplete or response.failed.
	apiResponses
	// apiMessages: Anthropic Messages events (message_start, content_block_delta,
	// message_delta, ...), ended by message_stop.
	apiMessages
	// apiEmbeddings: a whole (non-streaming) embeddings list with usage.
	apiEmbeddings
	// apiRerank: a whole rerank answer, {"results": [{"index", "relevance_score"}], "usage"}
	// (vLLM /v1/rerank, Cohere and Jina style).
	apiRerank
	// apiScore: a whole score answer, {"data": [{"index", "score"}], "usage"} (vLLM /v1/score).
	apiScore
	// apiTEIRerank: a whole TEI /rerank answer, a top-level array of {"index", "score"}.
	apiTEIRerank
)

// Streams reports whether requests of the API ask for a streamed answer (stream: true): every
// API but embeddings and the ranking APIs. A whole answer to one is kind not_streamed.
func (a API) Streams() bool { return a < apiEmbeddings }

// Ranks reports whether the API scores documents against a query (rerank, score, tei_rerank):
// its answer is checked against the documents sent (error kind malformed_answer).
func (a API) Ranks() bool { return a >= apiRerank }

// ParseAPI maps a target.api name to its response format.
func ParseAPI(name string) (API, error) {
	switch name {
	case "", schemas.APICompletions, schemas.APIChat:
		return apiOpenAI, nil
	case schemas.APIResponses:
		return apiResponses, nil
	case schemas.APIMessages:
		return apiMessages, nil
	case schemas.APIEmbeddings:
		return apiEmbeddings, nil
	case schemas.APIRerank:
		return apiRerank, nil
	case schemas.APIScore:
		return apiScore, nil
	case schemas.APITEIRerank:
		return apiTEIRerank, nil
	}
	return 0, fmt.Errorf("unknown api %q: want completions, chat, responses, messages, embeddings, rerank, score or tei_rerank", name)
}

// parseEvent parses one event's data (typ is its SSE event: field, empty when none) in the
// format of api into p, without allocating; keepText appends answer text to p.Text. The event's
// own "type" field wins over typ.
func parseEvent(api API, typ, data []byte, p *payload, keepText bool) error {
	switch api {
	case apiResponses, apiMessages:
		return parseTyped(api, data, typ, p, keepText)
	case apiTEIRerank:
		return parseRankArray(data, p)
	}
	err := parsePayload(data, p, keepText)
	if api.Ranks() && p.Prompt < 0 {
		p.Prompt = p.Total // vLLM's rerank usage has only total_tokens: every token is a prompt token
	}
	return err
}

// typed holds what a typed event (Responses, Messages) says before its "type" is known: JSON
// object keys come in any order, so the text fields are kept raw and classified at the end.
// The slices alias the event's data.
type typed struct {
	typ      []byte
	text     []byte // the delta text (Responses "delta"; Messages delta.text, .thinking, .partial_json)
	textKey  string // which Messages delta field held it
	esc      bool
	hasText  bool
	status   []byte // Responses response.status
	reason   []byte // Responses incomplete_details.reason; Messages stop_reason
	errVal   []byte // the error value
	input    int64  // Messages usage: input_tokens, cache_read_input_tokens, cache_creation_input_tokens
	cacheRd  int64
	cacheCr  int64
	hasInput bool
}

// parseTyped walks a Responses or Messages event object and classifies it. (The two are
// called directly, not through function values, so that nothing escapes to the heap.)
func parseTyped(api API, data, typ []byte, p *payload, keepText bool) error {
	p.reset()
	s := jscan{b: data, keep: keepText, p: p}
	t := typed{typ: typ, input: -1, cacheRd: -1, cacheCr: -1}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return errJSON
	}
	s.object(func(k []byte) {
		if api == apiResponses {
			s.responsesKey(&t, k)
		} else {
			s.messagesKey(&t, k)
		}
	})
	s.ws()
	if s.err == nil && s.i != len(s.b) {
		s.err = errJSON
	}
	if s.err != nil {
		return s.err
	}
	if api == apiResponses {
		s.responsesEvent(&t, data)
	} else {
		s.messagesEvent(&t, data)
	}
	return nil
}

// rawString consumes a string (recording its raw contents) or skips any other value.
func (s *jscan) rawString(t *typed) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.skip()
		return
	}
	t.text, t.esc = s.str()
	t.hasText = true
}

// rawValue consumes any value and returns its bytes; nil for null.
func (s *jscan) rawValue() []byte {
	if s.null() {
		return nil
	}
	s.ws()
	start := s.i
	s.skip()
	return s.b[start:s.i]
}

// responsesKey reads one top-level key of an OpenAI Responses event.
func (s *jscan) responsesKey(t *typed, key []byte) {
	switch string(key) {
	case "type":
		if v := s.strv(); v != nil {
			t.typ = v
		}
	case "delta":
		s.rawString(t)
	case "response":
		if s.null() {
			return
		}
		s.object(func(key []byte) {
			switch string(key) {
			case "status":
				t.status = s.strv()
			case "usage":
				s.usage()
			case "error":
				t.errVal = s.rawValue()
			case "incomplete_details":
				if s.null() {
					return
				}
				s.object(func(key []byte) {
					if string(key) == "reason" {
						t.reason = s.strv()
					} else {
						s.skip()
					}
				})
			default:
				s.skip()
			}
		})
	default:
		s.skip()
	}
}

// responsesEvent classifies a Responses event once its keys are read.
func (s *jscan) responsesEvent(t *typed, data []byte) {
	p := s.p
	switch string(t.typ) {
	case "response.output_text.delta":
		if t.hasText {
			s.addText(t.text, t.esc, &p.Content, true)
		}
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.reasoning.delta":
		if t.hasText {
			s.addText(t.text, t.esc, &p.Reasoning, false)
		}
	case "response.function_call_arguments.delta":
		p.ToolCalls = 1
	case "response.completed":
		p.Final, p.FinishReason = true, orBytes(t.status, finishCompleted)
	case "response.incomplete":
		p.Final, p.FinishReason = true, orBytes(t.reason, finishIncomplete)
	case "response.failed":
		p.Final, p.FinishReason = true, orBytes(t.status, finishFailed)
		p.Error = orBytes(t.errVal, data)
	case "error":
		p.Error = data
	}
}

// messagesKey reads one top-level key of an Anthropic Messages event.
func (s *jscan) messagesKey(t *typed, key []byte) {
	switch string(key) {
	case "type":
		if v := s.strv(); v != nil {
			t.typ = v
		}
	case "delta":
		if s.null() {
			return
		}
		s.object(func(key []byte) {
			switch string(key) {
			case "text", "thinking", "partial_json":
				t.textKey = deltaField(key)
				s.rawString(t)
			case "stop_reason":
				if !s.null() {
					t.reason = s.strv()
				}
			default:
				s.skip()
			}
		})
	case "usage":
		s.messagesUsage(t)
	case "message":
		if s.null() {
			return
		}
		s.object(func(key []byte) {
			if string(key) == "usage" {
				s.messagesUsage(t)
			} else {
				s.skip()
			}
		})
	case "error":
		t.errVal = s.rawValue()
	default:
		s.skip()
	}
}

// deltaField returns key as one of the constant Messages delta field names (no allocation).
func deltaField(key []byte) string {
	switch string(key) {
	case "text":
		return "text"
	case "thinking":
		return "thinking"
	}
	return "partial_json"
}

// messagesUsage reads an Anthropic usage object. Its input_tokens count only the prompt tokens
// that were neither read from nor written to the cache; the prompt is their sum.
func (s *jscan) messagesUsage(t *typed) {
	if s.null() {
		return
	}
	s.p.HasUsage = true
	s.object(func(key []byte) {
		switch string(key) {
		case "input_tokens":
			t.input, t.hasInput = s.int(), true
		case "cache_read_input_tokens":
			t.cacheRd = s.int()
		case "cache_creation_input_tokens":
			t.cacheCr = s.int()
		case "output_tokens":
			s.p.Completion = s.int()
		default:
			s.skip()
		}
	})
}

// messagesEvent classifies a Messages event once its keys are read.
func (s *jscan) messagesEvent(t *typed, data []byte) {
	p := s.p
	if t.hasInput && t.input >= 0 {
		p.Prompt = t.input + max(t.cacheRd, 0) + max(t.cacheCr, 0)
		if t.cacheRd >= 0 {
			p.Cached = t.cacheRd
		}
	}
	switch string(t.typ) {
	case "content_block_delta":
		if !t.hasText {
			return
		}
		switch t.textKey {
		case "text":
			s.addText(t.text, t.esc, &p.Content, true)
		case "thinking":
			s.addText(t.text, t.esc, &p.Reasoning, false)
		default:
			p.ToolCalls = 1
		}
	case "message_delta":
		if len(t.reason) > 0 {
			p.FinishReason = t.reason
		}
	case "message_stop":
		p.Final = true
	case "error":
		p.Error = orBytes(t.errVal, data)
	}
}

// Finish reasons of Responses events without a status or reason of their own; package
// variables, so that using one does not allocate. Never modified.
var (
	finishCompleted  = []byte("completed")
	finishIncomplete = []byte("incomplete")
	finishFailed     = []byte("failed")
)

// orBytes returns b, or def when b is empty.
func orBytes(b, def []byte) []byte {
	if len(b) > 0 {
		return b
	}
	return def
}
