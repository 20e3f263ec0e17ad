package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/tokenizer"
)

// strictDecode decodes data into v, refusing unknown fields.
func strictDecode(t *testing.T, data string, v any) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// The Responses API's objects, strictly.
type (
	respObj struct {
		ID                string `json:"id"`
		Object            string `json:"object"`
		CreatedAt         int64  `json:"created_at"`
		Status            string `json:"status"`
		Error             any    `json:"error"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Model  string     `json:"model"`
		Output []respItem `json:"output"`
		Usage  *struct {
			InputTokens        int `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokens        int `json:"output_tokens"`
			OutputTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	respItem struct {
		ID        string     `json:"id"`
		Type      string     `json:"type"`
		Status    string     `json:"status"`
		Role      string     `json:"role"`
		Summary   []any      `json:"summary"`
		Content   []respPart `json:"content"`
		Arguments string     `json:"arguments"`
		CallID    string     `json:"call_id"`
		Name      string     `json:"name"`
	}
	respPart struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
		Logprobs    []any  `json:"logprobs"`
	}
	respEvent struct {
		Type           string    `json:"type"`
		SequenceNumber *int      `json:"sequence_number"`
		ItemID         string    `json:"item_id"`
		OutputIndex    *int      `json:"output_index"`
		ContentIndex   *int      `json:"content_index"`
		Delta          *string   `json:"delta"`
		Text           *string   `json:"text"`
		Arguments      *string   `json:"arguments"`
		Logprobs       []any     `json:"logprobs"`
		Item           *respItem `json:"item"`
		Part           *respPart `json:"part"`
		Response       *respObj  `json:"response"`
	}
)

// itemText is the text an output item holds: its part's text, or a call's arguments.
func itemText(it respItem) string {
	if it.Type == "function_call" {
		return it.Arguments
	}
	if len(it.Content) != 1 {
		return fmt.Sprintf("<%d parts>", len(it.Content))
	}
	return it.Content[0].Text
}

// summarizeResponse reads a finished response object into s.
func summarizeResponse(t *testing.T, r *respObj, s *streamSummary) {
	t.Helper()
	if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.CreatedAt == 0 || r.Model == "" || r.Usage == nil {
		t.Fatalf("response %+v: want object response, an id resp_..., created_at, model and usage", r)
	}
	s.finish = r.Status
	if r.IncompleteDetails != nil {
		s.finish += ":" + r.IncompleteDetails.Reason
	}
	u := r.Usage
	s.usage = [3]int{u.InputTokens, u.OutputTokens, u.TotalTokens}
	s.reasoningUse = u.OutputTokensDetails.ReasoningTokens
	for _, it := range r.Output {
		switch it.Type {
		case "reasoning":
			s.reasoning += itemText(it)
		case "message":
			s.text += itemText(it)
		case "function_call":
			s.args += itemText(it)
			s.tool = it.Name
		}
	}
}

