package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// evWant is what a test expects parseEvent to make of one event.
type evWant struct {
	content, reasoning, tools, items int
	finish                           string
	final, usage                     bool
	prompt, completion, cached, rsn  int64
	isErr                            bool
	text                             string
}

func checkEvent(t *testing.T, name string, api API, typ, data string, w evWant) {
	t.Helper()
	var p payload
	if err := parseEvent(api, []byte(typ), []byte(data), &p, true); err != nil {
		t.Errorf("%s: parseEvent(%s) error %v", name, data, err)
		return
	}
	got := evWant{p.Content, p.Reasoning, p.ToolCalls, p.Items, string(p.FinishReason), p.Final, p.HasUsage,
		p.Prompt, p.Completion, p.Cached, p.ReasoningTok, p.Error != nil, string(p.Text)}
	if got != w {
		t.Errorf("%s: parseEvent(%s)\n = %+v\nwant %+v", name, data, got, w)
	}
}

// none is evWant's base: no usage figures.
var none = evWant{prompt: -1, completion: -1, cached: -1, rsn: -1}

func with(f func(*evWant)) evWant {
	w := none
	f(&w)
	return w
}

func TestParseResponses(t *testing.T) {
	tests := []struct {
		name, typ, data string
		want            evWant
	}{
		{"created", "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","usage":null}}`, none},
		{"text delta", "response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m","output_index":1,"content_index":0,"delta":"hé\n","sequence_number":5}`,
			with(func(w *evWant) { w.content, w.text = 4, "hé\n" })},
		{"delta before type", "", `{"delta":"ab","type":"response.output_text.delta"}`,
			with(func(w *evWant) { w.content, w.text = 2, "ab" })},
		{"type from event line only", "response.output_text.delta", `{"delta":"ab"}`,
			with(func(w *evWant) { w.content, w.text = 2, "ab" })},
		{"reasoning text delta", "response.reasoning_text.delta", `{"type":"response.reasoning_text.delta","delta":"think"}`,
			with(func(w *evWant) { w.reasoning = 5 })},
		{"reasoning summary delta", "", `{"type":"response.reasoning_summary_text.delta","delta":"s"}`,
			with(func(w *evWant) { w.reasoning = 1 })},
		{"function call arguments", "", `{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":0,"delta":"{\"text\":\"a"}`,
			with(func(w *evWant) { w.tools = 1 })},
		{"text done is not tokens", "", `{"type":"response.output_text.done","text":"whole answer"}`, none},
		{"completed", "", `{"type":"response.completed","sequence_number":9,"response":{"id":"r","status":"completed","incomplete_details":null,"output":[{"type":"message","content":[{"type":"output_text","text":"x"}]}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":4},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":42}}}`,
			evWant{finish: "completed", final: true, usage: true, prompt: 12, completion: 30, cached: 4, rsn: 10}},
		{"completed incomplete", "", `{"type":"response.completed","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`,
			with(func(w *evWant) { w.finish, w.final = "incomplete", true })},
		{"incomplete", "", `{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`,
			with(func(w *evWant) { w.finish, w.final = "max_output_tokens", true })},
		{"failed", "", `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`,
			with(func(w *evWant) { w.finish, w.final, w.isErr = "failed", true, true })},
		{"error event", "error", `{"type":"error","code":"rate_limit","message":"slow down","param":null,"sequence_number":3}`,
			with(func(w *evWant) { w.isErr = true })},
	}
	for _, tt := range tests {
		checkEvent(t, tt.name, apiResponses, tt.typ, tt.data, tt.want)
	}
}

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name, typ, data string
		want            evWant
	}{
		{"message_start", "message_start", `{"type":"message_start","message":{"id":"msg","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_read_input_tokens":20,"cache_creation_input_tokens":3,"output_tokens":1}}}`,
			evWant{usage: true, prompt: 28, completion: 1, cached: 20, rsn: -1}},
		{"ping", "ping", `{"type": "ping"}`, none},
		{"block start", "", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, none},
		{"text delta", "", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi \u00e9"}}`,
			with(func(w *evWant) { w.content, w.text = 5, "Hi é" })},
		{"thinking delta", "", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
			with(func(w *evWant) { w.reasoning = 3 })},
		{"delta before type", "", `{"delta":{"text":"ab","type":"text_delta"},"index":1,"type":"content_block_delta"}`,
			with(func(w *evWant) { w.content, w.text = 2, "ab" })},
		{"input json delta", "", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\": \"a"}}`,
			with(func(w *evWant) { w.tools = 1 })},
		{"signature delta", "", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`, none},
		{"block stop", "", `{"type":"content_block_stop","index":0}`, none},
		{"message_delta", "", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
			with(func(w *evWant) { w.finish, w.usage, w.completion = "end_turn", true, 15 })},
		{"message_stop", "message_stop", `{"type":"message_stop"}`, with(func(w *evWant) { w.final = true })},
		{"error", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			with(func(w *evWant) { w.isErr = true })},
	}
	for _, tt := range tests {
		checkEvent(t, tt.name, apiMessages, tt.typ, tt.data, tt.want)
	}
}

