package sim

import (
	"encoding/json"
	"testing"
	"time"
)

// rankCase is one golden exchange of a ranking request.
type rankCase struct {
	name, path, body string
	order            []int // the answer's indexes, in order
	prompt           int   // prompt tokens: query + document, summed over the pairs
}

var rankCases = []rankCase{
	{"rerank-json", "/v1/rerank", `{"model":"sim","query":"q1 q2","documents":["one two three","four",{"text":"five six"}]}`, []int{2, 0, 1}, 12},
	{"rerank-top-n", "/v1/rerank", `{"model":"sim","query":"q1 q2","documents":["one two three","four","five six"],"top_n":2}`, []int{2, 0}, 12},
	{"score-json", "/v1/score", `{"model":"sim","text_1":"q1 q2","text_2":["one two three","four","five six"]}`, []int{0, 1, 2}, 12},
	{"score-pairs", "/v1/score", `{"model":"sim","text_1":["q1 q2","q3"],"text_2":["one two three","four"]}`, []int{0, 1}, 7},
	{"tei-rerank-json", "/rerank", `{"model":"sim","query":"q1 q2","texts":["one two three","four","five six"]}`, []int{2, 0, 1}, 12},
	{"tei-rerank-text", "/rerank", `{"model":"sim","query":"q1 q2","texts":["one two three","four"],"return_text":true}`, []int{0, 1}, 9},
}

// rankEntry is one entry of any ranking answer.
type rankEntry struct {
	Index          int              `json:"index"`
	RelevanceScore *float64         `json:"relevance_score"`
	Score          *float64         `json:"score"`
	Object         string           `json:"object"`
	Document       *json.RawMessage `json:"document"`
	Text           *string          `json:"text"`
}

// TestRank: each ranking API answers in its own shape, one score in [0, 1] per document (rerank:
// the best top_n, best first; score: in order), the same pair the same score in every API, and
// the pairs' tokens in the usage.
func TestRank(t *testing.T) {
	_, addr := startServer(t, zeroConfig())
	byPair := map[string]float64{} // "q1 q2" with "one two three" in every request that has it
	for _, tt := range rankCases {
		t.Run(tt.name, func(t *testing.T) {
			w := rawPost(t, addr, tt.path, tt.body)
			if w.status != 200 || !w.complete {
				t.Fatalf("status %d complete %v:\n%s%s", w.status, w.complete, w.head, w.body)
			}
			golden(t, tt.name, normalize(w))
			var entries []rankEntry
			usage := -1
			switch tt.path {
			case "/rerank":
				strictDecode(t, string(w.body), &entries)
			case "/v1/rerank":
				var r struct {
					Model string `json:"model"`
					Usage struct {
						TotalTokens int `json:"total_tokens"`
					} `json:"usage"`
					Results []rankEntry `json:"results"`
				}
				strictDecode(t, string(w.body), &r)
				entries, usage = r.Results, r.Usage.TotalTokens
			default:
				var r struct {
					Object string      `json:"object"`
					Model  string      `json:"model"`
					Data   []rankEntry `json:"data"`
					Usage  struct {
						PromptTokens int `json:"prompt_tokens"`
						TotalTokens  int `json:"total_tokens"`
					} `json:"usage"`
				}
				strictDecode(t, string(w.body), &r)
				entries, usage = r.Data, r.Usage.PromptTokens
			}
			if usage >= 0 && usage != tt.prompt {
				t.Errorf("usage %d tokens; want %d", usage, tt.prompt)
			}
			checkRankEntries(t, tt, entries, byPair)
		})
	}
}

func checkRankEntries(t *testing.T, tt rankCase, entries []rankEntry, byPair map[string]float64) {
	t.Helper()
	if len(entries) != len(tt.order) {
		t.Fatalf("%d entries; want %d", len(entries), len(tt.order))
	}
	prev := 2.0
	for k, e := range entries {
		s := e.Score
		if e.RelevanceScore != nil {
			s = e.RelevanceScore
		}
		if e.Index != tt.order[k] || s == nil || *s < 0 || *s > 1 {
			t.Fatalf("entry %d: index %d score %v; want index %d, a score in [0, 1]", k, e.Index, s, tt.order[k])
		}
		if tt.path != "/v1/score" && *s > prev {
			t.Errorf("entry %d: score %v after %v; want best first", k, *s, prev)
		}
		prev = *s
		if e.Index == 0 {
			if p, ok := byPair["q1 q2|one two three"]; ok && p != *s {
				t.Errorf("pair (q1 q2, one two three): score %v here, %v in another request; want the same", *s, p)
			}
			byPair["q1 q2|one two three"] = *s
		}
	}
}

// TestRankTiming: in fixed mode a ranking answer is ready TTFT after admission for its first
// document and one ITL later for each further one (x-sim prefill TTFT, decode (n − 1) × ITL);
// in engine mode after the prefill of every pair's tokens, PrefillBase + tokens ×
// PrefillPerToken.
func TestRankTiming(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		cfg := zeroConfig()
		cfg.TTFT, cfg.ITL = 20*time.Millisecond, 3*time.Millisecond
		_, addr := startServer(t, cfg)
		w := rawPost(t, addr, "/v1/rerank", `{"model":"sim","query":"q","documents":["a","b c","d","e"]}`)
		if p, d := headerNs(t, w, "X-Sim-Prefill-Ns"), headerNs(t, w, "X-Sim-Decode-Ns"); p != cfg.TTFT || d != 3*cfg.ITL {
			t.Errorf("prefill %v, decode %v; want the TTFT %v, 3 documents × ITL = %v", p, d, cfg.TTFT, 3*cfg.ITL)
		}
		if want := cfg.TTFT + 3*cfg.ITL; w.elapsed < want {
			t.Errorf("answer after %v; want at least %v", w.elapsed, want)
		}
	})
	t.Run("engine", func(t *testing.T) {
		cfg := zeroConfig()
		cfg.PrefillBase, cfg.PrefillPerToken, cfg.ITL = 2*time.Millisecond, 100*time.Microsecond, 10*time.Millisecond
		_, addr := startServer(t, cfg)
		// 3 pairs of 2 + 3, 2 + 1, 2 + 2 tokens: 12 tokens, 2 ms + 12 × 100 µs
		w := rawPost(t, addr, "/v1/score", `{"model":"sim","text_1":"q1 q2","text_2":["a b c","d","e f"]}`)
		if p, d := headerNs(t, w, "X-Sim-Prefill-Ns"), headerNs(t, w, "X-Sim-Decode-Ns"); p != 3200*time.Microsecond || d != 0 {
			t.Errorf("prefill %v, decode %v; want 2 ms + 12 × 100 µs = 3.2 ms, 0", p, d)
		}
	})
}

// checkTEIErrorBody checks a TEI error body: {"error": message, "error_type": type}.
func checkTEIErrorBody(t *testing.T, w wire) {
	t.Helper()
	var e struct {
		Error     string `json:"error"`
		ErrorType string `json:"error_type"`
	}
	strictDecode(t, string(w.body), &e)
	if e.Error == "" || e.ErrorType != teiErrorType(w.status) {
		t.Errorf("error body %s; want a TEI error of type %s", w.body, teiErrorType(w.status))
	}
}