// checkResponses decodes a Responses API stream: sequence numbers from 0, every event naming
// an item added before it, each .done and the final response holding what the deltas said.
func checkResponses(t *testing.T, evs []event, s *streamSummary) {
	t.Helper()
	var items []respItem // by output_index, as added
	deltas := map[string]*string{"reasoning": &s.reasoning, "message": &s.text, "function_call": &s.args}
	seq := 0
	for i, e := range evs {
		if e.name == "" {
			continue // x-sim
		}
		var ev respEvent
		strictDecode(t, e.data, &ev)
		if ev.SequenceNumber == nil || *ev.SequenceNumber != seq {
			t.Errorf("event %d %s: sequence_number %v; want %d", i, e.name, ev.SequenceNumber, seq)
		}
		seq++
		var it *respItem // the item the event names
		if ev.OutputIndex != nil {
			if *ev.OutputIndex < len(items) {
				it = &items[*ev.OutputIndex]
			} else if e.name != "response.output_item.added" || *ev.OutputIndex != len(items) {
				t.Fatalf("event %d %s: output_index %d of %d items", i, e.name, *ev.OutputIndex, len(items))
			}
			if ev.ItemID != "" && (it == nil || ev.ItemID != it.ID) {
				t.Errorf("event %d %s: item_id %q; want the id of item %d", i, e.name, ev.ItemID, *ev.OutputIndex)
			}
		}
		switch e.name {
		case "response.created", "response.in_progress":
			if i > 1 || ev.Response == nil || ev.Response.Status != "in_progress" || len(ev.Response.Output) != 0 || ev.Response.Usage != nil {
				t.Errorf("event %d %s: %s; want it first, in progress, with no output or usage", i, e.name, e.data)
			}
		case "response.output_item.added":
			if ev.Item == nil || ev.Item.Status != "in_progress" || len(ev.Item.Content) != 0 || ev.Item.Arguments != "" {
				t.Errorf("event %d: item %+v; want one in progress, empty", i, ev.Item)
			}
			items = append(items, *ev.Item)
		case "response.reasoning_text.delta", "response.output_text.delta", "response.function_call_arguments.delta":
			want := map[string]string{"response.reasoning_text.delta": "reasoning", "response.output_text.delta": "message", "response.function_call_arguments.delta": "function_call"}[e.name]
			if it == nil || it.Type != want || ev.Delta == nil || *ev.Delta == "" {
				t.Fatalf("event %d %s: %s; want a non-empty delta of a %s item", i, e.name, e.data, want)
			}
			*deltas[want] += *ev.Delta
			s.contentChunks++
		case "response.reasoning_text.done", "response.output_text.done", "response.function_call_arguments.done":
			got := ev.Text
			if ev.Arguments != nil {
				got = ev.Arguments
			}
			if it == nil || got == nil || *got != *deltas[it.Type] {
				t.Errorf("event %d %s: %s; want the item's deltas %q", i, e.name, e.data, *deltas[it.Type])
			}
		case "response.content_part.added", "response.content_part.done":
			want := ""
			if e.name == "response.content_part.done" {
				want = *deltas[it.Type]
			}
			if it == nil || ev.Part == nil || ev.Part.Text != want || ev.ContentIndex == nil || *ev.ContentIndex != 0 {
				t.Errorf("event %d %s: %s; want part 0 with text %q", i, e.name, e.data, want)
			}
		case "response.output_item.done":
			if ev.Item == nil || ev.Item.ID != it.ID || ev.Item.Status == "in_progress" || itemText(*ev.Item) != *deltas[it.Type] {
				t.Errorf("event %d: item %+v; want %s done with %q", i, ev.Item, it.ID, *deltas[it.Type])
			}
			*it = *ev.Item
		case "response.completed":
			if ev.Response == nil {
				t.Fatalf("response.completed without a response: %s", e.data)
			}
			streamed := *s
			*s = streamSummary{contentChunks: s.contentChunks, truth: s.truth}
			summarizeResponse(t, ev.Response, s)
			if s.text != streamed.text || s.reasoning != streamed.reasoning || s.args != streamed.args {
				t.Errorf("response.completed holds text %q, reasoning %q, arguments %q; the deltas said %q, %q, %q",
					s.text, s.reasoning, s.args, streamed.text, streamed.reasoning, streamed.args)
			}
			for j, it := range items {
				if j >= len(ev.Response.Output) || ev.Response.Output[j].ID != it.ID {
					t.Errorf("response.completed output does not list item %d (%s) in place", j, it.ID)
				}
			}
		default:
			t.Errorf("event %d: unexpected %s", i, e.name)
		}
	}
}

// The Anthropic Messages objects, strictly.
type (
	msgUsage struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	}
	msgBlock struct {
		Type      string         `json:"type"`
		Text      *string        `json:"text"`
		Thinking  *string        `json:"thinking"`
		Signature *string        `json:"signature"`
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Input     map[string]any `json:"input"`
	}
	msgObj struct {
		ID           string     `json:"id"`
		Type         string     `json:"type"`
		Role         string     `json:"role"`
		Model        string     `json:"model"`
		Content      []msgBlock `json:"content"`
		StopReason   *string    `json:"stop_reason"`
		StopSequence any        `json:"stop_sequence"`
		Usage        msgUsage   `json:"usage"`
	}
	msgEvent struct {
		Type         string    `json:"type"`
		Index        *int      `json:"index"`
		Message      *msgObj   `json:"message"`
		ContentBlock *msgBlock `json:"content_block"`
		Delta        *struct {
			Type         string `json:"type"`
			Text         string `json:"text"`
			Thinking     string `json:"thinking"`
			PartialJSON  string `json:"partial_json"`
			Signature    string `json:"signature"`
			StopReason   string `json:"stop_reason"`
			StopSequence any    `json:"stop_sequence"`
		} `json:"delta"`
		Usage *msgUsage `json:"usage"`
	}
)