func TestParseOpenAIReasoningAndEmbeddings(t *testing.T) {
	checkEvent(t, "chat usage with reasoning", apiOpenAI, "", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":4},"prompt_tokens_details":null}}`,
		evWant{usage: true, prompt: 3, completion: 9, cached: -1, rsn: 4})
	checkEvent(t, "embeddings", apiEmbeddings, "", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-3]},{"object":"embedding","index":1,"embedding":"AAAA"}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`,
		evWant{items: 2, usage: true, prompt: 7, completion: -1, cached: -1, rsn: -1})
}

func TestParseEventMalformed(t *testing.T) {
	for _, api := range []API{apiResponses, apiMessages, apiOpenAI} {
		for _, in := range []string{`{"type":"response.output_text.delta","delta":"a`, `[1]`, `{"type":"x"} y`, ``} {
			var p payload
			if err := parseEvent(api, nil, []byte(in), &p, false); err == nil {
				t.Errorf("parseEvent(%d, %q) = nil error; want an error", api, in)
			}
		}
	}
}

func TestParseAPI(t *testing.T) {
	for name, want := range map[string]API{"": apiOpenAI, "completions": apiOpenAI, "chat": apiOpenAI, "responses": apiResponses, "messages": apiMessages, "embeddings": apiEmbeddings,
		"rerank": apiRerank, "score": apiScore, "tei_rerank": apiTEIRerank} {
		if got, err := ParseAPI(name); err != nil || got != want {
			t.Errorf("ParseAPI(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	if _, err := ParseAPI("grpc"); err == nil {
		t.Error("ParseAPI(grpc) = nil error; want an error")
	}
}

// responsesStream and messagesStream are whole bodies as servers send them, one token event
// after another; each has 2 reasoning and 3 answer token events.
var (
	responsesStream = sseEvents([][2]string{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress"}}`},
		{"response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1"}}`},
		{"response.reasoning_text.delta", `{"type":"response.reasoning_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"hmm "}`},
		{"response.reasoning_text.delta", `{"type":"response.reasoning_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"so "}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"token "}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"token "}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"token "}`},
		{"response.completed", `{"type":"response.completed","sequence_number":7,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":4,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":9}}}`},
	})
	messagesStream = sseEvents([][2]string{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":4,"output_tokens":0}}}`},
		{"ping", `{"type":"ping"}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm "}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"so "}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"token "}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"token "}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"token "}}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":5}}`},
		{"message_stop", `{"type":"message_stop"}`},
	})
)

func sseEvents(evs [][2]string) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("event: " + e[0] + "\ndata: " + e[1] + "\n\n")
	}
	return b.String()
}

// decodeAPI decodes body (split into reads of step bytes) and sums what the events carry.
func decodeAPI(d *decoder, ev *event, pl *payload, api API, body []byte, step int) (events, content, reasoning int, final bool) {
	d.Reset()
	for i := 0; i <= len(body); i += step {
		d.Feed(body[i:min(i+step, len(body))])
		if i+step >= len(body) {
			d.Finish()
		}
		for d.Next(ev) {
			if ev.Comment {
				continue
			}
			if parseEvent(api, ev.Type, ev.Data, pl, false) == nil {
				content += pl.Content
				reasoning += pl.Reasoning
				final = final || pl.Final
			}
			events++
		}
	}
	return
}

// TestDecodeAPIAllocs: decoding and parsing Responses and Messages events allocates nothing in
// steady state, as for chat chunks.
func TestDecodeAPIAllocs(t *testing.T) {
	for _, tc := range []struct {
		api    API
		body   string
		events int
	}{{apiResponses, responsesStream, 8}, {apiMessages, messagesStream, 11}} {
		body := []byte(strings.Repeat(tc.body, 20))
		var d decoder
		var ev event
		var pl payload
		n, c, r, fin := decodeAPI(&d, &ev, &pl, tc.api, body, 4096)
		if n != 20*tc.events || c != 20*18 || r != 20*7 || !fin {
			t.Fatalf("api %d: %d events, content %d, reasoning %d, final %v; want %d, %d, %d, true", tc.api, n, c, r, fin, 20*tc.events, 20*18, 20*7)
		}
		if a := testing.AllocsPerRun(50, func() { decodeAPI(&d, &ev, &pl, tc.api, body, 4096) }); a != 0 {
			t.Errorf("api %d: allocations per %d events = %v; want 0", tc.api, n, a)
		}
	}
}

