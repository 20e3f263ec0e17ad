package worker

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestBodyBuilderAPIs checks each API's body against docs/apis.md: the output limit's name,
// where the messages go, images as the API's content parts, tools in the API's shape.
func TestBodyBuilderAPIs(t *testing.T) {
	img := `["https://x/a.png","data:image/png;base64,AAAA"]`
	sys := `[{"role":"system","content":"s"}]`
	tools := &schemas.Tools{Count: 1, Choice: "required"}
	tests := []struct {
		name   string
		api    string
		tools  *schemas.Tools
		prompt schemas.Prompt
		prev   []byte
		answer string
		want   string
	}{
		{"responses text", "responses", nil, schemas.Prompt{Text: "q", MessagesJSON: sys}, nil, "",
			`{"model":"m","stream":true,"max_output_tokens":4,"input":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`},
		{"responses images", "responses", nil, schemas.Prompt{Text: "q", ImagesJSON: img}, nil, "",
			`{"model":"m","stream":true,"max_output_tokens":4,"input":[{"role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_image","image_url":"https://x/a.png"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`},
		{"responses next turn", "responses", nil, schemas.Prompt{Text: "q2"}, []byte(`{"role":"user","content":"q1"}`), "a1",
			`{"model":"m","stream":true,"max_output_tokens":4,"input":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"}]}`},
		{"messages system", "messages", nil, schemas.Prompt{Text: "q", MessagesJSON: sys}, nil, "",
			`{"model":"m","stream":true,"max_tokens":4,"system":"s","messages":[{"role":"user","content":"q"}]}`},
		{"messages system next turn", "messages", nil, schemas.Prompt{Text: "q2"}, []byte(`{"role":"system","content":"s"},{"role":"user","content":"q1"}`), "a1",
			`{"model":"m","stream":true,"max_tokens":4,"system":"s","messages":[{"role":"user","content":"q1"},{"role":"assistant","content":"a1"},{"role":"user","content":"q2"}]}`},
		{"messages images", "messages", nil, schemas.Prompt{Text: "q", ImagesJSON: img}, nil, "",
			`{"model":"m","stream":true,"max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"image","source":{"type":"url","url":"https://x/a.png"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`},
		{"chat images", "chat", nil, schemas.Prompt{Text: "q", ImagesJSON: img}, nil, "",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"https://x/a.png"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`},
		{"chat tools", "chat", tools, schemas.Prompt{Text: "q"}, nil, "",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"tool_choice":"required","tools":[{"function":{"description":"Synthetic tool 0 of the wirebench tools workload: takes a text.","name":"tool_0","parameters":{"properties":{"text":{"description":"what to pass on","type":"string"}},"required":["text"],"type":"object"}},"type":"function"}],"max_tokens":4,"messages":[{"role":"user","content":"q"}]}`},
		{"responses tools", "responses", tools, schemas.Prompt{Text: "q"}, nil, "",
			`{"model":"m","stream":true,"tool_choice":"required","tools":[{"description":"Synthetic tool 0 of the wirebench tools workload: takes a text.","name":"tool_0","parameters":{"properties":{"text":{"description":"what to pass on","type":"string"}},"required":["text"],"type":"object"},"type":"function"}],"max_output_tokens":4,"input":[{"role":"user","content":"q"}]}`},
		{"messages tools", "messages", tools, schemas.Prompt{Text: "q"}, nil, "",
			`{"model":"m","stream":true,"tool_choice":{"type":"any"},"tools":[{"description":"Synthetic tool 0 of the wirebench tools workload: takes a text.","input_schema":{"properties":{"text":{"description":"what to pass on","type":"string"}},"required":["text"],"type":"object"},"name":"tool_0"}],"max_tokens":4,"messages":[{"role":"user","content":"q"}]}`},
		{"embeddings text", "embeddings", nil, schemas.Prompt{Text: "a b"}, nil, "",
			`{"model":"m","encoding_format":"float","input":"a b"}`},
		{"embeddings batch", "embeddings", nil, schemas.Prompt{InputsJSON: `["a","b c"]`}, nil, "",
			`{"model":"m","encoding_format":"float","input":["a","b c"]}`},
		{"rerank", "rerank", nil, schemas.Prompt{Text: "q \"x\"", InputsJSON: `["a","b c"]`}, nil, "",
			`{"model":"m","query":"q \"x\"","documents":["a","b c"]}`},
		{"score", "score", nil, schemas.Prompt{Text: "q", InputsJSON: `["a"]`}, nil, "",
			`{"model":"m","text_1":"q","text_2":["a"]}`},
		{"tei rerank", "tei_rerank", nil, schemas.Prompt{Text: "q", InputsJSON: `["a","b"]`}, nil, "",
			`{"model":"m","query":"q","texts":["a","b"]}`},
	}
	for _, tt := range tests {
		bb, err := newBodyBuilder(schemas.Target{Model: "m", API: tt.api}, tt.tools)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := bb.prepareImages(tt.prompt.ImagesJSON); err != nil {
			t.Fatalf("%s: prepareImages: %v", tt.name, err)
		}
		body, _, err := bb.build("", 4, &tt.prompt, tt.prev, tt.answer)
		if err != nil || string(body) != tt.want {
			t.Errorf("%s: build = (%s, %v)\nwant %s", tt.name, body, err, tt.want)
		}
		if !json.Valid(body) {
			t.Errorf("%s: body is not valid JSON: %s", tt.name, body)
		}
	}
}