// summarizeMessage reads a whole message into s.
func summarizeMessage(t *testing.T, m *msgObj, s *streamSummary) {
	t.Helper()
	if m.Type != "message" || m.Role != "assistant" || !strings.HasPrefix(m.ID, "msg_") || m.StopReason == nil {
		t.Fatalf("message %+v: want type message, role assistant, an id msg_..., a stop_reason", m)
	}
	s.finish = *m.StopReason
	u := m.Usage
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	s.usage = [3]int{prompt, u.OutputTokens, prompt + u.OutputTokens}
	for _, b := range m.Content {
		switch {
		case b.Type == "thinking" && b.Thinking != nil && b.Signature != nil && *b.Signature != "":
			s.reasoning += *b.Thinking
		case b.Type == "text" && b.Text != nil:
			s.text += *b.Text
		case b.Type == "tool_use" && strings.HasPrefix(b.ID, "toolu_"):
			in, _ := json.Marshal(b.Input)
			s.args, s.tool = string(in), b.Name
		default:
			t.Errorf("message block %+v: not a thinking block with a signature, a text block or a tool_use", b)
		}
	}
}

// checkMessages decodes an Anthropic stream: message_start first, blocks opened in index
// order with deltas of their own kind, message_delta with the stop reason and usage,
// message_stop last.
func checkMessages(t *testing.T, evs []event, s *streamSummary) {
	t.Helper()
	var blocks []string // block types by index
	open := -1          // the open block's index
	signed := false
	for i, e := range evs {
		if e.name == "" {
			continue // x-sim
		}
		var ev msgEvent
		strictDecode(t, e.data, &ev)
		if (i == 0) != (e.name == "message_start") {
			t.Errorf("event %d is %s; want message_start first and only first", i, e.name)
		}
		switch e.name {
		case "message_start":
			m := ev.Message
			if m == nil || m.StopReason != nil || len(m.Content) != 0 || m.Usage.OutputTokens != 0 {
				t.Fatalf("message_start %s: want no content, no stop_reason, 0 output tokens", e.data)
			}
			s.usage[0] = m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens
		case "ping":
		case "content_block_start":
			if open >= 0 || ev.Index == nil || *ev.Index != len(blocks) || ev.ContentBlock == nil {
				t.Fatalf("event %d: %s; want block %d to start after the previous one stopped", i, e.data, len(blocks))
			}
			b := ev.ContentBlock
			switch b.Type {
			case "tool_use":
				if !strings.HasPrefix(b.ID, "toolu_") || b.Name == "" || len(b.Input) != 0 {
					t.Errorf("tool_use block %s: want an id toolu_..., a name, empty input", e.data)
				}
				s.tool = b.Name
			case "thinking", "text":
			default:
				t.Errorf("block type %q", b.Type)
			}
			blocks, open = append(blocks, b.Type), *ev.Index
		case "content_block_delta":
			if ev.Index == nil || *ev.Index != open || ev.Delta == nil {
				t.Fatalf("event %d: %s; want a delta of the open block %d", i, e.data, open)
			}
			d, kind := ev.Delta, blocks[open]
			switch {
			case kind == "thinking" && d.Type == "thinking_delta" && d.Thinking != "" && !signed:
				s.reasoning += d.Thinking
			case kind == "thinking" && d.Type == "signature_delta" && d.Signature != "":
				signed = true
				continue
			case kind == "text" && d.Type == "text_delta" && d.Text != "":
				s.text += d.Text
			case kind == "tool_use" && d.Type == "input_json_delta" && d.PartialJSON != "":
				s.args += d.PartialJSON
			default:
				t.Fatalf("event %d: delta %s in a %s block", i, e.data, kind)
			}
			s.contentChunks++
		case "content_block_stop":
			if ev.Index == nil || *ev.Index != open || blocks[open] == "thinking" && !signed {
				t.Errorf("event %d: %s; want the open block %d stopped (a thinking block signed)", i, e.data, open)
			}
			open = -1
		case "message_delta":
			if open >= 0 || ev.Delta == nil || ev.Delta.StopReason == "" || ev.Usage == nil {
				t.Fatalf("event %d: %s; want a stop_reason and usage after every block stopped", i, e.data)
			}
			s.finish = ev.Delta.StopReason
			s.usage[1], s.usage[2] = ev.Usage.OutputTokens, s.usage[0]+ev.Usage.OutputTokens
		case "message_stop":
			if i != len(evs)-1 || s.finish == "" {
				t.Errorf("message_stop at event %d of %d, stop reason %q; want it last, after message_delta", i, len(evs), s.finish)
			}
		default:
			t.Errorf("event %d: unexpected %s", i, e.name)
		}
	}
}

