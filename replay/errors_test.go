package replay

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/config_errors.golden")

// TestConfigErrorText pins the whole text of LoadConfig's errors, in order, for configs that
// break several rules of every workload kind at once, so that moving the checks around cannot
// change what a user reads. `go test ./replay -run TestConfigErrorText -update` rewrites it.
func TestConfigErrorText(t *testing.T) {
	head := "target: {url: \"http://127.0.0.1:8000\", model: m}\n"
	api := func(a string) string { return "target: {url: \"http://x:1\", api: " + a + "}\n" }
	stages := "load:\n  stages:\n    - {rate: 10, duration: 1s}\n"
	synth := "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	conv := "workload:\n  conversations:\n    turns: {kind: fixed, value: 2}\n    input: {kind: fixed, value: 4}\n    output: {kind: fixed, value: 4}\n"
	docs := "  documents: {count: {kind: fixed, value: 4}, tokens: {kind: fixed, value: 16}}\n"
	cases := []struct{ name, yaml string }{
		{"no workload", head + stages},
		{"every kind", head + stages + synth + "  shared_prefix: {groups: 1, prefix_tokens: 1, users_per_group: 1, question_tokens: 1, output_tokens: 1}\n" +
			"  conversations: {turns: {kind: fixed, value: 1}, input: {kind: fixed, value: 1}, output: {kind: fixed, value: 1}}\n" +
			"  dataset: {format: jsonl, file: x.jsonl}\n  trace: {format: azure, file: x.csv}\n  run: {dir: r}\n"},
		{"synthetic", head + stages + "workload:\n  synthetic:\n    input: {kind: uniform, min: -2, max: -3}\n    output: {kind: zipf}\n"},
		{"synthetic no output", head + stages + "workload:\n  synthetic:\n    input: {kind: exponential}\n"},
		{"shared prefix", head + stages + "workload:\n  shared_prefix: {groups: 0, prefix_tokens: -1, users_per_group: 0, question_tokens: 0, output_tokens: -1}\n"},
		{"shared prefix embeddings", api("embeddings") + stages + "workload:\n  shared_prefix: {groups: 1, prefix_tokens: 1, users_per_group: 1, question_tokens: 1, output_tokens: -1}\n"},
		{"conversations", head + stages + "workload:\n  conversations:\n    turns: {kind: fixed}\n    input: {kind: normal, std: -1}\n    output: {kind: empirical}\n    think_time: -1s\n    system_prompt_tokens: -1\n"},
		{"conversations embeddings", api("embeddings") + stages + conv + "  batch: 2\n"},
		{"conversations rerank", api("rerank") + stages + conv + docs},
		{"dataset", head + stages + "workload:\n  dataset: {format: parquet, whole_conversation: true, min_input_tokens: 5, max_input_tokens: 2, min_output_tokens: 5, max_output_tokens: 1, output: {kind: lognormal}}\n"},
		{"dataset rerank csv", api("rerank") + stages + "workload:\n  dataset: {format: csv, file: x.csv}\n"},
		{"trace", head + stages + "workload:\n  trace: {format: alibaba, time_scale: 2, rate: 3, start: -1s, block_tokens: -1}\n"},
		{"trace rerank", api("rerank") + "workload:\n  trace: {format: azure, file: x.csv, time_scale: -1, rate: -1}\n" + docs},
		{"trace embeddings batch", api("embeddings") + "workload:\n  trace: {format: azure, file: x.csv}\n  batch: 4\n"},
		{"run", head + "load:\n  sweep: {min_rate: 1, max_rate: 2, stages: 2, duration: 1s}\nworkload:\n  run: {dir: \"\"}\n"},
		{"run embeddings batch", api("embeddings") + "workload:\n  run: {dir: r}\n  batch: 2\n  tools: {count: 0, choice: x}\n"},
		{"modifiers", api("completions") + stages + synth + "  images: {count: 0, format: gif}\n  tools: {count: 0, choice: always}\n  batch: -1\n  cancel: {share: 2}\n" + docs},
		{"everything else", "target: {url: \"x\", api: grpc, max_tokens: always, timeout: -1s, connect_timeout: -1s}\n" +
			"load:\n  warmup: {concurrency: 2}\n  stages:\n    - {rate: -1}\n    - {concurrency: 1, requests: 3}\n  sweep: {min_rate: 0, max_rate: -1, scale: log, arrival: gamma}\n" +
			synth + "slo: {ttft: -1s, e2e: -1s}\nbias: {tolerance: -1s}\ncapture: {workers: -1}\nsearch: {min_rate: -1, goodput: 2, arrival: gamma}\n"},
		{"missing files", head + stages + "workload:\n  synthetic:\n    input: {kind: empirical, file: in.csv}\n    output: {kind: empirical, file: out.csv}\ntokenizer: no-such-tokenizer.json\n"},
		{"missing dataset and documents", api("rerank") + stages + "workload:\n  dataset: {format: jsonl, file: x.jsonl}\n" +
			"  documents: {count: {kind: empirical, file: n.csv}, tokens: {kind: fixed, value: 16}}\n"},
		{"missing trace", head + "workload:\n  trace: {format: mooncake, file: t.jsonl}\n"},
		{"missing run", head + "workload:\n  run: {dir: no-run}\n"},
	}
	var b strings.Builder
	for _, tc := range cases {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		// Run checks that the files open (loadConfig with files); LoadConfig does not.
		_, _, err := loadConfig(path, true)
		if err == nil {
			t.Errorf("%s: loadConfig = nil error; want one", tc.name)
			continue
		}
		b.WriteString("== " + tc.name + "\n" + strings.ReplaceAll(err.Error(), dir, "DIR") + "\n")
	}
	golden := filepath.Join("testdata", "config_errors.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("config errors differ from %s (rewrite with -update if meant):\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines of want and got that differ, by line number.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
		}
	}
	return b.String()
}
