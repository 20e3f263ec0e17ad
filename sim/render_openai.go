package sim

import "strconv"

// The OpenAI completions and chat formats: data-only SSE chunks, a final chunk with
// finish_reason, the usage chunk (stream_options.include_usage), data: [DONE].

// resetOpenAI prepares the fixed head of every chunk and of the non-streaming body.
func (rd *render) resetOpenAI() {
	prefix, chunkObj, fullObj := "cmpl-", "text_completion", "text_completion"
	if rd.api == apiChat {
		prefix, chunkObj, fullObj = "chatcmpl-", "chat.completion.chunk", "chat.completion"
	}
	head := func(b []byte, obj string) []byte {
		b = append(b, `{"id":"`...)
		b = append(b, prefix...)
		b = append(b, rd.id...)
		b = append(b, `","object":"`...)
		b = append(b, obj...)
		b = append(b, `","created":`...)
		b = strconv.AppendInt(b, rd.created, 10)
		b = append(b, `,"model":`...)
		b = append(b, rd.model...)
		return append(b, ',')
	}
	rd.common = head(rd.common[:0], chunkObj)
	rd.full = head(rd.full[:0], fullObj)
}

// appendOpenAIDelta appends a chunk carrying tokens [start, start+count) of segment g, without
// its blank line.
func (rd *render) appendOpenAIDelta(b []byte, g seg, start, count int) []byte {
	b = append(b, "data: "...)
	b = append(b, rd.common...)
	if rd.api == apiCompletions {
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = appendWords(b, start, count)
		return append(b, `","logprobs":null,"finish_reason":null,"stop_reason":null}]}`...)
	}
	b = append(b, `"choices":[{"index":0,"delta":{`...)
	switch g {
	case segReasoning:
		b = append(b, '"')
		b = append(b, rd.field...)
		b = append(b, `":"`...)
		b = appendWords(b, start, count)
		b = append(b, '"')
	case segText:
		b = append(b, `"content":"`...)
		b = appendWords(b, start, count)
		b = append(b, '"')
	case segTool:
		b = append(b, `"tool_calls":[{"index":0,`...)
		if start == rd.reasoning { // the call's first delta names it
			b = rd.appendCallHead(b)
		}
		b = append(b, `"function":{`...)
		if start == rd.reasoning {
			b = append(b, `"name":`...)
			b = append(b, rd.tool...)
			b = append(b, ',')
		}
		b = append(b, `"arguments":"`...)
		b = rd.appendArgs(b, start, count, true)
		b = append(b, `"}}]`...)
	}
	return append(b, `},"logprobs":null,"finish_reason":null}]}`...)
}

// appendCallHead appends the chat tool call's "id" and "type" members.
func (rd *render) appendCallHead(b []byte) []byte {
	b = append(b, `"id":"call_`...)
	b = append(b, rd.id...)
	return append(b, `","type":"function",`...)
}

// finishReason is the chat/completions finish_reason: length (the simulator always stops at
// the limit), tool_calls for a tool call.
func (rd *render) finishReason() string {
	if rd.tool != "" {
		return "tool_calls"
	}
	return "length"
}

func (rd *render) appendOpenAIEvent(b []byte, k evKind) []byte {
	switch k {
	case evRole:
		b = append(b, "data: "...)
		b = append(b, rd.common...)
		return append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	case evFinish:
		b = append(b, "data: "...)
		b = append(b, rd.common...)
		if rd.api == apiChat {
			b = append(b, `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"`...)
			b = append(b, rd.finishReason()...)
			return append(b, `"}]}`+"\n\n"...)
		}
		return append(b, `"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}]}`+"\n\n"...)
	case evUsage:
		b = append(b, "data: "...)
		b = append(b, rd.common...)
		b = append(b, `"choices":[],`...)
		b = rd.appendOpenAIUsage(b)
		return append(b, "}\n\n"...)
	case evDone:
		return append(b, "data: [DONE]\n\n"...)
	}
	panic("sim: no OpenAI event " + strconv.Itoa(int(k)))
}

// appendOpenAIUsage appends the usage member; completion_tokens includes the reasoning
// tokens, reported apart when there are any.
func (rd *render) appendOpenAIUsage(b []byte) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = appendInt(b, rd.prompt)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, rd.prompt+rd.maxToks)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, rd.maxToks)
	if rd.reasoning > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = appendInt(b, rd.reasoning)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendOpenAIFull appends the non-streaming completions or chat body.
func (rd *render) appendOpenAIFull(b []byte) []byte {
	b = append(b, rd.full...)
	if rd.api == apiCompletions {
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = appendWords(b, 0, rd.maxToks)
		b = append(b, `","logprobs":null,"finish_reason":"length","stop_reason":null}],`...)
	} else {
		b = append(b, `"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		if rd.tool != "" {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = rd.appendSegment(b, segText)
			b = append(b, '"')
		}
		if rd.reasoning > 0 {
			b = append(b, `,"`...)
			b = append(b, rd.field...)
			b = append(b, `":"`...)
			b = rd.appendSegment(b, segReasoning)
			b = append(b, '"')
		}
		if rd.tool != "" {
			b = append(b, `,"tool_calls":[{`...)
			b = rd.appendCallHead(b)
			b = append(b, `"function":{"name":`...)
			b = append(b, rd.tool...)
			b = append(b, `,"arguments":"`...)
			b = rd.appendSegment(b, segTool)
			b = append(b, `"}}]`...)
		}
		b = append(b, `},"logprobs":null,"finish_reason":"`...)
		b = append(b, rd.finishReason()...)
		b = append(b, `"}],`...)
	}
	b = rd.appendOpenAIUsage(b)
	return append(b, "}\n"...)
}
