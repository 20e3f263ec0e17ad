package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestParseRankAnswers: each ranking API's answer, its entries counted and checked, usage read.
func TestParseRankAnswers(t *testing.T) {
	tests := []struct {
		name                  string
		api                   API
		in                    string
		items, ranked, maxIdx int
		prompt                int64
		err                   bool
	}{
		{"vllm rerank", apiRerank, `{"id":"r","model":"m","usage":{"total_tokens":12},"results":[{"index":2,"document":{"text":"x"},"relevance_score":0.9},{"index":0,"relevance_score":1e-3}]}`, 2, 2, 2, 12, false},
		{"score", apiScore, `{"object":"list","data":[{"index":0,"object":"score","score":0.5},{"index":1,"object":"score","score":-1.5}],"usage":{"prompt_tokens":8,"total_tokens":8}}`, 2, 2, 1, 8, false},
		{"tei", apiTEIRerank, ` [{"index":1,"score":0.7,"text":"a"},{"index":0,"score":0.1}] `, 2, 2, 1, -1, false},
		{"tei error object", apiTEIRerank, `{"error":"boom","error_type":"backend"}`, 0, 0, -1, -1, false},
		{"fractional index", apiRerank, `{"results":[{"index":1.5,"relevance_score":0.9}]}`, 1, 0, -1, -1, false},
		{"score as string", apiScore, `{"data":[{"index":0,"score":"0.5"}]}`, 1, 0, -1, -1, false},
		{"negative index", apiTEIRerank, `[{"index":-1,"score":0.5}]`, 1, 0, -1, -1, false},
		{"tei not json", apiTEIRerank, `[{"index":0,`, 0, 0, -1, -1, true},
		{"tei trailing", apiTEIRerank, `[] x`, 0, 0, -1, -1, true},
	}
	for _, tt := range tests {
		var p payload
		err := parseEvent(tt.api, nil, []byte(tt.in), &p, false)
		if (err != nil) != tt.err {
			t.Errorf("%s: parseEvent(%s) error = %v; want error %v", tt.name, tt.in, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		if p.Items != tt.items || p.Ranked != tt.ranked || p.MaxIndex != int64(tt.maxIdx) || p.Prompt != tt.prompt {
			t.Errorf("%s: items %d ranked %d max index %d prompt %d; want %d %d %d %d", tt.name, p.Items, p.Ranked, p.MaxIndex, p.Prompt, tt.items, tt.ranked, tt.maxIdx, tt.prompt)
		}
	}
}

// TestCheckRanked: an answer against the documents sent and the entries expected.
func TestCheckRanked(t *testing.T) {
	tests := []struct {
		name          string
		items, ranked int
		maxIdx        int64
		docs, answers int32
		message       string // "" = ok
	}{
		{"all", 3, 3, 2, 3, 3, ""},
		{"top_n", 2, 2, 2, 3, 2, ""},
		{"none", 0, 0, -1, 3, 3, "no scores in the answer (want 3"},
		{"unscored", 3, 2, 2, 3, 3, "1 of the answer's 3 entries lack"},
		{"out of range", 3, 3, 3, 3, 3, "index 3 in the answer, but 3 documents were sent"},
		{"too many", 4, 4, 2, 3, 3, "4 scores in the answer; want 3"},
	}
	for _, tt := range tests {
		err := checkRanked(&payload{Items: tt.items, Ranked: tt.ranked, MaxIndex: tt.maxIdx}, &Request{Documents: tt.docs, Answers: tt.answers})
		if (err == nil) != (tt.message == "") || (err != nil && !strings.Contains(err.Error(), tt.message)) {
			t.Errorf("%s: checkRanked = %v; want %q", tt.name, err, tt.message)
		}
	}
}

// FuzzParseRankAnswer checks that the ranking parsers never panic, accept only valid JSON (but
// for raw control characters inside strings: see controlsOut), and count the entries of a TEI
// array as encoding/json does.
func FuzzParseRankAnswer(f *testing.F) {
	f.Add(uint8(2), []byte(`[{"index":0,"score":0.5},{"index":1,"score":1e-2}]`))
	f.Add(uint8(0), []byte(`{"results":[{"index":0,"relevance_score":0.5}],"usage":{"total_tokens":3}}`))
	f.Add(uint8(1), []byte(`{"data":[{"index":0,"score":-1}]}`))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		api := apiRerank + API(which%3)
		var p payload
		if parseEvent(api, nil, b, &p, false) != nil {
			return
		}
		if !json.Valid(controlsOut(b)) {
			t.Fatalf("parseEvent(%d, %q) = nil error; want an error for invalid JSON", api, b)
		}
		var arr []json.RawMessage
		if api == apiTEIRerank && json.Unmarshal(b, &arr) == nil && len(arr) != p.Items {
			t.Fatalf("parseEvent(tei, %q): %d items; want %d", b, p.Items, len(arr))
		}
	})
}

