package sim

import (
	"strconv"
	"time"
)

// render formats one response in its API's wire format by appending to a byte slice: nothing
// is allocated per event. The fast server keeps one render per connection.
//
// A response's output tokens are one or two segments: r reasoning tokens [0, r), then the
// answer [r, n), text or (when the request has tools) the arguments of one tool call. Every
// event that carries tokens is a delta of one segment; the events around them (a chat stream's
// role chunk, the Responses API's items and parts, Anthropic's content blocks) open and close
// the segments. The per-API formats are in render_openai.go, render_responses.go and
// render_messages.go.
type render struct {
	api       api
	id        []byte // the response's id in hex: every id of the response is built from it
	idBuf     [16]byte
	created   int64
	model     string // the model name as a JSON string literal
	tool      string // the called tool's name as a JSON string literal; "" for a text answer
	field     string // the chat delta field of reasoning tokens
	common    []byte // chat/completions: {"id":"...","object":"<chunk object>","created":N,"model":"...",
	full      []byte // the same with the non-streaming object name
	prompt    int    // prompt tokens
	cached    int    // prompt tokens found in the prefix cache (known once the engine admitted the request)
	maxToks   int    // output tokens n
	reasoning int    // reasoning tokens r (< n)
	seqNo     int    // responses: the sequence_number of the next event
}

// seg is a segment of the output: reasoning, or the answer as text or as a tool call.
type seg uint8

const (
	segReasoning seg = iota
	segText
	segTool
)

// newRender prepares a render of j's response with id id.
func newRender(j *job, id uint64, reasoningField string) *render {
	rd := new(render)
	rd.reset(j, id, reasoningField)
	return rd
}

// reset prepares rd for the response to j, reusing its buffers.
func (rd *render) reset(j *job, id uint64, reasoningField string) {
	rd.api, rd.model, rd.tool, rd.field = j.api, j.model, j.tool, reasoningField
	rd.prompt, rd.cached, rd.maxToks, rd.reasoning, rd.seqNo = j.bh.tokens, 0, j.maxTokens, j.reasoning, 0
	rd.id = strconv.AppendUint(rd.idBuf[:0], id, 16)
	rd.created = time.Now().Unix()
	if rd.api == apiCompletions || rd.api == apiChat {
		rd.resetOpenAI()
	}
}

// answer is the answer's segment kind.
func (rd *render) answer() seg {
	if rd.tool != "" {
		return segTool
	}
	return segText
}

// segOf is the segment of output token i.
func (rd *render) segOf(i int) seg {
	if i < rd.reasoning {
		return segReasoning
	}
	return rd.answer()
}

// span is the token range [start, end) of segment g.
func (rd *render) span(g seg) (start, end int) {
	if g == segReasoning {
		return 0, rd.reasoning
	}
	return rd.reasoning, rd.maxToks
}

// index is g's position in the output (the Responses API's output_index, Anthropic's block
// index).
func (rd *render) index(g seg) int {
	if g == segReasoning || rd.reasoning == 0 {
		return 0
	}
	return 1
}

// tokenEvents is how many events carry tokens when the n tokens come in chunks of k (the first
// chunk one token): one per chunk, plus one when a chunk straddles the end of the reasoning
// (it is sent as a reasoning delta and an answer delta).
func (rd *render) tokenEvents(nChunks, k int) int {
	r := rd.reasoning
	if r > 0 && r < rd.maxToks && (r-1)%k != 0 {
		return nChunks + 1
	}
	return nChunks
}

// appendWords appends output tokens [start, start+count): each a word and a space.
func appendWords(b []byte, start, count int) []byte {
	for i := start; i < start+count; i++ {
		b = append(b, words[i%len(words)]...)
		b = append(b, ' ')
	}
	return b
}

