package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// Simulator timing and workload of the ranking examples (examples/rerank.yaml, score.yaml,
// tei-rerank.yaml): 20 requests (10/s for 2 s), each a query of 16 tokens and 8 documents of 64.
const (
	rankTTFT  = 20 * time.Millisecond
	rankITL   = 2 * time.Millisecond
	rankDocs  = 8
	rankInput = rankDocs * (16 + 64) // a cross-encoder reads query + document per pair
)

// rankCase is one ranking example run against the simulator.
type rankCase struct {
	config string
	usage  bool // the answer reports usage (TEI's does not)
}

// TestRankAPIsEndToEnd runs `wirebench run examples/<api>.yaml` for the ranking APIs (vLLM's
// /v1/rerank with top_n, /v1/score, TEI's /rerank) against `wirebench sim --ttft 20ms --itl
// 2ms`: 20 requests, all ok, each with its 8 documents and, where the API reports usage, the
// schedule's input tokens; no TTFT (nothing streams); the simulator's truth (prefill = TTFT,
// then one document every ITL) on every request; E2E p50 between TTFT + 7 × ITL and 5 ms more;
// documents_per_s about 19 requests × 8 documents over the 1.9 s send window.
func TestRankAPIsEndToEnd(t *testing.T) {
	for _, tc := range []rankCase{{"rerank", true}, {"score", true}, {"tei-rerank", false}} {
		t.Run(tc.config, func(t *testing.T) {
			url := startSim(t, "--ttft", rankTTFT.String(), "--itl", rankITL.String())
			run := filepath.Join(t.TempDir(), tc.config)
			_, stderr, err := wirebench(t, 90*time.Second, "run", "../../examples/"+tc.config+".yaml", "-o", run, "--target", url, "--quiet", "--keep-awake")
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr)
			}
			checkRankRun(t, tc, run)
			// The report shows what a ranking stage did instead of output tokens.
			if md, err := os.ReadFile(filepath.Join(run, "report", "summary.md")); err != nil || !strings.Contains(string(md), " documents/s") {
				t.Errorf("summary.md (%v) shows no documents/s for the stage", err)
			}
		})
	}
}

func checkRankRun(t *testing.T, tc rankCase, run string) {
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	st := stages[0]
	if len(stages) != 1 || st.Requests != 20 || st.Completed != 20 || st.Errors != 0 {
		t.Fatalf("%d stages; stage 0: %d requests, %d completed, %d errors (%s); want 1 stage, 20, 20, 0", len(stages), st.Requests, st.Completed, st.Errors, st.ErrorsByKind)
	}
	_, reqs, chunks := rawFiles(t, run)
	lag := map[int64]int64{} // the response's arrival less the simulator's send stamp
	for _, c := range chunks {
		if c.ServerSentNs != 0 {
			lag[c.Seq] = chunkTime(&c) - c.ServerSentNs
		}
	}
	var lags []int64
	for _, r := range reqs {
		checkRankRequest(t, tc, r)
		if l, ok := lag[r.Seq]; ok {
			lags = append(lags, l)
		}
	}
	if len(lags) != len(reqs) {
		t.Errorf("%d responses with the simulator's send stamp; want %d", len(lags), len(reqs))
	}
	e2e := time.Duration(val(st.E2E.P50))
	docsPerS := val(st.DocumentsPerS)
	t.Logf("%s: E2E p50 %v, response a median %v after the simulator sent it, %.1f documents/s, %.0f input tokens/s", tc.config, e2e, time.Duration(median(lags)), docsPerS, val(st.InputTPS))
	if lo := rankTTFT + (rankDocs-1)*rankITL; e2e < lo || e2e > lo+5*time.Millisecond {
		t.Errorf("E2E p50 %v; want %v to %v (TTFT + 7 documents × ITL, plus the client and transport)", e2e, lo, lo+5*time.Millisecond)
	}
	if d := time.Duration(median(lags)); d < -apiSlack || d > apiSlack {
		t.Errorf("response a median %v after the simulator sent it; want within %v", d, apiSlack)
	}
	if st.TTFT.Count != 0 || st.ITL.Count != 0 {
		t.Errorf("TTFT count %d, ITL count %d; want 0 (a ranking answer streams nothing)", st.TTFT.Count, st.ITL.Count)
	}
	if want := 19.0 * rankDocs / 1.9; docsPerS < want*0.8 || docsPerS > want*1.25 {
		t.Errorf("documents_per_s %.1f; want about %.0f (19 completions × %d documents in the 1.9 s send window)", docsPerS, want, rankDocs)
	}
	metrics, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metrics {
		if m.Documents != rankDocs || m.InputTokens == nil || *m.InputTokens != rankInput || m.E2ENs == nil || m.TTFTNs != nil {
			t.Errorf("metric seq %d: %d documents, input tokens %v, e2e %v, ttft %v; want %d, %d, set, null", m.Seq, m.Documents, m.InputTokens, m.E2ENs, m.TTFTNs, rankDocs, rankInput)
		}
	}
}