// TestDoRank reads each ranking API's answer to a request of 2 documents: a good answer is one
// chunk and no error (the rerank usage's total_tokens as prompt tokens, no embeddings count); a
// JSON answer that does not score the documents is malformed_answer, one that is not JSON
// malformed_stream, an error object server_error_event, a TEI error http_status.
func TestDoRank(t *testing.T) {
	tests := []struct {
		name, body string
		api        API
		status     int
		kind       string
		prompt     int32 // usage prompt tokens; -1 none
	}{
		{"rerank", `{"model":"m","usage":{"total_tokens":9},"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}`, apiRerank, 200, "", 9},
		{"score", `{"object":"list","data":[{"index":0,"object":"score","score":0.2},{"index":1,"object":"score","score":0.4}],"usage":{"prompt_tokens":9,"total_tokens":9}}`, apiScore, 200, "", 9},
		{"tei", `[{"index":1,"score":0.9},{"index":0,"score":0.1}]`, apiTEIRerank, 200, "", -1},
		{"tei too few", `[{"index":1,"score":0.9}]`, apiTEIRerank, 200, schemas.ErrMalformedAnswer, -1},
		{"score as embeddings", `{"object":"list","data":[{"index":0,"embedding":[0.1]},{"index":1,"embedding":[0.2]}]}`, apiScore, 200, schemas.ErrMalformedAnswer, -1},
		{"rerank not json", `{"results":[`, apiRerank, 200, schemas.ErrMalformedStream, -1},
		{"rerank error object", `{"object":"error","message":"boom"}`, apiRerank, 200, schemas.ErrServerEvent, -1},
		{"tei 413", `{"error":"batch size 2 > maximum allowed batch size 1","error_type":"validation"}`, apiTEIRerank, 413, schemas.ErrHTTPStatus, -1},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tt.status)
			fmt.Fprint(w, tt.body)
		}))
		c := NewClient(ClientConfig{API: tt.api, MaxConns: 1, Timestamps: true})
		res := new(Result)
		c.do(context.Background(), &Request{Seq: 1, URL: srv.URL, Body: []byte(`{}`), Documents: 2, Answers: 2}, res)
		c.Close()
		srv.Close()
		q := res.Req
		prompt := int32(-1)
		if q.UsagePrompt != nil {
			prompt = *q.UsagePrompt
		}
		if q.ErrorKind != tt.kind || prompt != tt.prompt || q.Embeddings != 0 || q.Chunks > 1 {
			t.Errorf("%s: kind %q (%s), usage prompt %d, embeddings %d, chunks %d; want %q, %d, 0, at most 1", tt.name, q.ErrorKind, q.ErrorMessage, prompt, q.Embeddings, q.Chunks, tt.kind, tt.prompt)
		}
	}
}

// TestParseRankAllocs: reading a ranking answer allocates nothing, as every event parse.
func TestParseRankAllocs(t *testing.T) {
	var p payload
	rerank := []byte(`{"model":"m","usage":{"total_tokens":9},"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}`)
	tei := []byte(`[{"index":1,"score":0.9},{"index":0,"score":0.1}]`)
	if n := testing.AllocsPerRun(100, func() {
		parseEvent(apiRerank, nil, rerank, &p, false)
		parseEvent(apiTEIRerank, nil, tei, &p, false)
	}); n != 0 {
		t.Errorf("parseEvent(rerank, tei) allocates %v times a run; want 0", n)
	}
}

// controlsOut returns b with every raw control character inside a string replaced by a space.
// JSON requires them escaped; the scanner does not look for them, since it finds a string's end
// with IndexByte and checking every byte of every string would cost the hot path a byte loop.
func controlsOut(b []byte) []byte {
	out := slices.Clone(b)
	in, esc := false, false
	for i, c := range out {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in && c < 0x20:
			out[i] = ' '
		}
	}
	return out
}
