package sim

import "strconv"

// The OpenAI Responses API format: typed SSE events (an event: line, then data with the same
// "type" and a sequence_number counting from 0), no data: [DONE]. Output items: a reasoning
// item (rs_<id>) with one reasoning_text part, then a message (msg_<id>) with one output_text
// part, or a function_call item (fc_<id>, call_id call_<id>). The simulator always stops at
// the limit: a text answer ends the response with status "incomplete"
// (incomplete_details.reason max_output_tokens), a tool call with status "completed"; the
// terminal event is response.completed either way, as from vLLM.

// respTypes are the event types by kind.
var respTypes = [...]string{
	evCreated:    "response.created",
	evInProgress: "response.in_progress",
	evItemAdded:  "response.output_item.added",
	evPartAdded:  "response.content_part.added",
	evPartDone:   "response.content_part.done",
	evItemDone:   "response.output_item.done",
	evCompleted:  "response.completed",
}

// respDeltaTypes and respDoneTypes are the per-segment delta and done event types.
var (
	respDeltaTypes = [...]string{
		segReasoning: "response.reasoning_text.delta",
		segText:      "response.output_text.delta",
		segTool:      "response.function_call_arguments.delta",
	}
	respDoneTypes = [...]string{
		segReasoning: "response.reasoning_text.done",
		segText:      "response.output_text.done",
		segTool:      "response.function_call_arguments.done",
	}
)

// respItemPrefix is the id prefix of each segment's output item.
var respItemPrefix = [...]string{segReasoning: "rs_", segText: "msg_", segTool: "fc_"}

// appendRespHead begins event typ: the event line, the type and the sequence number.
func (rd *render) appendRespHead(b []byte, typ string) []byte {
	b = appendEventLine(b, typ)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = appendInt(b, rd.seqNo)
	rd.seqNo++
	return b
}

// appendItemRef appends the members naming g's item: item_id, output_index and, for parts,
// content_index.
func (rd *render) appendItemRef(b []byte, g seg) []byte {
	b = append(b, `,"item_id":"`...)
	b = rd.appendItemID(b, g)
	b = append(b, `","output_index":`...)
	b = appendInt(b, rd.index(g))
	if g != segTool {
		b = append(b, `,"content_index":0`...)
	}
	return b
}

// appendItemID appends the id of g's output item.
func (rd *render) appendItemID(b []byte, g seg) []byte {
	b = append(b, respItemPrefix[g]...)
	return append(b, rd.id...)
}

func (rd *render) appendRespDelta(b []byte, g seg, start, count int) []byte {
	b = rd.appendRespHead(b, respDeltaTypes[g])
	b = rd.appendItemRef(b, g)
	b = append(b, `,"delta":"`...)
	b = rd.appendTokens(b, g, start, count)
	if g == segText {
		return append(b, `","logprobs":[]}`...)
	}
	return append(b, `"}`...)
}

func (rd *render) appendRespEvent(b []byte, k evKind, g seg) []byte {
	switch k {
	case evCreated, evInProgress, evCompleted:
		b = rd.appendRespHead(b, respTypes[k])
		b = append(b, `,"response":`...)
		b = rd.appendResponse(b, k == evCompleted)
	case evItemAdded, evItemDone:
		b = rd.appendRespHead(b, respTypes[k])
		b = append(b, `,"output_index":`...)
		b = appendInt(b, rd.index(g))
		b = append(b, `,"item":`...)
		b = rd.appendItem(b, g, k == evItemDone)
	case evPartAdded, evPartDone:
		b = rd.appendRespHead(b, respTypes[k])
		b = rd.appendItemRef(b, g)
		b = append(b, `,"part":`...)
		b = rd.appendPart(b, g, k == evPartDone)
	case evDeltaDone:
		b = rd.appendRespHead(b, respDoneTypes[g])
		b = rd.appendItemRef(b, g)
		if g == segTool {
			b = append(b, `,"arguments":"`...)
		} else {
			b = append(b, `,"text":"`...)
		}
		b = rd.appendSegment(b, g)
		b = append(b, '"')
		if g == segText {
			b = append(b, `,"logprobs":[]`...)
		}
	default:
		panic("sim: no responses event " + strconv.Itoa(int(k)))
	}
	return append(b, "}\n\n"...)
}

// appendResponse appends the response object: in progress (no output, no usage) or done.
func (rd *render) appendResponse(b []byte, done bool) []byte {
	b = append(b, `{"id":"resp_`...)
	b = append(b, rd.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = strconv.AppendInt(b, rd.created, 10)
	switch {
	case !done:
		b = append(b, `,"status":"in_progress","error":null,"incomplete_details":null`...)
	case rd.tool != "":
		b = append(b, `,"status":"completed","error":null,"incomplete_details":null`...)
	default:
		b = append(b, `,"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"}`...)
	}
	b = append(b, `,"model":`...)
	b = append(b, rd.model...)
	b = append(b, `,"output":[`...)
	if !done {
		return append(b, `],"usage":null}`...)
	}
	if rd.reasoning > 0 {
		b = rd.appendItem(b, segReasoning, true)
		b = append(b, ',')
	}
	b = rd.appendItem(b, rd.answer(), true)
	b = append(b, `],"usage":{"input_tokens":`...)
	b = appendInt(b, rd.prompt)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, rd.cached)
	b = append(b, `},"output_tokens":`...)
	b = appendInt(b, rd.maxToks)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, rd.reasoning)
	b = append(b, `},"total_tokens":`...)
	b = appendInt(b, rd.prompt+rd.maxToks)
	return append(b, "}}"...)
}

// appendItem appends g's output item, as added (empty) or done (whole).
func (rd *render) appendItem(b []byte, g seg, done bool) []byte {
	b = append(b, `{"id":"`...)
	b = rd.appendItemID(b, g)
	status := "in_progress"
	switch {
	case !done:
	case g == segText:
		status = "incomplete" // stopped at the limit
	default:
		status = "completed"
	}
	switch g {
	case segReasoning:
		b = append(b, `","type":"reasoning","summary":[],"content":[`...)
		if done {
			b = rd.appendPart(b, g, true)
		}
		b = append(b, `],"status":"`...)
		b = append(b, status...)
		return append(b, `"}`...)
	case segText:
		b = append(b, `","type":"message","status":"`...)
		b = append(b, status...)
		b = append(b, `","role":"assistant","content":[`...)
		if done {
			b = rd.appendPart(b, g, true)
		}
		return append(b, "]}"...)
	}
	b = append(b, `","type":"function_call","status":"`...)
	b = append(b, status...)
	b = append(b, `","arguments":"`...)
	if done {
		b = rd.appendSegment(b, g)
	}
	b = append(b, `","call_id":"call_`...)
	b = append(b, rd.id...)
	b = append(b, `","name":`...)
	b = append(b, rd.tool...)
	return append(b, '}')
}

// appendPart appends g's content part (reasoning_text or output_text), empty or whole.
func (rd *render) appendPart(b []byte, g seg, done bool) []byte {
	if g == segReasoning {
		b = append(b, `{"type":"reasoning_text","text":"`...)
	} else {
		b = append(b, `{"type":"output_text","text":"`...)
	}
	if done {
		b = rd.appendSegment(b, g)
	}
	if g == segReasoning {
		return append(b, `"}`...)
	}
	return append(b, `","annotations":[],"logprobs":[]}`...)
}
