package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// embedCase is one golden exchange of an embeddings request.
type embedCase struct {
	name, body string
	inputs     int // data entries
	dims       int
	prompt     int // prompt tokens
}

var embedCases = []embedCase{
	{"embeddings-json", `{"model":"sim","input":["one two three","four five"],"dimensions":4,"encoding_format":"float"}`, 2, 4, 5},
	{"embeddings-string", `{"model":"sim","input":"one two three"}`, 1, 384, 3}, // the default dimension
	{"embeddings-token-ids", `{"model":"sim","input":[[1,2,3],[4,5]],"dimensions":3}`, 2, 3, 5},
	{"embeddings-ids", `{"model":"sim","input":[1,2,3],"dimensions":3}`, 1, 3, 3},
	{"embeddings-base64", `{"model":"sim","input":["one two three","four five"],"dimensions":4,"encoding_format":"base64"}`, 2, 4, 5},
}

// embedResponse is the strict shape of an embeddings response.
type embedResponse struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors decodes the embeddings of a response, float lists or base64 float32s.
func vectors(t *testing.T, r embedResponse) [][]float64 {
	t.Helper()
	var out [][]float64
	for i, d := range r.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Errorf("data[%d]: object %q index %d; want embedding, %d", i, d.Object, d.Index, i)
		}
		var v []float64
		var s string
		if err := json.Unmarshal(d.Embedding, &s); err == nil {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("data[%d]: base64 %q: %v", i, s, err)
			}
			for j := 0; j < len(raw); j += 4 {
				v = append(v, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[j:]))))
			}
		} else if err := json.Unmarshal(d.Embedding, &v); err != nil {
			t.Fatalf("data[%d]: embedding %s: %v", i, d.Embedding, err)
		}
		out = append(out, v)
	}
	return out
}

// TestEmbeddings: one vector per input of the asked length, values in [-1, 1], the prompt
// tokens in the usage, the same input the same vector in any request and encoding, different
// inputs different vectors.
func TestEmbeddings(t *testing.T) {
	_, addr := startServer(t, zeroConfig())
	byInput := map[string][]float64{} // "one two three" in every request that has it
	for _, tt := range embedCases {
		t.Run(tt.name, func(t *testing.T) {
			w := rawPost(t, addr, "/v1/embeddings", tt.body)
			if w.status != 200 || !w.complete {
				t.Fatalf("status %d complete %v:\n%s%s", w.status, w.complete, w.head, w.body)
			}
			golden(t, tt.name, normalize(w))
			var r embedResponse
			strictDecode(t, string(w.body), &r)
			vs := vectors(t, r)
			if r.Object != "list" || r.Model != "sim" || len(vs) != tt.inputs || r.Usage.PromptTokens != tt.prompt || r.Usage.TotalTokens != tt.prompt {
				t.Errorf("object %q model %q, %d vectors, usage %+v; want list, sim, %d, %d tokens", r.Object, r.Model, len(vs), r.Usage, tt.inputs, tt.prompt)
			}
			for i, v := range vs {
				if len(v) != tt.dims {
					t.Errorf("vector %d has %d dimensions; want %d", i, len(v), tt.dims)
				}
				for _, x := range v {
					if x < -1 || x > 1 {
						t.Errorf("vector %d holds %v; want values in [-1, 1]", i, x)
					}
				}
			}
			if len(vs) == 2 && vs[0][0] == vs[1][0] && vs[0][1] == vs[1][1] {
				t.Errorf("two inputs, same vector %v", vs[0])
			}
			if tt.dims == 4 && tt.prompt == 5 { // the two text cases: input 0 is "one two three"
				if prev, ok := byInput["one two three"]; ok {
					for d := range prev {
						if math.Abs(prev[d]-vs[0][d]) > 1e-6 {
							t.Errorf("\"one two three\": %v here, %v in another request; want the same vector", vs[0], prev)
						}
					}
				}
				byInput["one two three"] = vs[0]
			}
		})
	}
}

// headerNs reads an x-sim header (nanoseconds) of a response.
func headerNs(t *testing.T, w wire, name string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `: (\d+)\r$`).FindStringSubmatch(w.head)
	if m == nil {
		t.Fatalf("no %s header in\n%s", name, w.head)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return time.Duration(v)
}

// TestEmbeddingTiming: in fixed mode an embeddings response is ready TTFT after admission; in
// engine mode after its prefill, PrefillBase + uncached tokens × PrefillPerToken (the prefix
// cache counted per input), plus a decode step's time when another sequence decodes in the
// same step. The x-sim headers give the engine's timings exactly.
func TestEmbeddingTiming(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		cfg := zeroConfig()
		cfg.TTFT, cfg.ITL = 30*time.Millisecond, 5*time.Millisecond
		_, addr := startServer(t, cfg)
		w := rawPost(t, addr, "/v1/embeddings", `{"model":"sim","input":["a b c","d"]}`)
		if p, d := headerNs(t, w, "X-Sim-Prefill-Ns"), headerNs(t, w, "X-Sim-Decode-Ns"); p != cfg.TTFT || d != 0 {
			t.Errorf("prefill %v, decode %v; want the TTFT %v, 0", p, d, cfg.TTFT)
		}
		if w.elapsed < cfg.TTFT {
			t.Errorf("response after %v; want at least the TTFT %v", w.elapsed, cfg.TTFT)
		}
	})
	t.Run("engine", func(t *testing.T) {
		cfg := zeroConfig()
		cfg.PrefillBase, cfg.PrefillPerToken, cfg.ITL = 2*time.Millisecond, 100*time.Microsecond, 10*time.Millisecond
		cfg.BlockSize, cfg.PrefixCacheBlocks = 4, 64
		_, addr := startServer(t, cfg)
		// two inputs of 10 and 5 words: 15 tokens, none cached: 2 ms + 15 × 100 µs
		body := `{"model":"sim","input":["w1 w2 w3 w4 w5 w6 w7 w8 w9 w10","v1 v2 v3 v4 v5"]}`
		if p := headerNs(t, rawPost(t, addr, "/v1/embeddings", body), "X-Sim-Prefill-Ns"); p != 3500*time.Microsecond {
			t.Errorf("first request: prefill %v; want 2 ms + 15 × 100 µs = 3.5 ms", p)
		}
		// again: the full blocks of each input (8 + 4 tokens) are cached, 3 tokens are not
		if p := headerNs(t, rawPost(t, addr, "/v1/embeddings", body), "X-Sim-Prefill-Ns"); p != 2300*time.Microsecond {
			t.Errorf("repeated request: prefill %v; want 2 ms + 3 × 100 µs = 2.3 ms", p)
		}
		// while a stream decodes, the step that admits the embeddings also lasts an ITL
		var wg sync.WaitGroup
		wg.Go(func() {
			rawPost(t, addr, "/v1/completions", `{"model":"sim","prompt":"x","max_tokens":30,"stream":true}`)
		})
		time.Sleep(50 * time.Millisecond) // the stream runs for 300 ms
		w := rawPost(t, addr, "/v1/embeddings", `{"model":"sim","input":"u1 u2 u3"}`)
		wg.Wait()
		if p := headerNs(t, w, "X-Sim-Prefill-Ns"); p != 2300*time.Microsecond+cfg.ITL {
			t.Errorf("beside a decoding stream: prefill %v; want 2 ms + 3 × 100 µs + one ITL (10 ms) = 12.3 ms", p)
		}
	})
}
