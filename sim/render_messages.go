package sim

import "strconv"

// The Anthropic Messages format: typed SSE events (an event: line, then data with the same
// "type"): message_start, ping, then per content block content_block_start, its deltas and
// content_block_stop (a thinking block ends with a signature_delta), message_delta with the
// stop reason and the output tokens (thinking included), message_stop. Blocks: thinking, then
// text or tool_use (id toolu_<id>). The stop reason is max_tokens for a text answer (the
// simulator always stops at the limit), tool_use for a tool call.

// msgSignature is the thinking block's signature (opaque to clients; base64 of "sim").
const msgSignature = "c2lt"

// appendMsgHead begins event typ: the event line and the type member.
func appendMsgHead(b []byte, typ string) []byte {
	b = appendEventLine(b, typ)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	return append(b, '"')
}

// appendBlockRef begins a content block event: its head and the block index.
func (rd *render) appendBlockRef(b []byte, typ string, g seg) []byte {
	b = appendMsgHead(b, typ)
	b = append(b, `,"index":`...)
	return appendInt(b, rd.index(g))
}

func (rd *render) appendMsgDelta(b []byte, g seg, start, count int) []byte {
	b = rd.appendBlockRef(b, "content_block_delta", g)
	switch g {
	case segReasoning:
		b = append(b, `,"delta":{"type":"thinking_delta","thinking":"`...)
	case segText:
		b = append(b, `,"delta":{"type":"text_delta","text":"`...)
	case segTool:
		b = append(b, `,"delta":{"type":"input_json_delta","partial_json":"`...)
	}
	b = rd.appendTokens(b, g, start, count)
	return append(b, `"}}`...)
}

// stopReason is the message's stop_reason.
func (rd *render) stopReason() string {
	if rd.tool != "" {
		return "tool_use"
	}
	return "max_tokens"
}

func (rd *render) appendMsgEvent(b []byte, k evKind, g seg) []byte {
	switch k {
	case evMsgStart:
		b = appendMsgHead(b, "message_start")
		b = append(b, `,"message":{"id":"msg_`...)
		b = append(b, rd.id...)
		b = append(b, `","type":"message","role":"assistant","model":`...)
		b = append(b, rd.model...)
		b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
		b = rd.appendMsgUsage(b, 0)
		b = append(b, '}')
	case evPing:
		b = appendMsgHead(b, "ping")
	case evBlockStart:
		b = rd.appendBlockRef(b, "content_block_start", g)
		switch g {
		case segReasoning:
			b = append(b, `,"content_block":{"type":"thinking","thinking":"","signature":""}`...)
		case segText:
			b = append(b, `,"content_block":{"type":"text","text":""}`...)
		case segTool:
			b = append(b, `,"content_block":`...)
			b = rd.appendToolUse(b, false)
		}
	case evSignature:
		b = rd.appendBlockRef(b, "content_block_delta", g)
		b = append(b, `,"delta":{"type":"signature_delta","signature":"`+msgSignature+`"}`...)
	case evBlockStop:
		b = rd.appendBlockRef(b, "content_block_stop", g)
	case evMsgDelta:
		b = appendMsgHead(b, "message_delta")
		b = append(b, `,"delta":{"stop_reason":"`...)
		b = append(b, rd.stopReason()...)
		b = append(b, `","stop_sequence":null},"usage":{"output_tokens":`...)
		b = appendInt(b, rd.maxToks)
		b = append(b, '}')
	case evMsgStop:
		b = appendMsgHead(b, "message_stop")
	default:
		panic("sim: no messages event " + strconv.Itoa(int(k)))
	}
	return append(b, "}\n\n"...)
}

// appendToolUse appends the tool_use block: empty input when it starts, the whole input in a
// non-streaming message.
func (rd *render) appendToolUse(b []byte, whole bool) []byte {
	b = append(b, `{"type":"tool_use","id":"toolu_`...)
	b = append(b, rd.id...)
	b = append(b, `","name":`...)
	b = append(b, rd.tool...)
	b = append(b, `,"input":`...)
	if whole {
		b = rd.appendArgs(b, rd.reasoning, rd.maxToks-rd.reasoning, false)
	} else {
		b = append(b, "{}"...)
	}
	return append(b, '}')
}

// appendMsgUsage appends Anthropic's usage: input_tokens counts the prompt tokens not read from
// the cache (Anthropic's prompt is input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens).
func (rd *render) appendMsgUsage(b []byte, output int) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, rd.prompt-rd.cached)
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	b = appendInt(b, rd.cached)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, output)
	return append(b, '}')
}

// appendMessage appends the non-streaming message.
func (rd *render) appendMessage(b []byte) []byte {
	b = append(b, `{"id":"msg_`...)
	b = append(b, rd.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = append(b, rd.model...)
	b = append(b, `,"content":[`...)
	if rd.reasoning > 0 {
		b = append(b, `{"type":"thinking","thinking":"`...)
		b = rd.appendSegment(b, segReasoning)
		b = append(b, `","signature":"`+msgSignature+`"},`...)
	}
	if rd.tool != "" {
		b = rd.appendToolUse(b, true)
	} else {
		b = append(b, `{"type":"text","text":"`...)
		b = rd.appendSegment(b, segText)
		b = append(b, `"}`...)
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, rd.stopReason()...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	b = rd.appendMsgUsage(b, rd.maxToks)
	return append(b, "}\n"...)
}