// BenchmarkDecodeAPIEvent measures SSE decoding plus parsing per event of each API's stream.
func BenchmarkDecodeAPIEvent(b *testing.B) {
	for _, tc := range []struct {
		name string
		api  API
		body string
	}{{"chat", apiOpenAI, event212}, {"responses", apiResponses, responsesStream}, {"messages", apiMessages, messagesStream}} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(strings.Repeat(tc.body, 1000/strings.Count(tc.body, "\n\n")))
			var d decoder
			var ev event
			var pl payload
			n, _, _, _ := decodeAPI(&d, &ev, &pl, tc.api, body, 4096)
			b.ReportAllocs()
			for b.Loop() {
				decodeAPI(&d, &ev, &pl, tc.api, body, 4096)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}

// fuzzEvent checks one API's parser: it never panics, accepts every JSON object encoding/json
// accepts, and counts the text of a delta event as encoding/json decodes it.
func fuzzEvent(t *testing.T, api API, b []byte) {
	var p payload
	err := parseEvent(api, nil, b, &p, true)
	var generic map[string]any
	if json.Unmarshal(b, &generic) != nil || generic == nil {
		return // the scanner is lenient about what it skips; only valid JSON objects are compared
	}
	if err != nil {
		t.Fatalf("parseEvent(%d, %q) = %v; encoding/json accepts it", api, b, err)
	}
	typ, _ := generic["type"].(string)
	var want *string
	switch {
	case api == apiResponses && typ == "response.output_text.delta":
		if s, ok := generic["delta"].(string); ok {
			want = &s
		}
	case api == apiMessages && typ == "content_block_delta":
		if d, ok := generic["delta"].(map[string]any); ok {
			if s, ok := d["text"].(string); ok {
				if _, dup := d["thinking"]; !dup {
					if _, dup := d["partial_json"]; !dup {
						want = &s
					}
				}
			}
		}
	}
	if want != nil && utf8.Valid(b) && !bytes.Contains(b, []byte(`\u`)) && (p.Content != len(*want) || string(p.Text) != *want) {
		// encoding/json replaces invalid UTF-8 and lone surrogates with U+FFFD, the scanner
		// counts the bytes it was sent; all else must agree byte for byte.
		t.Fatalf("parseEvent(%d, %q): content %d %q; want %d %q (encoding/json)", api, b, p.Content, p.Text, len(*want), *want)
	}
}

func FuzzParseResponses(f *testing.F) {
	for _, ev := range strings.Split(responsesStream, "\n\n") {
		if _, data, ok := strings.Cut(ev, "data: "); ok {
			f.Add([]byte(data))
		}
	}
	f.Add([]byte(`{"delta":"a\n\"b\"","type":"response.output_text.delta"}`))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzEvent(t, apiResponses, b) })
}

func FuzzParseMessages(f *testing.F) {
	for _, ev := range strings.Split(messagesStream, "\n\n") {
		if _, data, ok := strings.Cut(ev, "data: "); ok {
			f.Add([]byte(data))
		}
	}
	f.Add([]byte(`{"type":"content_block_delta","delta":{"text":"x\ty","type":"text_delta"}}`))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzEvent(t, apiMessages, b) })
}

// FuzzDecodeAPIs: the same Responses or Messages body split at any two points gives the same
// events and sums as in one piece.
func FuzzDecodeAPIs(f *testing.F) {
	f.Add(uint8(0), uint16(7), uint16(300))
	f.Add(uint8(1), uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, which uint8, a, b uint16) {
		api, body := apiResponses, []byte(responsesStream)
		if which%2 == 1 {
			api, body = apiMessages, []byte(messagesStream)
		}
		var d decoder
		var ev event
		var pl payload
		n0, c0, r0, f0 := decodeAPI(&d, &ev, &pl, api, body, len(body))
		i, j := int(a)%(len(body)+1), int(b)%(len(body)+1)
		if i > j {
			i, j = j, i
		}
		d.Reset()
		var n, c, r int
		var fin bool
		for k, part := range [][]byte{body[:i], body[i:j], body[j:]} {
			d.Feed(part)
			if k == 2 {
				d.Finish()
			}
			for d.Next(&ev) {
				if parseEvent(api, ev.Type, ev.Data, &pl, false) == nil {
					c += pl.Content
					r += pl.Reasoning
					fin = fin || pl.Final
				}
				n++
			}
		}
		if n != n0 || c != c0 || r != r0 || fin != f0 {
			t.Fatalf("split at %d, %d: %d events, content %d, reasoning %d, final %v; whole: %d, %d, %d, %v", i, j, n, c, r, fin, n0, c0, r0, f0)
		}
	})
}