// checkRankRequest checks one raw request: ok, its documents, its usage and the simulator's
// truth.
func checkRankRequest(t *testing.T, tc rankCase, r schemas.RawRequest) {
	t.Helper()
	if r.ErrorKind != "" {
		t.Errorf("seq %d: %s: %s", r.Seq, r.ErrorKind, r.ErrorMessage)
		return
	}
	if r.Documents != rankDocs || r.InputTokens != rankInput || r.MaxTokens != 0 {
		t.Errorf("seq %d: %d documents, %d input tokens, max_tokens %d; want %d, %d, 0", r.Seq, r.Documents, r.InputTokens, r.MaxTokens, rankDocs, rankInput)
	}
	if tc.usage && (r.UsagePrompt == nil || *r.UsagePrompt != rankInput) {
		t.Errorf("seq %d: usage prompt tokens %v; want %d", r.Seq, r.UsagePrompt, rankInput)
	}
	if r.ServerPrefillNs == nil || r.ServerDecodeNs == nil || time.Duration(*r.ServerPrefillNs) != rankTTFT || time.Duration(*r.ServerDecodeNs) != (rankDocs-1)*rankITL {
		t.Errorf("seq %d: simulator prefill %v, decode %v ns; want %v and %v", r.Seq, r.ServerPrefillNs, r.ServerDecodeNs, rankTTFT, (rankDocs-1)*rankITL)
	}
}

// TestEmbeddingsWithoutOutput runs an embeddings config whose synthetic workload has no output
// section (an embedding has no output tokens) against the simulator: it plans and runs, every
// request ok with max_tokens 0, and documents_per_s counts the inputs embedded.
func TestEmbeddingsWithoutOutput(t *testing.T) {
	url := startSim(t, "--ttft", "10ms", "--itl", "1ms")
	cfg := filepath.Join(t.TempDir(), "embed.yaml")
	writeFile(t, cfg, `name: embed-no-output
seed: 3
target: {api: embeddings, model: sim, timeout: 30s}
load:
  stages:
    - {rate: 10, duration: 1s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 32}
  batch: 4
tokenizer: whitespace
`)
	run := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := wirebench(t, 60*time.Second, "run", cfg, "-o", run, "--target", url, "--quiet"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	st := stages[0]
	if st.Requests != 10 || st.Completed != 10 || st.Errors != 0 {
		t.Fatalf("stage 0: %d requests, %d completed, %d errors (%s); want 10, 10, 0", st.Requests, st.Completed, st.Errors, st.ErrorsByKind)
	}
	_, reqs, _ := rawFiles(t, run)
	for _, r := range reqs {
		if r.MaxTokens != 0 || r.Documents != 4 || r.Embeddings != 4 {
			t.Errorf("seq %d: max_tokens %d, %d documents, %d embeddings; want 0, 4, 4", r.Seq, r.MaxTokens, r.Documents, r.Embeddings)
		}
	}
	// 9 completions × 4 inputs in the 0.9 s send window
	if d := val(st.DocumentsPerS); d < 40*0.8 || d > 40*1.25 {
		t.Errorf("documents_per_s %.1f; want about 40 (9 requests × 4 inputs over 0.9 s)", d)
	}
}

// TestRankFromDataset runs score on a jsonl dataset whose rows carry their own documents, with
// no workload.documents and no output length: every request ok, with its row's documents, and
// the simulator's usage equal to the schedule's input tokens (query + document per pair).
func TestRankFromDataset(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "q.jsonl"), `{"prompt": "what is light", "documents": ["light is a wave", "light is a particle", "colour"]}
{"prompt": "what is a prism", "documents": ["a glass that bends light"]}
`)
	cfg := filepath.Join(dir, "score.yaml")
	writeFile(t, cfg, `name: score-dataset
seed: 2
target: {api: score, model: sim, timeout: 30s}
load:
  stages:
    - {rate: 10, duration: 1s, arrival: constant}
workload:
  dataset: {format: jsonl, file: q.jsonl}
tokenizer: whitespace
`)
	run := filepath.Join(dir, "run")
	if _, stderr, err := wirebench(t, 60*time.Second, "run", cfg, "-o", run, "--target", url, "--quiet"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	_, reqs, _ := rawFiles(t, run)
	if len(reqs) != 10 {
		t.Fatalf("%d requests; want 10", len(reqs))
	}
	// (documents, input tokens) of the two rows: 3 × 3 + 4 + 4 + 1, 4 + 5
	rows := map[int32]int32{3: 18, 1: 9}
	for _, r := range reqs {
		if r.ErrorKind != "" || rows[r.Documents] == 0 || r.InputTokens != rows[r.Documents] || r.UsagePrompt == nil || *r.UsagePrompt != r.InputTokens {
			t.Errorf("seq %d: %q %s, %d documents, input tokens %d, usage %v; want ok, a row's documents and tokens (%v), usage equal", r.Seq, r.ErrorKind, r.ErrorMessage, r.Documents, r.InputTokens, r.UsagePrompt, rows)
		}
	}
}

