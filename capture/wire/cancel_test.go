package wire

import (
	"context"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// A request with CancelAfterTokens or CancelAfter, on a warm connection, ends as
// cancelled_by_client with the chunks it had, its connection closed (the next request dials a
// fresh one, the second), and the pool's count of open connections goes back down.
func TestCancelByClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    Request
		chunks int
	}{
		{"after 3 tokens", Request{CancelAfterTokens: 3}, 3},
		{"after 50ms", Request{CancelAfter: 50 * time.Millisecond}, -1},
	} {
		for _, tlsOn := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: " plain", true: " tls"}[tlsOn], func(t *testing.T) {
				url, conns, c := startTimeoutServer(t, tlsOn, stallHandler(8), ClientConfig{MaxConns: 4, Timeout: 5 * time.Second})
				warm, _ := sendTimed(c, url+"/v1/completions?ok=1") // the cancelled request reuses it
				mustOK(t, "warm-up", warm, 3)
				var res Result
				done := make(chan struct{})
				r := tc.req
				r.URL, r.Body = url+"/v1/completions", []byte(`{}`)
				c.Send(context.Background(), &r, &res, func(*Result) { close(done) })
				<-done
				if res.Req.ErrorKind != schemas.ErrCancelledByClient || res.Req.DoneNs != nil || res.Req.Status != 200 {
					t.Fatalf("error %q (%s), status %d, done_ns %v; want %s, 200, no end", res.Req.ErrorKind, res.Req.ErrorMessage, res.Req.Status, res.Req.DoneNs, schemas.ErrCancelledByClient)
				}
				// Events come every 10 ms: a cut at 50 ms has a few; one after 3 tokens exactly 3.
				if n := len(res.Chunks); (tc.chunks >= 0 && n != tc.chunks) || n == 0 || n >= 8 {
					t.Errorf("%d chunks; want %d (of the 8 the server would send)", n, tc.chunks)
				}
				mustDialAfterCut(t, c, url, conns)
				c.pools.Range(func(_, v any) bool {
					if n := v.(*plainPool).open.Load(); n != 1 {
						t.Errorf("pool holds %d open connections; want 1 (the cancelled one closed)", n)
					}
					return true
				})
			})
		}
	}
}
