package wire

import (
	"errors"
	"unicode/utf8"
)

// payload holds the fields of one event that wirebench records, whatever the API: an
// OpenAI-compatible chunk (chat.completion.chunk, text_completion, or a whole non-streaming
// response, embeddings included), an OpenAI Responses event or an Anthropic Messages event (see
// parseEvent). The parsers fill it without allocating: a hand-written scanner, because this runs
// once per event on the client's hot path and encoding/json allocates several times per call.
type payload struct {
	Content      int   // bytes of answer text (choices[].delta.content, .message.content or .text; output_text deltas; text_delta)
	Reasoning    int   // bytes of reasoning text (reasoning_content or reasoning; reasoning_text deltas; thinking_delta)
	ToolCalls    int   // tool-call deltas (chat tool_calls entries; function_call_arguments deltas; input_json_delta)
	Choices      int   // entries in choices
	Items        int   // entries in data (embeddings: one vector per input; score: one score per pair) or results (rerank), or of a top-level array (tei_rerank)
	Ranked       int   // of those, entries with an integer index >= 0 and a numeric score (relevance_score or score)
	MaxIndex     int64 // the largest index of a ranked entry; -1 when none
	Tokens       int   // tokens the server says the chunk carries (token_ids or logprobs entries); -1 when not said
	FinishReason []byte
	Final        bool // the API's terminal event (response.completed, .incomplete, .failed; message_stop)
	HasUsage     bool
	Prompt       int64  // usage prompt (input) tokens; -1 when absent
	Total        int64  // usage total_tokens; -1 when absent
	Completion   int64  // usage completion (output) tokens, reasoning included; -1 when absent
	Cached       int64  // usage cached prompt tokens; -1 when absent
	ReasoningTok int64  // usage reasoning tokens (completion_tokens_details or output_tokens_details); -1 when absent
	Error        []byte // the raw error value ({"error": ...} or an object with "object":"error"); nil when none
	Text         []byte // content text appended when the caller asked for it
}

var errJSON = errors.New("invalid JSON")

// reset clears p for the next event: counts 0, figures not said (-1), the text buffer kept.
func (p *payload) reset() {
	*p = payload{Tokens: -1, Prompt: -1, Total: -1, Completion: -1, Cached: -1, ReasoningTok: -1, MaxIndex: -1, Text: p.Text}
}

type jscan struct {
	b    []byte
	i    int
	err  error
	keep bool
	p    *payload
}

// parsePayload parses data into p. When keepText is set, content text is appended to p.Text
// (which is kept, not reset). It reports malformed JSON as an error.
func parsePayload(data []byte, p *payload, keepText bool) error {
	p.reset()
	s := jscan{b: data, keep: keepText, p: p}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return errJSON
	}
	isErr := false
	s.object(func(key []byte) {
		switch string(key) {
		case "choices":
			s.array(func() { p.Choices++; s.choice() })
		case "usage":
			s.usage()
		case "data", "results":
			s.array(func() { p.Items++; s.rankEntry() })
		case "error":
			start := s.i
			if s.null() {
				return
			}
			s.skip()
			p.Error = s.b[start:s.i]
		case "object":
			v := s.strv()
			isErr = string(v) == "error"
		default:
			s.skip()
		}
	})
	s.ws()
	if s.err == nil && s.i != len(s.b) {
		s.err = errJSON
	}
	if isErr && p.Error == nil {
		p.Error = data
	}
	return s.err
}

func (s *jscan) choice() {
	if s.null() {
		return
	}
	s.object(func(key []byte) {
		switch string(key) {
		case "delta", "message":
			s.message()
		case "text":
			s.text(&s.p.Content, true)
		case "finish_reason":
			if s.null() {
				return
			}
			s.p.FinishReason = s.strv()
		case "token_ids":
			s.countTokens()
		case "logprobs":
			if s.null() {
				return
			}
			s.object(func(key []byte) {
				switch string(key) {
				case "content", "tokens":
					s.countTokens()
				default:
					s.skip()
				}
			})
		default:
			s.skip()
		}
	})
}

func (s *jscan) countTokens() {
	if s.null() {
		return
	}
	n := 0
	s.array(func() { n++; s.skip() })
	if s.p.Tokens < 0 {
		s.p.Tokens = 0
	}
	s.p.Tokens += n
}