// TestBodyBuilderRerankTopN: rerank sends workload.documents.top_n, and expects that many scores
// (all of them when fewer documents were sent); a prompt without documents is an error.
func TestBodyBuilderRerankTopN(t *testing.T) {
	bb, err := newBodyBuilder(schemas.Target{Model: "m", API: "rerank"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bb.topN = 2
	body, _, err := bb.build("", 0, &schemas.Prompt{Text: "q", InputsJSON: `["a","b","c"]`}, nil, "")
	if want := `{"model":"m","query":"q","documents":["a","b","c"],"top_n":2}`; err != nil || string(body) != want {
		t.Errorf("build = (%s, %v); want %s", body, err, want)
	}
	if a, b := bb.answers(3), bb.answers(1); a != 2 || b != 1 {
		t.Errorf("answers(3), answers(1) = %d, %d; want 2, 1", a, b)
	}
	if _, _, err := bb.build("", 0, &schemas.Prompt{PromptID: 7, Text: "q"}, nil, ""); err == nil || !strings.Contains(err.Error(), "prompt 7: inputs_json holds no JSON array of documents") {
		t.Errorf("build(no documents) error = %v; want one naming prompt 7", err)
	}
}

// TestBodyBuilderSyntheticImage: a synthetic reference is sent as the data: URL it renders to,
// the same for every prompt that names it.
func TestBodyBuilderSyntheticImage(t *testing.T) {
	bb, err := newBodyBuilder(schemas.Target{Model: "m", API: "chat"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := schemas.Prompt{Text: "q", ImagesJSON: `["synthetic:png:8x4:7"]`}
	if err := bb.prepareImages(p.ImagesJSON); err != nil {
		t.Fatal(err)
	}
	want, err := resolveImage("synthetic:png:8x4:7")
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := bb.build("", 4, &p, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Content []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if got := req.Messages[0].Content[1].ImageURL.URL; got != want || !strings.HasPrefix(got, "data:image/png;base64,") {
		t.Errorf("image url = %.60s; want %.60s (a PNG data: URL)", got, want)
	}
	if _, _, err := bb.build("", 4, &schemas.Prompt{Text: "q", ImagesJSON: `["synthetic:png:8x4:8"]`}, nil, ""); err == nil {
		t.Error("build(unprepared image) = nil error; want an error")
	}
}

func TestBodyBuilderErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		t     schemas.Target
		tools *schemas.Tools
	}{
		{"messages without max_tokens", schemas.Target{API: "messages", MaxTokens: "none"}, nil},
		{"extra_body sets input", schemas.Target{API: "responses", ExtraBody: map[string]any{"input": "x"}}, nil},
		{"extra_body sets system", schemas.Target{API: "messages", ExtraBody: map[string]any{"system": "x"}}, nil},
		{"extra_body sets tools with workload tools", schemas.Target{API: "chat", ExtraBody: map[string]any{"tools": []any{}}}, &schemas.Tools{Count: 1, Choice: "auto"}},
	} {
		if _, err := newBodyBuilder(tc.t, tc.tools); err == nil {
			t.Errorf("%s: newBodyBuilder = nil error; want an error", tc.name)
		}
	}
	if _, err := newBodyBuilder(schemas.Target{API: "chat", ExtraBody: map[string]any{"tools": []any{}}}, nil); err != nil {
		t.Errorf("newBodyBuilder(chat, extra_body.tools without workload.tools) = %v; want it passed through", err)
	}
}

func TestRequestHeaderMessages(t *testing.T) {
	t.Setenv("WB_TEST_KEY", "k1")
	h, err := requestHeader(schemas.Target{API: "messages", APIKeyEnv: "WB_TEST_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Anthropic-Version": {anthropicVersion}, "X-Api-Key": {"k1"}}
	for k, v := range want {
		if h.Get(k) != v[0] {
			t.Errorf("header %s = %q; want %q", k, h.Get(k), v[0])
		}
	}
	if h.Get("Authorization") != "" {
		t.Errorf("Authorization = %q; want none for the messages API", h.Get("Authorization"))
	}
	h, _ = requestHeader(schemas.Target{API: "embeddings"})
	if h.Get("Accept") != "application/json" {
		t.Errorf("embeddings Accept = %q; want application/json", h.Get("Accept"))
	}
}

func TestBodyModelPerRequest(t *testing.T) {
	bb, err := newBodyBuilder(schemas.Target{API: "chat", Model: "base"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bb.addModel("lora-a")
	p := schemas.Prompt{Text: "q"}
	for _, tt := range []struct{ model, want string }{
		{"", "base"},         // a schedule row without a model: target.model
		{"base", "base"},     // the target's own
		{"lora-a", "lora-a"}, // another model of the mix
	} {
		body, _, err := bb.build(tt.model, 4, &p, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		var req struct{ Model string }
		if err := json.Unmarshal(body, &req); err != nil || req.Model != tt.want {
			t.Errorf("build(%q) body %s: model %q, err %v; want %q", tt.model, body, req.Model, err, tt.want)
		}
	}
	if _, _, err := bb.build("unknown", 4, &p, nil, ""); err == nil {
		t.Error("build(unknown model not added) = nil error; want an error")
	}
}
