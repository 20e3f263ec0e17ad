package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

func TestLoadConfigAPIErrors(t *testing.T) {
	stages := "load:\n  stages:\n    - {rate: 10, duration: 1s}\n"
	synth := "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	target := func(api string) string { return "target: {url: \"http://x:1\", api: " + api + "}\n" }
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"images on completions", target("completions") + stages + synth + "  images: {count: 1, width: 8, height: 8}\n", []string{"workload.images: needs target.api chat, responses or messages"}},
		{"images bad format", target("chat") + stages + synth + "  images: {count: 1, width: 8, height: 8, format: gif}\n", []string{`workload.images.format: "gif"`}},
		{"images without size", target("chat") + stages + synth + "  images: {count: 2}\n", []string{"workload.images.width: width and height must be in 1..8192"}},
		{"images count 0", target("chat") + stages + synth + "  images: {count: 0, width: 8, height: 8}\n", []string{"workload.images.count: 0: must be in 1..4096"}},
		{"tools on embeddings", target("embeddings") + stages + synth + "  tools: {count: 1}\n", []string{"workload.tools: needs target.api chat, responses or messages"}},
		{"tools bad choice", target("messages") + stages + synth + "  tools: {count: 1, choice: always}\n", []string{`workload.tools.choice: "always"`}},
		{"tools count 0", target("chat") + stages + synth + "  tools: {count: 0}\n", []string{"workload.tools.count: 0: must be in 1..4096"}},
		{"batch on chat", target("chat") + stages + synth + "  batch: 4\n", []string{"workload.batch: only for target.api embeddings"}},
		{"embeddings conversations", target("embeddings") + stages + "workload:\n  conversations:\n    turns: {kind: fixed, value: 2}\n    input: {kind: fixed, value: 4}\n    output: {kind: fixed, value: 4}\n", []string{"workload.conversations: target.api embeddings takes single prompts"}},
		{"messages without max_tokens", "target: {url: \"http://x:1\", api: messages, max_tokens: none}\n" + stages + synth, []string{"target.max_tokens: none: the messages API requires max_tokens"}},
		{"responses extra_body input", "target:\n  api: responses\n  extra_body: {input: x}\n" + stages + synth, []string{"target.extra_body.input: is set by wirebench"}},
		{"tools extra_body tools", "target:\n  api: chat\n  extra_body: {tools: []}\n" + stages + synth + "  tools: {count: 1}\n", []string{"target.extra_body.tools: is set by wirebench"}},
	} {
		_, err := LoadConfig(writeConfig(t, tc.yaml))
		if err == nil {
			t.Errorf("%s: LoadConfig = nil error; want %q", tc.name, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: LoadConfig error = %q; want it to contain %q", tc.name, err, w)
			}
		}
	}
}

// TestPlanImages: every prompt gets workload.images' count references from the pool, each
// a synthetic reference of the configured format and size.
func TestPlanImages(t *testing.T) {
	cfg := writeConfig(t, `target: {url: "http://x:1", api: chat, model: m}
load: {stages: [{rate: 20, duration: 1s, arrival: constant}]}
workload:
  synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 4}, random_tokens: true}
  images: {count: 2, width: 12, height: 10, format: jpeg, distinct: 3}
`)
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, cfg, run)
	_, prompts := schedule(t, run)
	refs := map[string]bool{}
	for _, p := range prompts {
		var imgs []string
		if err := json.Unmarshal([]byte(p.ImagesJSON), &imgs); err != nil || len(imgs) != 2 {
			t.Fatalf("prompt %d: images_json %q (%v); want 2 references", p.PromptID, p.ImagesJSON, err)
		}
		for _, r := range imgs {
			refs[r] = true
		}
	}
	if len(refs) < 2 || len(refs) > 3 {
		t.Errorf("%d distinct references over %d prompts; want 2 or 3 from a pool of 3", len(refs), len(prompts))
	}
	for r := range refs {
		// The reference is what replay writes; capture renders it (capture/internal/worker).
		ref, ok, err := schemas.ParseImageRef(r)
		if !ok || err != nil || ref.Format != "jpeg" || ref.Width != 12 || ref.Height != 10 {
			t.Errorf("%s: %+v (synthetic %v, %v); want a 12x10 jpeg reference", r, ref, ok, err)
		}
	}
}