// checkFull decodes a non-streaming body of API a (completions, chat, responses, messages).
func checkFull(t *testing.T, w wire, a api) streamSummary {
	t.Helper()
	s := streamSummary{usage: [3]int{-1, -1, -1}, reasoningUse: -1}
	switch a {
	case apiResponses:
		var r respObj
		strictDecode(t, string(w.body), &r)
		summarizeResponse(t, &r, &s)
	case apiMessages:
		var m msgObj
		strictDecode(t, string(w.body), &m)
		summarizeMessage(t, &m, &s)
	default:
		var r struct {
			Object  string `json:"object"`
			Choices []struct {
				Text    string `json:"text"`
				Message struct {
					Role             string         `json:"role"`
					Content          *string        `json:"content"`
					ReasoningContent string         `json:"reasoning_content"`
					Reasoning        string         `json:"reasoning"`
					ToolCalls        []toolCallJSON `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens            int `json:"prompt_tokens"`
				CompletionTokens        int `json:"completion_tokens"`
				TotalTokens             int `json:"total_tokens"`
				CompletionTokensDetails *struct {
					ReasoningTokens int `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(w.body, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("decode %s: %v", w.body, err)
		}
		c := r.Choices[0]
		obj := map[api]string{apiCompletions: "text_completion", apiChat: "chat.completion"}[a]
		if r.Object != obj {
			t.Errorf("object %q; want %q", r.Object, obj)
		}
		s.text, s.finish = c.Text, c.FinishReason
		if m := c.Message; a == apiChat {
			if m.Content != nil {
				s.text = *m.Content
			}
			s.reasoning = m.ReasoningContent + m.Reasoning
			for _, tc := range m.ToolCalls {
				s.args, s.tool = tc.Function.Arguments, tc.Function.Name
			}
		}
		s.usage = [3]int{r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens}
		if d := r.Usage.CompletionTokensDetails; d != nil {
			s.reasoningUse = d.ReasoningTokens
		}
	}
	for _, h := range []string{"X-Sim-Queue-Ns", "X-Sim-Prefill-Ns", "X-Sim-Decode-Ns", "X-Sim-Sent-Ns"} {
		if !strings.Contains(w.head, "\r\n"+h+": ") {
			t.Errorf("response lacks header %s:\n%s", h, w.head)
		}
	}
	return s
}

// wantFinish is the finish reason of an answer of API a (the simulator always stops at the
// limit unless it calls a tool).
func wantFinish(a api, tool bool) string {
	switch a {
	case apiResponses:
		if tool {
			return "completed"
		}
		return "incomplete:max_output_tokens"
	case apiMessages:
		if tool {
			return "tool_use"
		}
		return "max_tokens"
	case apiChat:
		if tool {
			return "tool_calls"
		}
	}
	return "length"
}

// checkOutput checks what a response of case tt said: its reasoning and answer (text, or a
// tool call whose arguments are {"text":"<words>"}) by word count, finish reason and usage.
func checkOutput(t *testing.T, tt conformanceCase, s streamSummary) {
	t.Helper()
	if got := tokenizer.CountWords(s.reasoning); got != tt.reasoning {
		t.Errorf("CountWords(reasoning %q) = %d; want %d", s.reasoning, got, tt.reasoning)
	}
	answer := tt.tokens - tt.reasoning
	if tt.tool != "" {
		var args struct {
			Text string `json:"text"`
		}
		d := json.NewDecoder(strings.NewReader(s.args))
		d.DisallowUnknownFields()
		if err := d.Decode(&args); err != nil || tokenizer.CountWords(args.Text) != answer || tokenizer.CountWords(s.args) != answer {
			t.Errorf("tool arguments %q (%v): want {\"text\":\"...\"} of %d words", s.args, err, answer)
		}
		if s.tool != tt.tool || s.text != "" {
			t.Errorf("tool %q, text %q; want a call of %q and no text", s.tool, s.text, tt.tool)
		}
	} else if got := tokenizer.CountWords(s.text); got != answer || s.args != "" {
		t.Errorf("CountWords(text %q) = %d, arguments %q; want %d words, no arguments", s.text, got, s.args, answer)
	}
	if want := wantFinish(tt.api, tt.tool != ""); s.finish != want {
		t.Errorf("finish = %q; want %q", s.finish, want)
	}
	want, wantReasoning := [3]int{-1, -1, -1}, -1
	if tt.usage || !tt.stream || tt.api == apiResponses || tt.api == apiMessages {
		want = [3]int{tt.prompt, tt.tokens, tt.prompt + tt.tokens}
		if tt.reasoning > 0 && tt.api == apiChat || tt.api == apiResponses {
			wantReasoning = tt.reasoning
		}
	}
	if s.usage != want || s.reasoningUse != wantReasoning {
		t.Errorf("usage (prompt, completion, total) = %v, reasoning %d; want %v, %d", s.usage, s.reasoningUse, want, wantReasoning)
	}
}

// apiFaultCase is a fault on a newer API; its golden transcript is fault-<name>.
type apiFaultCase struct {
	name  string
	api   api
	fault string
}

// apiFaultBodies are the requests of the fault cases: streams of 4 tokens (2 of reasoning with
// apiFaultConfig, so the mid-stream faults strike at the answer's first token), an
// embeddings batch of two inputs, and rerank and score requests of two documents.
var apiFaultBodies = map[api]string{
	apiResponses:  `{"model":"sim","input":"a b c","max_output_tokens":4,"stream":true}`,
	apiMessages:   `{"model":"sim","messages":[{"role":"user","content":"a b c"}],"max_tokens":4,"stream":true}`,
	apiEmbeddings: `{"model":"sim","input":["a b c","d e"],"dimensions":4}`,
	apiRerank:     `{"model":"sim","query":"q","documents":["a b c","d e"]}`,
	apiScore:      `{"model":"sim","text_1":"q","text_2":["a b c","d e"]}`,
}

func apiFaultConfig(c *Config) { c.ReasoningTokens = 2 }

var apiFaultCases = func() []apiFaultCase {
	var out []apiFaultCase
	for _, a := range []api{apiResponses, apiMessages, apiEmbeddings, apiRerank, apiScore} {
		for _, f := range []string{Fault429, Fault503, FaultStall, FaultDrop, FaultMalformed} {
			out = append(out, apiFaultCase{strings.TrimPrefix(apiPaths[a], "/v1/") + "-" + f, a, f})
		}
	}
	return out
}()

// TestFaultsOtherAPIs: every fault on the Responses, Messages, embeddings, rerank and score
// endpoints, in their own formats: errors in the API's error body, a stall between the
// answer's first two token events, a dropped connection halfway, a malformed event (or a cut
// JSON body).
func TestFaultsOtherAPIs(t *testing.T) {
	const stall = 300 * time.Millisecond
	cfg := zeroConfig()
	apiFaultConfig(&cfg)
	cfg.Stall = stall
	_, addr := startServer(t, cfg)
	for _, tt := range apiFaultCases {
		t.Run(tt.name, func(t *testing.T) {
			w := rawPost(t, addr, apiPaths[tt.api], apiFaultBodies[tt.api], FaultHeader, tt.fault)
			golden(t, "fault-"+tt.name, normalize(w))
			status, complete := 200, tt.fault != FaultDrop
			switch tt.fault {
			case Fault429, Fault503:
				status, _ = strconv.Atoi(tt.fault)
			}
			if w.status != status || w.complete != complete {
				t.Fatalf("status %d complete %v; want %d, %v\n%s%s", w.status, w.complete, status, complete, w.head, w.body)
			}
			if status != 200 {
				checkErrorBody(t, w, tt.api == apiMessages)
				return
			}
			if tt.api == apiEmbeddings || tt.api.ranks() {
				checkEmbedFault(t, tt.fault, w, stall)
				return
			}
			_, err := parseSSE(w.body)
			switch tt.fault {
			case FaultStall:
				s := checkStream(t, w.body, tt.api)
				if gap := time.Duration(s.truth.SentNs[2] - s.truth.SentNs[1]); gap < stall {
					t.Errorf("gap across the stall = %v; want at least %v", gap, stall)
				}
			case FaultDrop:
				evs, _ := parseSSE(w.body)
				deltas := 0
				for _, e := range evs {
					if eventName(e) == "content" {
						deltas++
					}
				}
				if err != nil || strings.Contains(string(w.body), "x-sim") || deltas != 2 {
					t.Errorf("a dropped stream should hold whole events, exactly 2 token events (not %d) and no x-sim (%v):\n%s", deltas, err, w.body)
				}
			case FaultMalformed:
				if err == nil {
					t.Errorf("strict parser accepted the malformed stream:\n%s", w.body)
				}
			}
		})
	}
}

// checkEmbedFault checks a mid-response fault of an embeddings or ranking request.
func checkEmbedFault(t *testing.T, fault string, w wire, stall time.Duration) {
	t.Helper()
	valid := json.Valid(w.body)
	switch fault {
	case FaultStall:
		if !valid || w.elapsed < stall {
			t.Errorf("stalled response: valid JSON %v after %v; want valid after at least %v", valid, w.elapsed, stall)
		}
	case FaultDrop, FaultMalformed:
		if valid || len(w.body) == 0 {
			t.Errorf("%s response: %q; want half a body", fault, w.body)
		}
	}
}
