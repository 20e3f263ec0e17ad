package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfigRankErrors(t *testing.T) {
	stages := "load:\n  stages:\n    - {rate: 10, duration: 1s}\n"
	query := "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n"
	docs := "  documents: {count: {kind: fixed, value: 4}, tokens: {kind: fixed, value: 16}}\n"
	target := func(api string) string { return "target: {url: \"http://x:1\", api: " + api + "}\n" }
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"rerank without documents", target("rerank") + stages + query, "workload.documents: required for target.api rerank"},
		{"documents on chat", target("chat") + stages + query + "    output: {kind: fixed, value: 8}\n" + docs, "workload.documents: only for target.api rerank, score or tei_rerank (got chat)"},
		{"top_n on score", target("score") + stages + query + "  documents: {count: {kind: fixed, value: 4}, tokens: {kind: fixed, value: 16}, top_n: 2}\n", "workload.documents.top_n: must be >= 0, and only for target.api rerank"},
		{"documents count kind", target("tei_rerank") + stages + query + "  documents: {count: {kind: wide}, tokens: {kind: fixed, value: 16}}\n", `workload.documents.count.kind: "wide"`},
		{"rerank conversations", target("rerank") + stages + "workload:\n  conversations:\n    turns: {kind: fixed, value: 2}\n    input: {kind: fixed, value: 4}\n    output: {kind: fixed, value: 4}\n" + docs, "workload.conversations: target.api rerank takes single queries"},
		{"chat still needs output", target("chat") + stages + query, "workload.synthetic.output.kind: required"},
		{"extra_body documents", "target:\n  api: rerank\n  extra_body: {documents: []}\n" + stages + query + docs, "target.extra_body.documents: is set by wirebench"},
		{"unknown api", target("rank") + stages + query, `target.api: "rank": want completions, chat, responses, messages, embeddings, rerank, score or tei_rerank`},
	} {
		_, err := LoadConfig(writeConfig(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadConfig error = %v; want it to contain %q", tc.name, err, tc.want)
		}
	}
	// Embeddings and the ranking APIs take no output length.
	for _, api := range []string{"embeddings", "rerank", "score", "tei_rerank"} {
		d := docs
		if api == "embeddings" {
			d = ""
		}
		if _, err := LoadConfig(writeConfig(t, target(api)+stages+query+d)); err != nil {
			t.Errorf("%s without output: LoadConfig error = %v; want none", api, err)
		}
	}
}

// TestPlanRank: each request's prompt is its query (text) and its documents (inputs_json),
// drawn from workload.documents; input_tokens is query + document tokens summed over the
// documents, max_tokens 0, documents their count.
func TestPlanRank(t *testing.T) {
	cfg := writeConfig(t, `target: {url: "http://x:1", api: rerank, model: m}
load: {stages: [{rate: 20, duration: 1s, arrival: constant}]}
workload:
  synthetic: {input: {kind: fixed, value: 5}}
  documents: {count: {kind: uniform, min: 1, max: 4}, tokens: {kind: fixed, value: 7}, top_n: 2}
`)
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, cfg, run)
	reqs, prompts := schedule(t, run)
	if len(reqs) != 20 {
		t.Fatalf("%d requests; want 20", len(reqs))
	}
	counts := map[int32]bool{}
	for _, r := range reqs {
		p := prompts[r.PromptID]
		var docs []string
		if err := json.Unmarshal([]byte(p.InputsJSON), &docs); err != nil {
			t.Fatalf("seq %d: inputs_json %q: %v", r.Seq, p.InputsJSON, err)
		}
		n := int32(len(docs))
		counts[n] = true
		if r.Documents != n || n < 1 || n > 4 || r.MaxTokens != 0 || r.InputTokens != n*(5+7) || p.InputTokens != r.InputTokens || len(strings.Fields(p.Text)) != 5 {
			t.Errorf("seq %d: %d documents (row %d), max_tokens %d, input tokens %d (prompt %d), query %q; want 1..4, 0, documents × 12", r.Seq, n, r.Documents, r.MaxTokens, r.InputTokens, p.InputTokens, p.Text)
		}
		for _, d := range docs {
			if len(strings.Fields(d)) != 7 {
				t.Errorf("seq %d: document %q; want 7 tokens", r.Seq, d)
			}
		}
	}
	if len(counts) < 2 {
		t.Errorf("document counts %v over 20 requests; want the distribution's spread", counts)
	}
}

// TestPlanRankDataset: a jsonl dataset's rows bring their own documents (no workload.documents
// and no output length needed); a row without documents is an error naming the file.
func TestPlanRankDataset(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "q.jsonl")
	os.WriteFile(data, []byte(`{"prompt": "what is light", "documents": ["light is a wave", "light is a particle", "colour"]}
{"prompt": "what is a prism", "documents": ["a glass that bends light"]}
`), 0o644)
	cfg := writeConfig(t, `target: {url: "http://x:1", api: score, model: m}
load: {stages: [{rate: 10, duration: 1s, arrival: constant}]}
workload:
  dataset: {format: jsonl, file: `+data+`}
`)
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, cfg, run)
	reqs, prompts := schedule(t, run)
	for _, r := range reqs {
		p := prompts[r.PromptID]
		want := map[string]int32{"what is light": 3*3 + 4 + 4 + 1, "what is a prism": 4 + 5}[p.Text]
		if want == 0 || r.InputTokens != want || r.Documents != int32(strings.Count(p.InputsJSON, `"`)/2) {
			t.Errorf("seq %d: query %q, %d documents %s, input tokens %d; want %d", r.Seq, p.Text, r.Documents, p.InputsJSON, r.InputTokens, want)
		}
	}
	os.WriteFile(data, []byte(`{"prompt": "no documents"}`+"\n"), 0o644)
	err := Run(t.Context(), Options{ConfigPath: cfg, Out: filepath.Join(t.TempDir(), "run2")}, quiet)
	if err == nil || !strings.Contains(err.Error(), data+`: a row has no "documents" and workload.documents is not set`) {
		t.Errorf("dataset row without documents: Run error = %v; want one saying so", err)
	}
}
