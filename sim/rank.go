package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	gojson "github.com/goccy/go-json"
)

// Ranking (never streamed): POST /v1/rerank (vLLM, Cohere and Jina style: query, documents,
// top_n), POST /v1/score (vLLM: text_1, text_2) and POST /rerank (Hugging Face TEI: query,
// texts). A request is one engine sequence whose prompt is every (query, document) pair, each
// pair its own prefix-cache chain, as a cross-encoder reads them. Timing: in engine mode the
// answer is due at the end of the step that admits it (PrefillBase + the pairs' uncached tokens
// × PrefillPerToken, as embeddings); in fixed mode the first document's score is ready TTFT
// after admission and each further document's ITL later, so the answer comes TTFT +
// (documents − 1) × ITL after admission. Pair i's score is a deterministic function of its
// tokens, in [0, 1] with 6 decimals.

// rankJob is the shape of a ranking answer.
type rankJob struct {
	docs   []string // the documents, for rerank's document echo
	seeds  []uint64 // one per pair: the pair's hash, which seeds its score
	topN   int      // rerank: the best topN; 0 = all
	noText bool     // TEI: return_text false (the default): no text in the answer
}

// ranks reports whether a is a ranking API.
func (a api) ranks() bool { return a == apiRerank || a == apiScore || a == apiTEIRerank }

// rankInputs reads the query and documents of a ranking request, and counts and hashes each
// (query, document) pair.
func (s *Server) rankInputs(req *request, j *job) error {
	var queries, docs []string
	var err error
	switch j.api {
	case apiScore:
		if queries, err = stringOrList(req.Text1, "text_1"); err != nil {
			return err
		}
		if docs, err = stringOrList(req.Text2, "text_2"); err != nil {
			return err
		}
		if len(queries) != 1 && len(queries) != len(docs) {
			return fmt.Errorf("text_1: %d texts for %d in text_2; want 1 or as many", len(queries), len(docs))
		}
	default:
		var q string
		if err := gojson.Unmarshal(bytes.TrimSpace(req.Query), &q); err != nil || q == "" {
			return errors.New("query: required, a non-empty string")
		}
		queries = []string{q}
		raw, name := req.Documents, "documents"
		if j.api == apiTEIRerank {
			raw, name = req.Texts, "texts"
		}
		if docs, err = documentList(raw, name); err != nil {
			return err
		}
	}
	if req.TopN != nil {
		if *req.TopN < 0 {
			return fmt.Errorf("top_n: %d is negative", *req.TopN)
		}
		j.rank.topN = *req.TopN
	}
	j.rank.noText = !req.ReturnText
	j.rank.docs = docs
	bh := &j.bh
	for i, d := range docs {
		before := bh.tokens
		bh.text(queries[min(i, len(queries)-1)])
		bh.text(d)
		if n := bh.tokens - before; n > s.cfg.MaxModelLen {
			return fmt.Errorf("This model's maximum context length is %d tokens. However, you requested %d tokens in the input of pair %d. Please reduce the length of the input.", s.cfg.MaxModelLen, n, i)
		}
		j.rank.seeds = append(j.rank.seeds, bh.endChain())
	}
	return nil
}

// stringOrList reads a string or a non-empty list of strings.
func stringOrList(raw json.RawMessage, name string) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	var one string
	if len(raw) > 0 && raw[0] == '"' && gojson.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if gojson.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, fmt.Errorf("%s: required, a string or a non-empty list of strings", name)
	}
	return list, nil
}

// documentList reads a non-empty list of documents: strings, or objects with a "text" (Jina's
// and Cohere's document objects).
func documentList(raw json.RawMessage, name string) ([]string, error) {
	var list []json.RawMessage
	if gojson.Unmarshal(bytes.TrimSpace(raw), &list) != nil || len(list) == 0 {
		return nil, fmt.Errorf("%s: required, a non-empty list", name)
	}
	docs := make([]string, len(list))
	for i, r := range list {
		var obj struct {
			Text *string `json:"text"`
		}
		switch {
		case gojson.Unmarshal(r, &docs[i]) == nil:
		case gojson.Unmarshal(r, &obj) == nil && obj.Text != nil:
			docs[i] = *obj.Text
		default:
			return nil, fmt.Errorf("%s[%d]: want a string or {\"text\": string}", name, i)
		}
	}
	return docs, nil
}

// score returns pair seed h's score in millionths: [0, 1e6].
func score(h uint64) int64 { return int64(h>>11) % 1000001 }

// appendRank appends the ranking answer body of j.
func (s *Server) appendRank(b []byte, j *job) []byte {
	r := &j.rank
	order := make([]int, len(r.seeds))
	for i := range order {
		order[i] = i
	}
	if j.api != apiScore { // rerank answers are sorted by score, best first
		slices.SortStableFunc(order, func(x, y int) int { return int(score(r.seeds[y]) - score(r.seeds[x])) })
	}
	if r.topN > 0 && r.topN < len(order) && j.api == apiRerank {
		order = order[:r.topN]
	}
	switch j.api {
	case apiTEIRerank:
		b = append(b, '[')
	case apiRerank:
		b = append(b, `{"model":`...)
		b = append(b, j.model...)
		b = append(b, `,"usage":{"total_tokens":`...)
		b = appendInt(b, j.bh.tokens)
		b = append(b, `},"results":[`...)
	default:
		b = append(b, `{"object":"list","model":`...)
		b = append(b, j.model...)
		b = append(b, `,"data":[`...)
	}
	for k, i := range order {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, i)
		switch j.api {
		case apiRerank:
			b = append(b, `,"document":{"text":`...)
			b = appendJSON(b, r.docs[i])
			b = append(b, `},"relevance_score":`...)
		case apiScore:
			b = append(b, `,"object":"score","score":`...)
		default:
			if !r.noText {
				b = append(b, `,"text":`...)
				b = appendJSON(b, r.docs[i])
			}
			b = append(b, `,"score":`...)
		}
		b = appendMillionths(b, score(r.seeds[i]))
		b = append(b, '}')
	}
	switch j.api {
	case apiTEIRerank:
		return append(b, "]\n"...)
	case apiRerank:
		return append(b, "]}\n"...)
	}
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = appendInt(b, j.bh.tokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, j.bh.tokens)
	return append(b, "}}\n"...)
}

// appendJSON appends s as a JSON string.
func appendJSON(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string: cannot fail
	return append(b, enc...)
}