// appendArgs appends output tokens [start, start+count) of a tool call's arguments, whose
// whole text is {"text":"<words>"}: the first answer token begins with {"text":", the last
// ends with "} instead of a space, so every token is one word and CountWords(arguments) is
// the answer's token count. quoted: escaped for a JSON string (deltas); else raw JSON.
func (rd *render) appendArgs(b []byte, start, count int, quoted bool) []byte {
	open, end := `{"text":"`, `"}`
	if quoted {
		open, end = `{\"text\":\"`, `\"}`
	}
	for i := start; i < start+count; i++ {
		if i == rd.reasoning {
			b = append(b, open...)
		}
		b = append(b, words[i%len(words)]...)
		if i == rd.maxToks-1 {
			b = append(b, end...)
		} else {
			b = append(b, ' ')
		}
	}
	return b
}

// appendTokens appends tokens [start, start+count) of segment g as the text of a JSON string.
func (rd *render) appendTokens(b []byte, g seg, start, count int) []byte {
	if g == segTool {
		return rd.appendArgs(b, start, count, true)
	}
	return appendWords(b, start, count)
}

// appendSegment appends the whole text of segment g as the text of a JSON string.
func (rd *render) appendSegment(b []byte, g seg) []byte {
	start, end := rd.span(g)
	return rd.appendTokens(b, g, start, end-start)
}

// evKind names the events that carry no tokens. Each API has its own; the tables below say
// which come where.
type evKind uint8

const (
	evRole       evKind = iota // chat: the assistant role chunk
	evFinish                   // chat, completions: the chunk with finish_reason
	evUsage                    // chat, completions: the usage chunk (include_usage)
	evDone                     // chat, completions: data: [DONE]
	evCreated                  // responses: response.created
	evInProgress               // responses: response.in_progress
	evItemAdded                // responses: response.output_item.added
	evPartAdded                // responses: response.content_part.added
	evDeltaDone                // responses: response.{reasoning_text,output_text,function_call_arguments}.done
	evPartDone                 // responses: response.content_part.done
	evItemDone                 // responses: response.output_item.done
	evCompleted                // responses: response.completed
	evMsgStart                 // messages: message_start
	evPing                     // messages: ping
	evBlockStart               // messages: content_block_start
	evSignature                // messages: the thinking block's signature_delta
	evBlockStop                // messages: content_block_stop
	evMsgDelta                 // messages: message_delta (stop_reason, usage)
	evMsgStop                  // messages: message_stop
	evXsim                     // every API: the x-sim ground-truth comment
)

// The event tables (static: a stream allocates nothing to walk them).
var (
	respPrelude    = []evKind{evCreated, evInProgress}
	msgPrelude     = []evKind{evMsgStart, evPing}
	chatOpenFirst  = []evKind{evRole}
	respOpenPart   = []evKind{evItemAdded, evPartAdded}
	respOpenItem   = []evKind{evItemAdded}
	msgOpen        = []evKind{evBlockStart}
	respClosePart  = []evKind{evDeltaDone, evPartDone, evItemDone}
	respCloseItem  = []evKind{evDeltaDone, evItemDone}
	msgCloseThink  = []evKind{evSignature, evBlockStop}
	msgClose       = []evKind{evBlockStop}
	openAIEnd      = []evKind{evFinish, evXsim, evDone}
	openAIEndUsage = []evKind{evFinish, evUsage, evXsim, evDone}
	respEnd        = []evKind{evXsim, evCompleted}
	msgEnd         = []evKind{evMsgDelta, evXsim, evMsgStop}
)

// prelude is the events sent once the engine has admitted the request, before any token.
func (rd *render) prelude() []evKind {
	switch rd.api {
	case apiResponses:
		return respPrelude
	case apiMessages:
		return msgPrelude
	}
	return nil
}

// opens is the events before the first delta of segment g.
func (rd *render) opens(g seg) []evKind {
	switch rd.api {
	case apiChat:
		if start, _ := rd.span(g); start == 0 {
			return chatOpenFirst
		}
	case apiResponses:
		if g == segTool {
			return respOpenItem
		}
		return respOpenPart
	case apiMessages:
		return msgOpen
	}
	return nil
}