// malformedRerank is one broken answer to a rerank request of 2 documents.
type malformedRerank struct {
	name, body, message string
}

// TestRerankMalformedAnswer runs rerank against a server whose 200 answers are JSON but not a
// rerank answer for the documents sent: each request is an error of kind malformed_answer whose
// message says what is wrong, and the run, every request of its first second failed, stops
// saying so.
func TestRerankMalformedAnswer(t *testing.T) {
	cases := []malformedRerank{
		{"no-results", `{"model":"m","usage":{"total_tokens":10}}`, "no scores in the answer"},
		{"index-out-of-range", `{"results":[{"index":0,"relevance_score":0.9},{"index":7,"relevance_score":0.1}]}`, "index 7 in the answer, but 2 documents were sent"},
		{"no-score", `{"results":[{"index":0,"relevance_score":0.9},{"index":1}]}`, "1 of the answer's 2 entries lack an integer index or a numeric score"},
		{"too-few", `{"results":[{"index":1,"relevance_score":0.9}]}`, "1 scores in the answer; want 2"},
	}
	for _, mc := range cases {
		t.Run(mc.name, func(t *testing.T) {
			body := mc.body
			srv, err := hostile.StartAfter(0, hostile.Case{Name: mc.name, Respond: func(w io.Writer) {
				fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cfg := filepath.Join(t.TempDir(), "rerank.yaml")
			writeFile(t, cfg, `name: rerank-malformed
seed: 1
target: {api: rerank, model: m, timeout: 10s}
load:
  stages:
    - {rate: 10, duration: 500ms, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 4}
  documents:
    count: {kind: fixed, value: 2}
    tokens: {kind: fixed, value: 8}
tokenizer: whitespace
`)
			run := filepath.Join(t.TempDir(), "run")
			_, stderr, err := wirebench(t, 60*time.Second, "run", cfg, "-o", run, "--target", srv.URL, "--quiet")
			// Every request of the first second failed: the run stops and says why.
			if want := schemas.ErrMalformedAnswer + ": " + mc.message; err == nil || !strings.Contains(stderr, want) {
				t.Errorf("run: %v; want a failed run whose error says %q\n%s", err, want, stderr)
			}
			_, reqs, _ := rawFiles(t, run)
			if len(reqs) != 5 {
				t.Fatalf("%d requests; want 5\n%s", len(reqs), stderr)
			}
			for _, r := range reqs {
				if r.ErrorKind != schemas.ErrMalformedAnswer || !strings.Contains(r.ErrorMessage, mc.message) || r.Documents != 2 {
					t.Errorf("seq %d: %q: %s (%d documents); want %s with %q, 2 documents", r.Seq, r.ErrorKind, r.ErrorMessage, r.Documents, schemas.ErrMalformedAnswer, mc.message)
				}
			}
		})
	}
}
