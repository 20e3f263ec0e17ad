package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// Every broken response of the scripted server ends in its error kind, on the plain path and
// through net/http (TLS), within the timeouts, keeping the events that came before the breakage;
// the next request on the same client is answered normally.
func TestHostileResponses(t *testing.T) {
	tcfg, pem, err := hostile.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	for _, path := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"tls", true}} {
		t.Run(path.name, func(t *testing.T) {
			var scfg *tls.Config
			if path.tls {
				scfg = tcfg
			}
			srv, err := hostile.Start(hostile.Cases, scfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true, TTFTTimeout: 2 * time.Second, GapTimeout: time.Second,
				TLS: &tls.Config{RootCAs: roots}})
			defer c.Close()
			for _, cs := range hostile.Cases {
				kind, msg := cs.Kind, cs.Message
				var res Result
				t0 := time.Now()
				c.do(context.Background(), &Request{Seq: 1, URL: srv.URL + "/case/" + cs.Name, Body: []byte(`{}`)}, &res)
				q := res.Req
				if q.ErrorKind != kind || !strings.Contains(q.ErrorMessage, msg) {
					t.Errorf("%s: %q, %q; want %q containing %q", cs.Name, q.ErrorKind, q.ErrorMessage, kind, msg)
				}
				if cs.Chunks >= 0 && int(q.Chunks) != cs.Chunks {
					t.Errorf("%s: %d chunks kept; want %d", cs.Name, q.Chunks, cs.Chunks)
				}
				// Only the timeouts bound a case by time; the other cases end on what the server
				// sent (a byte bound, a framing error), which a client that missed it would end as
				// a timeout, caught by the kind above. Reading the 16 MiB line bound over TLS
				// under -race takes seconds on a loaded machine, so a time limit there judged
				// the machine.
				if d := time.Since(t0); (kind == schemas.ErrTTFTTimeout || kind == schemas.ErrGapTimeout) && d > 5*time.Second {
					t.Errorf("%s: took %v; want it ended within the 2s ttft timeout and a little", cs.Name, d)
				}
				var ok Result
				c.do(context.Background(), &Request{Seq: 2, URL: srv.URL + "/case/", Body: []byte(`{}`)}, &ok)
				if ok.Req.ErrorKind != "" {
					t.Errorf("after %s: the next request failed with %s: %s", cs.Name, ok.Req.ErrorKind, ok.Req.ErrorMessage)
				}
			}
		})
	}
}

// The bounds on events and body bytes end an endless stream of valid events (lowered here to
// keep the test short).
func TestEventAndBodyBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 100_000 {
			if _, err := fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\n"); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	defer func(e, b int64) { maxEvents, maxBody = e, b }(maxEvents, maxBody)
	for _, tt := range []struct {
		events, body int64
		msg          string
	}{
		{1000, limitBody, "more than 1000 events"},
		{limitEvents, 100 << 10, "body over 0 MiB"},
	} {
		maxEvents, maxBody = tt.events, tt.body
		c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true})
		var res Result
		c.do(context.Background(), &Request{Seq: 1, URL: srv.URL, Body: []byte(`{}`)}, &res)
		c.Close()
		if res.Req.ErrorKind != schemas.ErrTooLarge || !strings.Contains(res.Req.ErrorMessage, tt.msg) || res.Req.DoneNs != nil {
			t.Errorf("bounds %d events, %d bytes: %q %q done %v; want too_large, %q, no done_ns", tt.events, tt.body, res.Req.ErrorKind, res.Req.ErrorMessage, res.Req.DoneNs, tt.msg)
		}
		if n := int64(len(res.Chunks)); n > tt.events+1000 {
			t.Errorf("bounds %d events: %d chunks kept; want reading to stop soon after the bound", tt.events, n)
		}
	}
}

// A non-streaming body without a length is read only up to the whole-body bound (lowered here).
func TestWholeBodyBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"text":"`)
		for range 10_000 {
			if _, err := fmt.Fprint(w, strings.Repeat("x", 1024)); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	defer func(w int64) { maxWhole = w }(maxWhole)
	maxWhole = 1 << 20
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true})
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{Seq: 1, URL: srv.URL, Body: []byte(`{}`)}, &res)
	if res.Req.ErrorKind != schemas.ErrTooLarge || !strings.Contains(res.Req.ErrorMessage, "non-streaming body over 1 MiB") || len(res.st.sim) != 0 {
		t.Errorf("%q %q, %d bytes kept; want too_large, non-streaming body over 1 MiB, the buffer dropped", res.Req.ErrorKind, res.Req.ErrorMessage, len(res.st.sim))
	}
}