// closes is the events after the last delta of segment g.
func (rd *render) closes(g seg) []evKind {
	switch rd.api {
	case apiResponses:
		if g == segTool {
			return respCloseItem
		}
		return respClosePart
	case apiMessages:
		if g == segReasoning {
			return msgCloseThink
		}
		return msgClose
	}
	return nil
}

// end is the events after the last segment's closes: finish, usage, x-sim, the terminal event.
func (rd *render) end(usage bool) []evKind {
	switch rd.api {
	case apiResponses:
		return respEnd
	case apiMessages:
		return msgEnd
	}
	if usage {
		return openAIEndUsage
	}
	return openAIEnd
}

// appendEvent appends event k (of segment g where it belongs to one); evXsim is the writer's.
func (rd *render) appendEvent(b []byte, k evKind, g seg) []byte {
	switch rd.api {
	case apiResponses:
		return rd.appendRespEvent(b, k, g)
	case apiMessages:
		return rd.appendMsgEvent(b, k, g)
	}
	return rd.appendOpenAIEvent(b, k)
}

// appendDelta appends the event carrying tokens [start, start+count) of segment g;
// terminated=false leaves out its blank line (the malformed fault).
func (rd *render) appendDelta(b []byte, g seg, start, count int, terminated bool) []byte {
	switch rd.api {
	case apiResponses:
		b = rd.appendRespDelta(b, g, start, count)
	case apiMessages:
		b = rd.appendMsgDelta(b, g, start, count)
	default:
		b = rd.appendOpenAIDelta(b, g, start, count)
	}
	if terminated {
		return append(b, "\n\n"...)
	}
	return append(b, '\n')
}

// appendBogus appends an event whose JSON is cut short (the malformed fault).
func (rd *render) appendBogus(b []byte) []byte {
	switch rd.api {
	case apiResponses:
		b = appendEventLine(b, "response.output_text.delta")
		return append(b, `{"type":"response.output_text.delta","item_id":"msg_`+"\n\n"...)
	case apiMessages:
		b = appendEventLine(b, "content_block_delta")
		return append(b, `{"type":"content_block_delta","index":0,"de`+"\n\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	return append(b, `"choices":[{"index":0,"te`+"\n\n"...)
}

// appendEventLine begins a typed SSE event: "event: <typ>" and the data field's name.
func appendEventLine(b []byte, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	return append(b, "\ndata: "...)
}

// appendFull appends the non-streaming response body.
func (rd *render) appendFull(b []byte) []byte {
	switch rd.api {
	case apiResponses:
		b = rd.appendResponse(b, true)
		return append(b, '\n')
	case apiMessages:
		return rd.appendMessage(b)
	}
	return rd.appendOpenAIFull(b)
}

// appendXsim appends the ground-truth comment: the engine's timings of q, the deltas' stamps
// before (sent_ns) and after (sent_end_ns) their writes, and the model that served it.
// sent_end_ns may be shorter than sent_ns: with CoalesceTail the last deltas share the
// comment's own write, which has not returned yet.
func appendXsim(b []byte, q *seq, sent, sentEnd []int64) []byte {
	b = append(b, `: x-sim {"queue_ns":`...)
	b = strconv.AppendInt(b, q.admit-q.arrive, 10)
	b = append(b, `,"prefill_ns":`...)
	b = strconv.AppendInt(b, q.first-q.admit, 10)
	b = append(b, `,"decode_ns":`...)
	b = strconv.AppendInt(b, q.last-q.first, 10)
	b = appendStamps(append(b, `,"sent_ns":`...), sent)
	b = appendStamps(append(b, `,"sent_end_ns":`...), sentEnd)
	b = append(b, `,"model":`...)
	b = append(b, q.model...)
	return append(b, "}\n\n"...)
}

// appendStamps appends ts as a JSON array.
func appendStamps(b []byte, ts []int64) []byte {
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return append(b, ']')
}

// appendInt appends v in decimal.
func appendInt(b []byte, v int) []byte { return strconv.AppendInt(b, int64(v), 10) }