// TestDatasetImages: jsonl "images" and a CSV image column become images_json; bare base64 gets
// its media type from its bytes; what is not an image is an error naming file and line.
func TestDatasetImages(t *testing.T) {
	var pngB bytes.Buffer
	png.Encode(&pngB, newTestImage())
	b64 := base64.StdEncoding.EncodeToString(pngB.Bytes())
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "p.jsonl")
	os.WriteFile(jsonl, []byte(`{"prompt":"a b","max_tokens":3,"images":["https://x/1.png","`+b64+`"]}`+"\n"+`{"prompt":"c"}`+"\n"), 0o644)
	rows, err := readJSONL(jsonl, true, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := `["https://x/1.png","data:image/png;base64,` + b64 + `"]`
	if len(rows) != 2 || rows[0].images != want || rows[1].images != "" {
		t.Errorf("jsonl rows images %q, %q; want %q and none", rows[0].images, rows[1].images, want)
	}
	csvPath := filepath.Join(dir, "p.csv")
	os.WriteFile(csvPath, []byte("prompt,img\nhello,https://x/2.jpg\nbye,\n"), 0o644)
	rows, err = readCSV(csvPath, "prompt", "max_tokens", "img", ws)
	if err != nil || len(rows) != 2 || rows[0].images != `["https://x/2.jpg"]` || rows[1].images != "" {
		t.Errorf("csv rows %+v (%v); want the first with one image", rows, err)
	}
	os.WriteFile(jsonl, []byte(`{"prompt":"a"}`+"\n"+`{"prompt":"b","images":["`+base64.StdEncoding.EncodeToString([]byte("plain text"))+`"]}`+"\n"), 0o644)
	if _, err := readJSONL(jsonl, true, ws); err == nil || !strings.Contains(err.Error(), "p.jsonl:2: images[0]") || !strings.Contains(err.Error(), "not an image") {
		t.Errorf("readJSONL(text as image) error %v; want one naming p.jsonl:2: images[0] and not an image", err)
	}
}

// TestPlanEmbeddingsBatch: each embeddings request carries batch prompts of the source as its
// inputs, input tokens their sum, and asks for no output.
func TestPlanEmbeddingsBatch(t *testing.T) {
	cfg := writeConfig(t, `target: {url: "http://x:1", api: embeddings, model: m}
load: {stages: [{rate: 10, duration: 1s, arrival: constant}]}
workload:
  synthetic: {input: {kind: uniform, min: 3, max: 9}, output: {kind: fixed, value: 4}}
  batch: 4
`)
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, cfg, run)
	reqs, prompts := schedule(t, run)
	if len(reqs) != 10 || len(prompts) != 10 {
		t.Fatalf("%d requests, %d prompts; want 10 and 10 (one batch prompt each)", len(reqs), len(prompts))
	}
	byID := map[int64]int{}
	for i, p := range prompts {
		byID[p.PromptID] = i
	}
	for _, r := range reqs {
		p := prompts[byID[r.PromptID]]
		var inputs []string
		if err := json.Unmarshal([]byte(p.InputsJSON), &inputs); err != nil || len(inputs) != 4 || p.Text != "" {
			t.Fatalf("seq %d: inputs_json %q text %q (%v); want 4 inputs and no text", r.Seq, p.InputsJSON, p.Text, err)
		}
		n := 0
		for _, in := range inputs {
			w := tokenizer.CountWords(in)
			if w < 3 || w > 9 {
				t.Errorf("seq %d: input of %d tokens; want 3 to 9", r.Seq, w)
			}
			n += w
		}
		if r.InputTokens != int32(n) || p.InputTokens != int32(n) || r.MaxTokens != 0 {
			t.Errorf("seq %d: input tokens %d (prompt %d), max_tokens %d; want %d (the inputs' sum), 0", r.Seq, r.InputTokens, p.InputTokens, r.MaxTokens, n)
		}
	}
}

func newTestImage() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	return img
}