func (s *jscan) message() {
	if s.null() {
		return
	}
	s.object(func(key []byte) {
		switch string(key) {
		case "content":
			s.text(&s.p.Content, true)
		case "reasoning_content", "reasoning":
			s.text(&s.p.Reasoning, false)
		case "tool_calls":
			if s.null() {
				return
			}
			s.array(func() { s.p.ToolCalls++; s.skip() })
		default:
			s.skip()
		}
	})
}

// text adds the decoded length of a string (or null) to *n, keeping content when asked.
func (s *jscan) text(n *int, content bool) {
	if s.null() {
		return
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.skip()
		return
	}
	raw, esc := s.str()
	s.addText(raw, esc, n, content)
}

// addText adds the decoded length of the raw JSON string contents raw (esc: it holds escapes)
// to *n, appending it to p.Text when content text is kept.
func (s *jscan) addText(raw []byte, esc bool, n *int, content bool) {
	if !esc {
		*n += len(raw)
		if content && s.keep {
			s.p.Text = append(s.p.Text, raw...)
		}
		return
	}
	l := len(s.p.Text)
	s.p.Text = unescape(s.p.Text, raw)
	*n += len(s.p.Text) - l
	if !(content && s.keep) {
		s.p.Text = s.p.Text[:l]
	}
}

// usage reads an OpenAI usage object: Chat Completions' names (prompt_tokens,
// completion_tokens, *_details) or the Responses API's (input_tokens, output_tokens, *_details).
func (s *jscan) usage() {
	if s.null() {
		return
	}
	s.p.HasUsage = true
	s.object(func(key []byte) {
		switch string(key) {
		case "prompt_tokens", "input_tokens":
			s.p.Prompt = s.int()
		case "completion_tokens", "output_tokens":
			s.p.Completion = s.int()
		case "total_tokens":
			s.p.Total = s.int()
		case "prompt_tokens_details", "input_tokens_details":
			s.detail("cached_tokens", &s.p.Cached)
		case "completion_tokens_details", "output_tokens_details":
			s.detail("reasoning_tokens", &s.p.ReasoningTok)
		default:
			s.skip()
		}
	})
}

// parseRankArray parses a TEI /rerank answer, a top-level array of {"index", "score"} (an
// object, such as an error, is parsed by parsePayload).
func parseRankArray(data []byte, p *payload) error {
	s := jscan{b: data}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '{' {
		return parsePayload(data, p, false)
	}
	p.reset()
	s.p = p
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return errJSON
	}
	s.array(func() { p.Items++; s.rankEntry() })
	s.ws()
	if s.err == nil && s.i != len(s.b) {
		s.err = errJSON
	}
	return s.err
}

// rankEntry reads one entry of a data, results or TEI array: a ranking API's entry counts as
// ranked when it has an integer index >= 0 and a numeric relevance_score or score (an
// embeddings entry has no score and is only counted as an item).
func (s *jscan) rankEntry() {
	index, scored := int64(-1), false
	s.object(func(key []byte) {
		switch string(key) {
		case "index":
			if s.isInt() {
				index = s.int()
			} else {
				s.skip()
			}
		case "relevance_score", "score":
			scored = s.isNumber()
			if scored {
				s.int()
			} else {
				s.skip()
			}
		default:
			s.skip()
		}
	})
	if index >= 0 && scored {
		s.p.Ranked++
		s.p.MaxIndex = max(s.p.MaxIndex, index)
	}
}

// isNumber reports whether a number comes next (without consuming it).
func (s *jscan) isNumber() bool {
	s.ws()
	return s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] >= '0' && s.b[s.i] <= '9')
}

// isInt reports whether an integer (digits, not followed by a fraction or exponent) comes next.
func (s *jscan) isInt() bool {
	s.ws()
	j := s.i
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		j++
	}
	return j > s.i && (j == len(s.b) || (s.b[j] != '.' && s.b[j] != 'e' && s.b[j] != 'E'))
}

// detail reads the integer field name of a usage details object (or null) into *dst.
func (s *jscan) detail(name string, dst *int64) {
	if s.null() {
		return
	}
	s.object(func(key []byte) {
		if string(key) == name {
			*dst = s.int()
		} else {
			s.skip()
		}
	})
}

func (s *jscan) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' { // compact JSON: nothing to skip
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) fail() {
	if s.err == nil {
		s.err = errJSON
	}
	s.i = len(s.b)
}

