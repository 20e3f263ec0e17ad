package sim

import (
	"strconv"
	"time"
)

// render formats one request's responses in OpenAI's wire format by appending to a byte slice:
// nothing is allocated per chunk.
type render struct {
	chat    bool
	common  []byte // {"id":"...","object":"<chunk object>","created":N,"model":"...",
	full    []byte // the same with the non-streaming object name
	prompt  int
	maxToks int
}

// newRender prepares the fixed parts of a response; modelJSON is the model name as a JSON
// string literal.
func newRender(chat bool, modelJSON string, id uint64, prompt, maxTokens int) *render {
	rd := new(render)
	rd.reset(chat, modelJSON, id, prompt, maxTokens)
	return rd
}

// reset prepares rd for another response, reusing its buffers (the fast server keeps one
// render per connection).
func (rd *render) reset(chat bool, modelJSON string, id uint64, prompt, maxTokens int) {
	prefix, chunkObj, fullObj := "cmpl-", "text_completion", "text_completion"
	if chat {
		prefix, chunkObj, fullObj = "chatcmpl-", "chat.completion.chunk", "chat.completion"
	}
	created := time.Now().Unix()
	head := func(b []byte, obj string) []byte {
		b = append(b, `{"id":"`...)
		b = append(b, prefix...)
		b = strconv.AppendUint(b, id, 16)
		b = append(b, `","object":"`...)
		b = append(b, obj...)
		b = append(b, `","created":`...)
		b = strconv.AppendInt(b, created, 10)
		b = append(b, `,"model":`...)
		b = append(b, modelJSON...)
		return append(b, ',')
	}
	rd.chat, rd.prompt, rd.maxToks = chat, prompt, maxTokens
	rd.common = head(rd.common[:0], chunkObj)
	rd.full = head(rd.full[:0], fullObj)
}

// appendWords appends output tokens [start, start+count): each a word and a space.
func appendWords(b []byte, start, count int) []byte {
	for i := start; i < start+count; i++ {
		b = append(b, words[i%len(words)]...)
		b = append(b, ' ')
	}
	return b
}

// appendChunk appends one content chunk as an SSE event; terminated=false leaves out the blank
// line (the malformed fault).
func (rd *render) appendChunk(b []byte, start, count int, terminated bool) []byte {
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	if rd.chat {
		b = append(b, `"choices":[{"index":0,"delta":{"content":"`...)
		b = appendWords(b, start, count)
		b = append(b, `"},"logprobs":null,"finish_reason":null}]}`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = appendWords(b, start, count)
		b = append(b, `","logprobs":null,"finish_reason":null,"stop_reason":null}]}`...)
	}
	if terminated {
		return append(b, "\n\n"...)
	}
	return append(b, '\n')
}

// appendRole appends the chat stream's first chunk: the assistant role, empty content.
func (rd *render) appendRole(b []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	return append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// appendBogus appends an event whose JSON is cut short (the malformed fault).
func (rd *render) appendBogus(b []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	return append(b, `"choices":[{"index":0,"te`+"\n\n"...)
}

func (rd *render) appendUsage(b []byte) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(rd.prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(rd.prompt+rd.maxToks), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(rd.maxToks), 10)
	return append(b, '}')
}

// appendTail appends the whole tail of a stream, as one write carries it with CoalesceTail:
// the final chunk, the usage chunk when asked, the x-sim comment and data: [DONE].
func (rd *render) appendTail(b []byte, q *seq, sent []int64, usage bool) []byte {
	b = rd.appendFinish(b)
	if usage {
		b = rd.appendUsageChunk(b)
	}
	b = appendXsim(b, q, sent)
	return appendDone(b)
}

// appendFinish appends the final chunk: no content, finish_reason "length".
func (rd *render) appendFinish(b []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	if rd.chat {
		return append(b, `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`+"\n\n"...)
	}
	return append(b, `"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}]}`+"\n\n"...)
}

// appendUsageChunk appends the usage chunk (stream_options.include_usage): no choices.
func (rd *render) appendUsageChunk(b []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	b = append(b, `"choices":[],`...)
	b = rd.appendUsage(b)
	return append(b, "}\n\n"...)
}

// appendXsim appends the ground-truth comment: the engine's timings of q and the send stamps.
func appendXsim(b []byte, q *seq, sent []int64) []byte {
	b = append(b, `: x-sim {"queue_ns":`...)
	b = strconv.AppendInt(b, q.admit-q.arrive, 10)
	b = append(b, `,"prefill_ns":`...)
	b = strconv.AppendInt(b, q.first-q.admit, 10)
	b = append(b, `,"decode_ns":`...)
	b = strconv.AppendInt(b, q.last-q.first, 10)
	b = append(b, `,"sent_ns":[`...)
	for i, t := range sent {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return append(b, "]}\n\n"...)
}

// appendDone appends the stream's last event.
func appendDone(b []byte) []byte { return append(b, "data: [DONE]\n\n"...) }

// appendFull appends the non-streaming response body.
func (rd *render) appendFull(b []byte, n int) []byte {
	b = append(b, rd.full...)
	if rd.chat {
		b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
		b = appendWords(b, 0, n)
		b = append(b, `"},"logprobs":null,"finish_reason":"length"}],`...)
	} else {
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = appendWords(b, 0, n)
		b = append(b, `","logprobs":null,"finish_reason":"length","stop_reason":null}],`...)
	}
	b = rd.appendUsage(b)
	return append(b, "}\n"...)
}
