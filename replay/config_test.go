package replay

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/internal/tlsclient"
	"github.com/wirebench/wirebench/schemas"
)

const goodHead = `target: {url: "http://127.0.0.1:8000", model: m}
`

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigErrors(t *testing.T) {
	synth := "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	stages := "load:\n  stages:\n    - {rate: 10, duration: 1s}\n"
	for _, tc := range []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"unknown top-level key", goodHead + "lod: {}\n" + synth, []string{"c.yaml:2:", `unknown key "lod"`}},
		{"unknown nested key", goodHead + "load:\n  stages:\n    - {rate: 10, duration: 1s, burst: 2}\n" + synth, []string{"c.yaml:4:", `unknown key "burst"`}},
		{"wrong type", goodHead + "load:\n  stages:\n    - {rate: fast, duration: 1s}\n" + synth, []string{"c.yaml:4:", `load.stages[0].rate: cannot use "fast" as a number`}},
		{"bad duration", goodHead + "load:\n  stages:\n    - {rate: 10, duration: 5 parsecs}\n" + synth, []string{"c.yaml:4:", "invalid duration"}},
		{"syntax error", goodHead + "load: [\n", []string{"c.yaml:"}},
		{"negative rate", goodHead + "load:\n  stages:\n    - {rate: 10, duration: 1s}\n    - {rate: -5, duration: 1s}\n" + synth, []string{"c.yaml:5:", "load.stages[1].rate: must be > 0"}},
		{"open stage without duration", goodHead + "load:\n  stages:\n    - {rate: 10}\n" + synth, []string{"load.stages[0].duration: must be > 0"}},
		{"mistyped rate plans too much", goodHead + "load:\n  stages:\n    - {rate: 1000000000, duration: 1h}\n" + synth, []string{"c.yaml:4:", "load.stages[0].rate: 1e+09 requests/s for 1h0m0s plans about 3.6e+12 requests; a stage plans at most 1073741824"}},
		{"closed stage plans too much", goodHead + "load:\n  stages:\n    - {concurrency: 3, requests: 2000000000}\n" + synth, []string{"load.stages[0].requests: 2000000000: a stage plans at most"}},
		{"sweep plans too much", goodHead + "load:\n  sweep: {min_rate: 10, max_rate: 1e9, stages: 3, duration: 10s}\n" + synth, []string{"load.sweep.max_rate: 1e+09 requests/s for 10s plans about 1e+10"}},
		{"search plans too much", goodHead + "search: {min_rate: 10, max_rate: 1e9}\n" + synth, []string{"c.yaml:2:", "search.max_rate: 1e+09 requests/s for 30s plans about 3e+10"}},
		{"search max <= min", goodHead + "search: {min_rate: 10, max_rate: 10}\n" + synth, []string{"search.max_rate: 10: must be > min_rate 10"}},
		{"mistyped length", goodHead + stages + "workload:\n  synthetic:\n    input: {kind: fixed, value: 2000000000}\n    output: {kind: fixed, value: 8}\n", []string{"c.yaml:7:", "workload.synthetic.input.value: 2e+09: at most 16777216"}},
		{"mistyped prefix", goodHead + stages + "workload:\n  shared_prefix: {groups: 1, prefix_tokens: 100000000, users_per_group: 1, question_tokens: 8, output_tokens: 8}\n", []string{"workload.shared_prefix.prefix_tokens: 1e+08: at most 16777216"}},
		{"mistyped image count", goodHead + stages + "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n  images: {count: 100000000, width: 64, height: 64}\n", []string{"workload.images.count: 100000000: must be in 1..4096"}},
		{"mistyped document count", "target: {url: \"http://127.0.0.1:8000\", model: m, api: rerank}\n" + stages + "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n  documents: {count: {kind: fixed, value: 100000}, tokens: {kind: fixed, value: 8}}\n", []string{"workload.documents.count.value: 100000: at most 4096"}},
		{"mistyped sweep stages", goodHead + "load:\n  sweep: {min_rate: 1, max_rate: 5, stages: 100000000, duration: 1s}\n" + synth, []string{"load.sweep.stages: 100000000: must be in 1..256"}},
		{"rate and concurrency", goodHead + "load:\n  stages:\n    - {rate: 10, concurrency: 3, duration: 1s}\n" + synth, []string{"load.stages[0]: set rate"}},
		{"closed without bound", goodHead + "load:\n  stages:\n    - {concurrency: 3}\n" + synth, []string{"load.stages[0]: a closed-loop stage needs requests or duration"}},
		{"closed by count before another stage", goodHead + "load:\n  stages:\n    - {concurrency: 3, requests: 10}\n    - {rate: 10, duration: 1s}\n" + synth, []string{"load.stages[0].duration: a closed-loop stage ended by request count must be the last stage"}},
		{"bad arrival", goodHead + "load:\n  stages:\n    - {rate: 10, duration: 1s, arrival: bursty}\n" + synth, []string{"c.yaml:4:", `load.stages[0].arrival: "bursty"`}},
		{"burstiness without gamma", goodHead + "load:\n  stages:\n    - {rate: 10, duration: 1s, arrival: poisson, burstiness: 2}\n" + synth, []string{"load.stages[0].burstiness: only for arrival: gamma"}},
		{"no load", goodHead + synth, []string{"load: needs stages or a sweep"}},
		{"sweep max < min", goodHead + "load:\n  sweep: {min_rate: 10, max_rate: 5, stages: 3, duration: 1s}\n" + synth, []string{"c.yaml:3:", "load.sweep.max_rate: 5 < min_rate 10"}},
		{"sweep bad scale", goodHead + "load:\n  sweep: {min_rate: 1, max_rate: 5, stages: 3, duration: 1s, scale: log}\n" + synth, []string{`load.sweep.scale: "log"`}},
		{"no workload", goodHead + stages, []string{"workload: set exactly one"}},
		{"two workloads", goodHead + stages + synth + "  shared_prefix: {groups: 1, prefix_tokens: 1, users_per_group: 1, question_tokens: 1, output_tokens: 1}\n", []string{"workload: set exactly one", "(got 2)"}},
		{"bad dist kind", goodHead + stages + "workload:\n  synthetic:\n    input: {kind: zipf}\n    output: {kind: fixed, value: 8}\n", []string{"c.yaml:7:", `workload.synthetic.input.kind: "zipf"`}},
		{"uniform without max", goodHead + stages + "workload:\n  synthetic:\n    input: {kind: uniform, min: 4}\n    output: {kind: fixed, value: 8}\n", []string{"workload.synthetic.input.max: required for uniform"}},
		{"fixed without value", goodHead + stages + "workload:\n  synthetic:\n    input: {kind: fixed}\n    output: {kind: fixed, value: 8}\n", []string{"workload.synthetic.input.value: must be > 0"}},
		{"bad api", "target: {url: \"http://x:1\", api: grpc}\n" + stages + synth, []string{"c.yaml:1:", `target.api: "grpc"`}},
		{"bad url", "target: {url: \"127.0.0.1:8000\"}\n" + stages + synth, []string{"target.url: invalid URL"}},
		{"bad max_tokens policy", "target: {max_tokens: always}\n" + stages + synth, []string{`target.max_tokens: "always"`}},
		{"extra_body overrides prompt", "target:\n  extra_body: {prompt: x}\n" + stages + synth, []string{"target.extra_body.prompt: is set by wirebench"}},
		{"conversations bad turns", goodHead + stages + "workload:\n  conversations:\n    turns: {kind: fixed, value: 0}\n    input: {kind: fixed, value: 4}\n    output: {kind: fixed, value: 4}\n", []string{"c.yaml:7:", "workload.conversations.turns.value: must be > 0"}},
		{"trace with load", goodHead + stages + "workload:\n  trace: {format: azure, file: x.csv}\n", []string{"load: must be empty with workload.trace"}},
		{"trace bad format", goodHead + "workload:\n  trace: {format: alibaba, file: x.csv}\n", []string{`workload.trace.format: "alibaba"`}},
		{"trace rate and scale", goodHead + "workload:\n  trace: {format: azure, file: x.csv, rate: 3, time_scale: 2}\n", []string{"workload.trace.rate: set time_scale or rate, not both"}},
		{"dataset bad format", goodHead + stages + "workload:\n  dataset: {format: parquet, file: x}\n", []string{`workload.dataset.format: "parquet"`}},
		{"negative slo", goodHead + stages + synth + "slo: {ttft: -1s}\n", []string{"slo.ttft: must be >= 0"}},
		{"line break in a header value", "target:\n  url: http://127.0.0.1:8000\n  headers:\n    X-Team: perf\n    X-Evil: \"a\\r\\nX-Injected: 1\"\n" + stages + synth, []string{"c.yaml:5:", "target.headers.X-Evil: the value holds a CR at byte 1"}},
		{"NUL in a header value", "target:\n  headers: {X-Evil: \"a\\0b\"}\n" + stages + synth, []string{"c.yaml:2:", "target.headers.X-Evil: the value holds a NUL"}},
		{"bad header name", "target:\n  headers: {\"X Evil\": v}\n" + stages + synth, []string{"c.yaml:2:", `"X Evil" is not a header name`}},
		{"bad variable reference", "target:\n  headers: {X-Key: \"${1X}\"}\n" + stages + synth, []string{"c.yaml:2:", "target.headers.X-Key: a ${ that does not name"}},
		{"negative gap_timeout", "target: {gap_timeout: -1s, ttft_timeout: -2s}\n" + stages + synth, []string{"target.gap_timeout: must be >= 0", "target.ttft_timeout: must be >= 0"}},
		{"missing ca_file", "target:\n  url: https://x:1\n  tls: {ca_file: no-such-ca.pem}\n" + stages + synth, []string{"c.yaml:3: target.tls.ca_file:", "no-such-ca.pem"}},
		{"ca_file without a certificate", "target:\n  tls:\n    ca_file: c.yaml\n" + stages + synth, []string{"c.yaml:3: target.tls.ca_file: no PEM certificate in"}},
		{"cert_file without key_file", "target:\n  tls: {cert_file: c.pem}\n" + stages + synth, []string{"c.yaml:2: target.tls.key_file: required with cert_file"}},
		{"unknown tls key", "target:\n  tls: {verify: false}\n" + stages + synth, []string{"c.yaml:2:", `unknown key "verify"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.yaml))
			if err == nil {
				t.Fatalf("LoadConfig(%q) = nil error; want one containing %q", tc.yaml, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadConfig error = %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadConfigDefaultsAndPaths(t *testing.T) {
	p := writeConfig(t, `target: {url: "http://127.0.0.1:9"}
load:
  warmup: {rate: 1, duration: 1s}
  stages:
    - {rate: 10, duration: 2s, arrival: gamma}
    - {concurrency: 4, requests: 10}
workload:
  dataset: {format: jsonl, file: data/p.jsonl}
`)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"target.api", c.Target.API, "completions"},
		{"target.max_tokens", c.Target.MaxTokens, "workload"},
		{"tokenizer", c.Tokenizer, "whitespace"},
		{"load.warmup.arrival", c.Load.Warmup.Arrival, "poisson"},
		{"load.stages[0].burstiness", c.Load.Stages[0].Burstiness, 1.0},
		{"load.stages[0].duration", c.Load.Stages[0].Duration.D(), 2 * time.Second},
		{"load.stages[1].arrival", c.Load.Stages[1].Arrival, ""},
		{"workload.dataset.file", c.Workload.Dataset.File, filepath.Join(filepath.Dir(p), "data/p.jsonl")},
		{"workload.dataset.prompt_column", c.Workload.Dataset.PromptColumn, "prompt"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v; want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestExampleConfigsParse(t *testing.T) {
	for _, f := range runExamples {
		if _, err := LoadConfig(f); err != nil {
			t.Errorf("LoadConfig(%s): %v", f, err)
		}
	}
}

// runExamples are the run configs in examples/ (other YAML files there, such as the simulator's
// config, are not run configs).
var runExamples = []string{
	"../examples/my-server.yaml",
	"../examples/smoke.yaml",
	"../examples/quickstart.yaml",
	"../examples/vllm-sweep.yaml",
	"../examples/shared-prefix.yaml",
	"../examples/multi-turn.yaml",
	"../examples/trace-replay.yaml",
	"../examples/ab.yaml",
	"../examples/completions.yaml",
	"../examples/chat.yaml",
	"../examples/chat-images.yaml",
	"../examples/chat-tools.yaml",
	"../examples/responses.yaml",
	"../examples/messages.yaml",
	"../examples/embeddings.yaml",
	"../examples/rerank.yaml",
	"../examples/score.yaml",
	"../examples/tei-rerank.yaml",
	"../examples/lora-mix.yaml",
}

// target.tls's files are taken from the config's directory and must load.
func TestLoadConfigTLSPaths(t *testing.T) {
	authority, err := hostile.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	p := writeConfig(t, "target:\n  url: https://127.0.0.1:8443\n  tls: {ca_file: ca.pem, server_name: llm.internal}\n"+
		"load:\n  stages:\n    - {rate: 1, duration: 1s}\nworkload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n")
	ca := filepath.Join(filepath.Dir(p), "ca.pem")
	if err := os.WriteFile(ca, authority.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Target.TLS.CAFile != ca || c.Target.TLS.ServerName != "llm.internal" {
		t.Errorf("target.tls = %+v; want ca_file %s, server_name llm.internal", c.Target.TLS, ca)
	}
	tc, err := tlsclient.Config(c.Target.TLS)
	if err != nil || tc.RootCAs == nil || tc.ServerName != "llm.internal" {
		t.Errorf("tlsclient.Config = %v, %v; want the CA pool and the server name", tc, err)
	}
}

// TestDrawnLengthsStayUnderMaxLength: a distribution without max whose tail reaches past
// MaxLength draws at most MaxLength; an empirical file may not name a longer length.
func TestDrawnLengthsStayUnderMaxLength(t *testing.T) {
	s, err := newSampler(schemas.LengthDist{Kind: schemas.DistExponential, Mean: MaxLength, Min: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	longest := 0
	for range 1000 {
		longest = max(longest, s.draw(r))
	}
	if longest != MaxLength {
		t.Errorf("longest of 1,000 exponential draws with mean MaxLength = %d; want MaxLength %d (capped)", longest, MaxLength)
	}
	csv := filepath.Join(t.TempDir(), "lengths.csv")
	if err := os.WriteFile(csv, []byte("tokens,count\n8,1\n100000000,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newSampler(schemas.LengthDist{Kind: schemas.DistEmpirical, File: csv, Min: 1}); err == nil || !strings.Contains(err.Error(), "lengths.csv:3: tokens") {
		t.Errorf("empirical file with a length over MaxLength: err = %v; want one naming lengths.csv:3: tokens", err)
	}
}