// null consumes a JSON null and reports whether it was one.
func (s *jscan) null() bool {
	s.ws()
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// object walks an object; fn is called with each key and must consume the value.
// A value of another type is skipped.
func (s *jscan) object(fn func(key []byte)) {
	if !s.open('{', '}') {
		return
	}
	for s.err == nil {
		s.ws()
		key, _ := s.str()
		s.ws()
		if s.err != nil || s.i >= len(s.b) || s.b[s.i] != ':' {
			s.fail()
			return
		}
		s.i++
		fn(key)
		if !s.next('}') {
			return
		}
	}
}

// array walks an array; fn is called per element and must consume it.
// A value of another type is skipped.
func (s *jscan) array(fn func()) {
	if !s.open('[', ']') {
		return
	}
	for s.err == nil {
		fn()
		if !s.next(']') {
			return
		}
	}
}

// open consumes the opening bracket of an object or array and reports whether an element
// follows; a value of another type is skipped, an empty one consumed.
func (s *jscan) open(open, close byte) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != open {
		s.skip()
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		return false
	}
	return true
}

// next consumes what follows an element: true after a comma, false after the closing bracket
// or on malformed input.
func (s *jscan) next(close byte) bool {
	s.ws()
	if s.i >= len(s.b) {
		s.fail()
		return false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return true
	case close:
		s.i++
		return false
	}
	s.fail()
	return false
}

// strv consumes a string value; a value of another type is skipped and gives nil.
func (s *jscan) strv() []byte {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.skip()
		return nil
	}
	v, _ := s.str()
	return v
}

// str consumes a string and returns its raw contents and whether it holds escapes.
func (s *jscan) str() (raw []byte, escaped bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.fail()
		return nil, false
	}
	s.i++
	start := s.i
	for i := s.i; i < len(s.b); i++ {
		switch s.b[i] {
		case '"':
			s.i = i + 1
			return s.b[start:i], escaped
		case '\\':
			escaped = true
			s.i = i + 1
			if !s.escape() {
				s.fail()
				return nil, false
			}
			i = s.i - 1
		}
	}
	s.fail()
	return nil, false
}

// escape consumes what follows a backslash in a string and reports whether it is one of JSON's
// escapes (RFC 8259: one of "\/bfnrt, or u and four hex digits).
func (s *jscan) escape() bool {
	if s.i >= len(s.b) {
		return false
	}
	c := s.b[s.i]
	s.i++
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if s.i+4 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i : s.i+4] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 4
		return true
	}
	return false
}

// int consumes a number and returns its integer part (or -1 for null or a non-number).
func (s *jscan) int() int64 {
	if s.null() {
		return -1
	}
	if !s.isNumber() {
		s.skip() // not a number: skip whatever it is
		return -1
	}
	return s.number()
}

// number consumes a JSON number at s.i (its callers have skipped the white space before it),
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (RFC 8259), fails on anything else, and returns
// its integer part (wrapping past 19 digits), read in the same pass.
func (s *jscan) number() int64 {
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	var n int64
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			n = n*10 + int64(s.b[s.i]-'0')
			s.i++
		}
	default:
		s.fail()
		return 0
	}
	if neg {
		n = -n
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			s.fail()
			return n
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			s.fail()
		}
	}
	return n
}

// digits consumes decimal digits and returns how many.
func (s *jscan) digits() int {
	j := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - j
}

// skip consumes any value.
func (s *jscan) skip() {
	s.ws()
	if s.i >= len(s.b) {
		s.fail()
		return
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.object(func([]byte) { s.skip() })
	case c == '[':
		s.array(s.skip)
	case c == '"':
		s.str()
	case c == 't':
		s.lit("true")
	case c == 'f':
		s.lit("false")
	case c == 'n':
		s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		s.number()
	default:
		s.fail()
	}
}

func (s *jscan) lit(w string) {
	if s.i+len(w) <= len(s.b) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return
	}
	s.fail()
}

// unescape appends the decoded JSON string contents raw to dst.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			continue
		}
		i++
		switch raw[i] {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			r, n := hex4(raw[i+1:])
			i += n
			if r >= 0xD800 && r < 0xDC00 && i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				r2, n2 := hex4(raw[i+3:])
				if r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
					i += 2 + n2
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, raw[i])
		}
	}
	return dst
}

func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return utf8.RuneError, len(b)
	}
	var r rune
	for _, c := range b[:4] {
		d, ok := hexDigit(c)
		if !ok {
			return utf8.RuneError, 4
		}
		r = r<<4 | rune(d)
	}
	return r, 4
}

// hexDigit returns the value of the hexadecimal digit c.
func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
