package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReasoningTiming: in fixed mode the reasoning tokens are ordinary tokens of the timing
// model: the first token event (reasoning) comes TTFT after admission, then one every ITL, the
// answer's first r × ITL after it, and the engine's reported timings are exact. The Responses
// and Messages preludes (response.created, message_start) leave at admission, before the first
// token is due, not with it.
func TestReasoningTiming(t *testing.T) {
	const (
		ttft, itl = 200 * time.Millisecond, 5 * time.Millisecond
		r, n      = 3, 6
		tol       = time.Millisecond // wall clock against the engine's monotonic clock
	)
	cases := []struct {
		api       api
		body      string
		reasoning string // what marks a reasoning delta
		prelude   string // the first event, sent at admission ("" for none)
	}{
		{apiChat, `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true}`, `"reasoning_content"`, ""},
		{apiResponses, `{"model":"sim","input":"hi","max_output_tokens":6,"stream":true}`, "response.reasoning_text.delta", "response.created"},
		{apiMessages, `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true}`, `"thinking_delta"`, "message_start"},
	}
	cfg := zeroConfig()
	cfg.TTFT, cfg.ITL, cfg.ReasoningTokens = ttft, itl, r
	for _, tt := range cases {
		t.Run(strings.TrimPrefix(apiPaths[tt.api], "/v1/"), func(t *testing.T) {
			rl, addr := startRecording(t, cfg, false)
			start := time.Now().UnixNano()
			w := rawPost(t, addr, apiPaths[tt.api], tt.body)
			s := checkStream(t, w.body, tt.api)
			if x := s.truth; x.PrefillNs != int64(ttft) || x.DecodeNs != int64((n-1)*itl) || len(x.SentNs) != n {
				t.Fatalf("prefill %v, decode %v, %d send stamps; want %v, %v, %d", time.Duration(x.PrefillNs), time.Duration(x.DecodeNs), len(x.SentNs), ttft, (n-1)*itl, n)
			}
			evs, _ := parseSSE(w.body)
			var kinds []string // token events in order: r(easoning) or a(nswer)
			for _, e := range evs {
				if eventName(e) == "content" {
					kind := "a"
					if strings.Contains(e.name+e.data, tt.reasoning) {
						kind = "r"
					}
					kinds = append(kinds, kind)
				}
			}
			if got := strings.Join(kinds, ""); got != strings.Repeat("r", r)+strings.Repeat("a", n-r) {
				t.Errorf("token events %q; want %d reasoning then %d answer", got, r, n-r)
			}
			// token k is due TTFT + k × ITL after the request arrived, itself after start:
			// none may leave before
			for k, sent := range s.truth.SentNs {
				if due := time.Duration(k)*itl + ttft; time.Duration(sent-start) < due-tol {
					t.Errorf("token event %d sent %v after the request; due no earlier than %v", k, time.Duration(sent-start), due)
				}
			}
			if tt.prelude == "" {
				return
			}
			writes := rl.lastWrites(t)
			perWrite, err := writeEvents(writes)
			if err != nil {
				t.Fatal(err)
			}
			for i, evs := range perWrite {
				if len(evs) > 0 && evs[0].name == tt.prelude {
					if late := time.Duration(writes[i].end - start); late >= ttft {
						t.Errorf("%s written %v after the request; want it before the first token is due (%v)", tt.prelude, late, ttft)
					}
					return
				}
			}
			t.Errorf("no write begins with %s", tt.prelude)
		})
	}
}

// TestTokenEvents: a chunk straddling the end of the reasoning is sent as two deltas.
func TestTokenEvents(t *testing.T) {
	tests := []struct {
		n, k, r int
		want    int
	}{
		{5, 1, 0, 5}, // no reasoning
		{5, 1, 3, 5}, // K = 1: never straddles
		{7, 3, 2, 4}, // chunks {0} {1,2,3} {4,5,6}: {1,2,3} holds reasoning 1 and answer 2, 3
		{7, 3, 1, 3}, // the reasoning ends with chunk 0
		{7, 3, 4, 3}, // ... with chunk 1
		{8, 3, 7, 4}, // chunks {0} {1,2,3} {4,5,6} {7}: the answer is the last chunk
		{8, 3, 5, 5}, // ... {4,5,6} holds reasoning 4 and answer 5, 6
	}
	for _, tt := range tests {
		rd := newRender(&job{api: apiChat, model: `"sim"`, maxTokens: tt.n, reasoning: tt.r}, 1, reasoningContent)
		if got := rd.tokenEvents(chunkCount(tt.n, tt.k), tt.k); got != tt.want {
			t.Errorf("tokenEvents(n=%d, k=%d, r=%d) = %d; want %d", tt.n, tt.k, tt.r, got, tt.want)
		}
	}
}

// TestImageTokensCached: an image is ImageTokens prompt tokens hashed from its URL, so a
// repeated image hits the prefix cache and a different one does not.
func TestImageTokensCached(t *testing.T) {
	cfg := zeroConfig()
	cfg.ImageTokens, cfg.BlockSize, cfg.PrefixCacheBlocks = 32, 16, 64
	_, addr := startServer(t, cfg)
	body := func(url string) string {
		return fmt.Sprintf(`{"model":"sim","input":[{"role":"user","content":[{"type":"input_image","image_url":%q}]}],"max_output_tokens":1,"stream":true}`, url)
	}
	var cached []int
	for _, url := range []string{"data:image/png;base64,AAAA", "data:image/png;base64,AAAA", "data:image/png;base64,BBBB"} {
		w := rawPost(t, addr, "/v1/responses", body(url))
		evs, err := parseSSE(w.body)
		if err != nil || len(evs) == 0 {
			t.Fatalf("%v:\n%s", err, w.body)
		}
		var ev respEvent
		strictDecode(t, evs[len(evs)-1].data, &ev)
		if u := ev.Response.Usage; u.InputTokens != 32 {
			t.Errorf("input tokens %d; want the image's 32", u.InputTokens)
		}
		cached = append(cached, ev.Response.Usage.InputTokensDetails.CachedTokens)
	}
	if cached[0] != 0 || cached[1] != 32 || cached[2] != 0 {
		t.Errorf("cached tokens of an image, the same again, another = %v; want [0 32 0]", cached)
	}
}
