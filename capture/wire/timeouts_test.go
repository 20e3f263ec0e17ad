package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// stallHandler sends the headers and `events` content events, then stalls until the client goes
// away (or 5 s). A request with ?ok=1 gets a whole stream instead.
func stallHandler(events int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ok") != "" {
			rawSSE(okSSE).ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fl.Flush()
		for i := range events {
			time.Sleep(10 * time.Millisecond)
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// startTimeoutServer starts h as a plain or TLS server and returns its URL, its count of
// accepted connections and a client configured by cfg that trusts it.
func startTimeoutServer(t *testing.T, tlsOn bool, h http.Handler, cfg ClientConfig) (string, func() int32, *Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	conns := countConns(srv.Config)
	if tlsOn {
		srv.StartTLS()
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		cfg.TLS = &tls.Config{RootCAs: pool}
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	c := NewClient(cfg)
	t.Cleanup(c.Close)
	return srv.URL, conns, c
}

// mustDialAfterCut checks that a cut connection was closed: the next request to url succeeds on
// a fresh connection, the second the server accepted.
func mustDialAfterCut(t *testing.T, c *Client, url string, conns func() int32) {
	t.Helper()
	res, _ := sendTimed(c, url+"/v1/completions?ok=1")
	mustOK(t, "after the cut", res, 3)
	if res.Req.ConnReused || conns() != 2 {
		t.Errorf("next request: conn_reused %v, %d connections accepted; want a fresh connection (2)", res.Req.ConnReused, conns())
	}
}

// sendTimed sends one request and returns its result and when done was called.
func sendTimed(c *Client, url string) (*Result, int64) {
	var res Result
	done := make(chan int64, 1)
	c.Send(context.Background(), &Request{URL: url, Body: []byte(`{}`)}, &res, func(*Result) { done <- time.Now().UnixNano() })
	return &res, <-done
}

func TestTTFTTimeout(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tlsOn], func(t *testing.T) {
			const limit = 200 * time.Millisecond
			url, conns, c := startTimeoutServer(t, tlsOn, stallHandler(0), ClientConfig{MaxConns: 4, Timeout: 5 * time.Second, TTFTTimeout: limit, GapTimeout: time.Second})
			res, doneAt := sendTimed(c, url+"/v1/completions")
			if res.Req.ErrorKind != schemas.ErrTTFTTimeout {
				t.Fatalf("error %q (%s); want %s", res.Req.ErrorKind, res.Req.ErrorMessage, schemas.ErrTTFTTimeout)
			}
			if len(res.Chunks) != 0 {
				t.Errorf("%d chunks; want 0", len(res.Chunks))
			}
			if d := time.Duration(doneAt - res.Req.SendStartNs); d < limit || d > limit+100*time.Millisecond {
				t.Errorf("ended %v after the send began; want within [%v, %v]", d, limit, limit+100*time.Millisecond)
			}
			t.Logf("%s: %s", res.Req.ErrorKind, res.Req.ErrorMessage)
			mustDialAfterCut(t, c, url, conns)
		})
	}
}

func TestGapTimeoutKeepsChunks(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tlsOn], func(t *testing.T) {
			const limit = 200 * time.Millisecond
			url, conns, c := startTimeoutServer(t, tlsOn, stallHandler(2), ClientConfig{MaxConns: 4, Timeout: 5 * time.Second, TTFTTimeout: time.Second, GapTimeout: limit})
			res, doneAt := sendTimed(c, url+"/v1/completions")
			if res.Req.ErrorKind != schemas.ErrGapTimeout {
				t.Fatalf("error %q (%s); want %s", res.Req.ErrorKind, res.Req.ErrorMessage, schemas.ErrGapTimeout)
			}
			if len(res.Chunks) != 2 || res.Req.Chunks != 2 || res.Chunks[1].Kind != schemas.ChunkContent {
				t.Fatalf("%d chunks (row says %d); want the 2 content chunks that arrived", len(res.Chunks), res.Req.Chunks)
			}
			last := res.Chunks[1].RxUserNs
			if d := time.Duration(doneAt - last); d < limit || d > limit+100*time.Millisecond {
				t.Errorf("ended %v after the last chunk; want within [%v, %v]", d, limit, limit+100*time.Millisecond)
			}
			t.Logf("%s: %s", res.Req.ErrorKind, res.Req.ErrorMessage)
			mustDialAfterCut(t, c, url, conns)
		})
	}
}

// A stream whose gaps stay below GapTimeout, and whose first event comes within TTFTTimeout,
// runs to its end.
func TestGapTimeoutSparesSlowStream(t *testing.T) {
	srv, _ := countingServer(t, stampHandler(streamSpec{events: 5, interval: 50 * time.Millisecond}), nil)
	c := NewClient(ClientConfig{MaxConns: 4, TTFTTimeout: 100 * time.Millisecond, GapTimeout: 100 * time.Millisecond})
	defer c.Close()
	res, _ := sendTimed(c, srv.URL+"/v1/completions")
	mustOK(t, "slow stream", res, 8)
}

// dripped begins a 200 and then sends its headers one byte every 50 ms (for up to 5 s).
var dripped = hostile.Case{Name: "dripped headers", Hold: true, Respond: func(w io.Writer) {
	if _, err := io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"); err != nil {
		return
	}
	for range 100 {
		time.Sleep(50 * time.Millisecond)
		if _, err := io.WriteString(w, "X"); err != nil {
			return
		}
	}
}}

// Headers dripped a byte at a time never leave a gap of GapTimeout, but the body never begins:
// TTFTTimeout cuts them, on the plain path as through net/http.
func TestTTFTTimeoutCutsDrippedHeaders(t *testing.T) {
	tcfg, pem, err := hostile.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tlsOn], func(t *testing.T) {
			scfg := tcfg
			if !tlsOn {
				scfg = nil
			}
			srv, err := hostile.Start([]hostile.Case{dripped}, scfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			const limit = 300 * time.Millisecond
			c := NewClient(ClientConfig{MaxConns: 4, TTFTTimeout: limit, GapTimeout: 200 * time.Millisecond, TLS: &tls.Config{RootCAs: roots}})
			defer c.Close()
			res, doneAt := sendTimed(c, srv.URL+"/case/"+dripped.Name)
			if res.Req.ErrorKind != schemas.ErrTTFTTimeout {
				t.Fatalf("error %q (%s); want %s", res.Req.ErrorKind, res.Req.ErrorMessage, schemas.ErrTTFTTimeout)
			}
			if d := time.Duration(doneAt - res.Req.SendStartNs); d < limit || d > 2*time.Second {
				t.Errorf("ended %v after the send began; want soon after %v", d, limit)
			}
		})
	}
}
