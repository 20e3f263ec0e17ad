package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// tlsServer starts h over TLS (at most version max; 0 = any) and returns it with a client TLS
// configuration that trusts it.
func tlsServer(t *testing.T, h http.Handler, max uint16) (*httptest.Server, *tls.Config) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{MaxVersion: max}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, &tls.Config{RootCAs: pool}
}

var tlsVersions = []struct {
	name string
	v    uint16
}{{"tls1.2", tls.VersionTLS12}, {"tls1.3", tls.VersionTLS13}}

// An https stream is read as a plain one: every event has the kernel time of the TLS record
// that completed it (exact unless a later record came in the same read), a receive-stream
// offset and rx_after_ns; a new connection records its handshake; ALPN is http/1.1.
func TestTLSStream(t *testing.T) {
	for _, tv := range tlsVersions {
		t.Run(tv.name, func(t *testing.T) {
			srv, tcfg := tlsServer(t, stampHandler(streamSpec{events: 5, interval: time.Millisecond}), tv.v)
			c := NewClient(ClientConfig{MaxConns: 2, KeepText: true, Timestamps: true, TLS: tcfg})
			defer c.Close()
			for i := range 2 {
				var res Result
				c.do(context.Background(), &Request{Seq: 7, URL: srv.URL + "/v1/chat/completions", Body: []byte(`{}`)}, &res)
				mustOK(t, fmt.Sprintf("request %d", i), &res, 8)
				q := &res.Req
				if q.ConnReused != (i == 1) || (q.TLSHandshakeNs != nil) != (i == 0) || (q.TLSResumed != nil) != (i == 0) {
					t.Errorf("request %d: reused %v, tls_handshake_ns %v, tls_resumed %v; want the handshake on the new connection only", i, q.ConnReused, q.TLSHandshakeNs, q.TLSResumed)
				}
				if q.OffsetMismatch || res.Text != "tok0 tok1 tok2 tok3 tok4 " {
					t.Errorf("request %d: offset mismatch %v, text %q; want false, tok0..tok4", i, q.OffsetMismatch, res.Text)
				}
				if q.TxStreamEnd == nil || q.LocalPort == nil {
					t.Errorf("request %d: tx_stream_end %v, local_port %v; want both (the tap's join keys)", i, q.TxStreamEnd, q.LocalPort)
				}
				var end int64
				for j, ch := range res.Chunks {
					if runtime.GOOS == "linux" {
						checkQuality(t, res.Chunks, j)
					}
					if ch.RxStreamEnd == 0 || ch.RxStreamEnd < end || ch.RxAfterNs == 0 {
						t.Errorf("request %d event %d: rx_stream_end %v (previous %d), rx_after_ns %v; want set and not decreasing", i, j, ch.RxStreamEnd, end, ch.RxAfterNs)
						continue
					}
					end = ch.RxStreamEnd
					if ch.ServerSentNs != 0 && ch.RxKernelNs != 0 {
						if d := ch.RxKernelNs - ch.ServerSentNs; d < 0 || d > int64(time.Second) {
							t.Errorf("request %d event %d: kernel - server = %d ns; want in [0, 1s]", i, j, d)
						}
					}
				}
			}
		})
	}
}

// A new connection resumes the session of an earlier one (TLS 1.2 and 1.3).
func TestTLSResumption(t *testing.T) {
	for _, tv := range tlsVersions {
		t.Run(tv.name, func(t *testing.T) {
			srv, tcfg := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close") // every request on a new connection
				rawSSE(okSSE)(w, r)
			}), tv.v)
			c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, TLS: tcfg})
			defer c.Close()
			for i := range 3 {
				var res Result
				c.do(context.Background(), &Request{URL: srv.URL, Body: []byte(`{}`)}, &res)
				mustOK(t, fmt.Sprintf("request %d", i), &res, 3)
				if r := res.Req.TLSResumed; r == nil || *r != (i > 0) {
					t.Errorf("request %d: tls_resumed %v; want %v", i, r, i > 0)
				}
			}
		})
	}
}

// countConn is a server's side of a connection that counts the bytes written, so a test knows
// where each TLS record ends in the client's receive stream. With hold set, writes wait for
// flush, which sends them in one write (one segment on loopback).
type countConn struct {
	net.Conn
	mu   sync.Mutex
	n    int64
	ends []int64 // stream offset after each write (one record each once the handshake is done)
	hold bool
	held []byte
}

func (c *countConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	c.ends = append(c.ends, c.n)
	if c.hold {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *countConn) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Conn.Write(c.held)
	c.held, c.hold = nil, false
}

// TestTLSRecordsMapToStream: each event gets the stream offset and time of the record that
// completed it, whatever the layout: an event per record, two events in one record, an event
// split over two records, three records in one segment (the first two coalesced: upper_bound).
func TestTLSRecordsMapToStream(t *testing.T) {
	cert, pool := testCert(t, "127.0.0.1", time.Now().Add(time.Hour))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := func(s string) string { return `data: {"choices":[{"text":"` + s + `"}]}` + "\n\n" }
	type rec struct {
		ends  []string // events whose last byte this record holds
		data  string
		flush bool // send the records held so far (else hold this one for the next flush)
	}
	split := ev("d")
	layout := []rec{
		{nil, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n", true},
		{[]string{"a"}, ev("a"), true},
		{[]string{"b", "c"}, ev("b") + ev("c"), true},
		{nil, split[:10], true},
		{[]string{"d"}, split[10:], true},
		{[]string{"e"}, ev("e"), false},
		{[]string{"f"}, ev("f"), false},
		{[]string{"g"}, ev("g"), true},
		{[]string{"[DONE]"}, "data: [DONE]\n\n", true},
	}
	want := map[string]int64{} // event -> stream offset just past its record
	var serr error
	served := make(chan struct{})
	go func() {
		defer close(served)
		nc, err := l.Accept()
		if err != nil {
			serr = err
			return
		}
		cc := &countConn{Conn: nc}
		tc := tls.Server(cc, &tls.Config{Certificates: []tls.Certificate{cert}})
		defer tc.Close()
		if _, err := http.ReadRequest(bufio.NewReader(tc)); err != nil {
			serr = err
			return
		}
		for _, r := range layout {
			cc.mu.Lock()
			cc.hold = true
			cc.mu.Unlock()
			if _, err := tc.Write([]byte(r.data)); err != nil {
				serr = err
				return
			}
			for _, e := range r.ends {
				want[e] = cc.ends[len(cc.ends)-1]
			}
			if r.flush {
				cc.flush()
				time.Sleep(5 * time.Millisecond) // a record per read when the client keeps up
			}
		}
	}()
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, KeepText: true, TLS: &tls.Config{RootCAs: pool}})
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{URL: "https://" + l.Addr().String() + "/v1/completions", Body: []byte(`{}`)}, &res)
	<-served
	if serr != nil {
		t.Fatal(serr)
	}
	mustOK(t, "request", &res, 8)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "[DONE]"}
	for i, ch := range res.Chunks {
		name := names[i]
		if ch.RxStreamEnd == 0 || ch.RxStreamEnd != want[name] {
			t.Errorf("event %s: rx_stream_end %v; want %d (just past its record)", name, ch.RxStreamEnd, want[name])
		}
		if runtime.GOOS != "linux" {
			continue
		}
		if ch.RxKernelNs == 0 || ch.RxAfterNs == 0 || ch.RxAfterNs > ch.RxKernelNs {
			t.Errorf("event %s: kernel %v after %v; want both, after <= kernel", name, ch.RxKernelNs, ch.RxAfterNs)
			continue
		}
		// Records e and f came in one segment with g: their own times are lost.
		coalesced := name == "e" || name == "f"
		for _, later := range res.Chunks[i+1:] {
			if later.RxStreamEnd != ch.RxStreamEnd && later.RxKernelNs == ch.RxKernelNs {
				coalesced = true // the client read a later record together with this one
			}
		}
		if wantQ := map[bool]string{false: qualityExact, true: qualityUpperBound}[coalesced]; ch.Quality != wantQ {
			t.Errorf("event %s: quality %s; want %s", name, ch.Quality, wantQ)
		}
	}
	if res.Chunks[1].RxKernelNs != 0 && res.Chunks[2].RxKernelNs != 0 && res.Chunks[1].RxKernelNs != res.Chunks[2].RxKernelNs {
		t.Errorf("events b and c of one record: kernel times %d, %d; want the record's", res.Chunks[1].RxKernelNs, res.Chunks[2].RxKernelNs)
	}
}

// testCert returns a certificate for host expiring at notAfter from a fresh CA, and a pool
// holding that CA.
func testCert(t *testing.T, host string, notAfter time.Time) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	ca, err := hostile.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	cert, _, _, err := ca.Issue(notAfter, host)
	if err != nil {
		t.Fatal(err)
	}
	return cert, ca.Pool
}

// TestTLSHandshakeErrors: a handshake that fails is a connect error whose message says why and
// what to set; mutual TLS works with a client certificate and fails clearly without one.
func TestTLSHandshakeErrors(t *testing.T) {
	good, pool := testCert(t, "127.0.0.1", time.Now().Add(time.Hour))
	expired, expiredPool := testCert(t, "127.0.0.1", time.Now().Add(-time.Hour))
	other, otherPool := testCert(t, "other.example", time.Now().Add(time.Hour))
	_, wrongPool := testCert(t, "127.0.0.1", time.Now().Add(time.Hour))
	clientCert, clientPool := testCert(t, "wirebench client", time.Now().Add(time.Hour))
	mtls := &tls.Config{Certificates: []tls.Certificate{good}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}
	for _, tt := range []struct {
		name   string
		server *tls.Config
		client *tls.Config
		msg    string // "" = the request succeeds
	}{
		{"trusted", &tls.Config{Certificates: []tls.Certificate{good}}, &tls.Config{RootCAs: pool}, ""},
		{"wrong CA", &tls.Config{Certificates: []tls.Certificate{good}}, &tls.Config{RootCAs: wrongPool}, "not signed by a trusted CA (set target.tls.ca_file"},
		{"name mismatch", &tls.Config{Certificates: []tls.Certificate{other}}, &tls.Config{RootCAs: otherPool}, `not valid for "127.0.0.1" (set target.tls.server_name`},
		{"server name set", &tls.Config{Certificates: []tls.Certificate{other}}, &tls.Config{RootCAs: otherPool, ServerName: "other.example"}, ""},
		{"expired", &tls.Config{Certificates: []tls.Certificate{expired}}, &tls.Config{RootCAs: expiredPool}, "has expired or is not yet valid"},
		{"insecure skip verify", &tls.Config{Certificates: []tls.Certificate{expired}}, &tls.Config{InsecureSkipVerify: true}, ""},
		{"mutual TLS", mtls, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}, ""},
		{"mutual TLS without a certificate", mtls, &tls.Config{RootCAs: pool}, "wants a client certificate"},
		{"no common ALPN protocol", &tls.Config{Certificates: []tls.Certificate{good}, NextProtos: []string{"spdy/3"}}, &tls.Config{RootCAs: pool}, "speaks only HTTP/2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(rawSSE(okSSE))
			srv.TLS = tt.server
			srv.Config.ErrorLog = nil
			srv.StartTLS()
			defer srv.Close()
			c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, TLS: tt.client})
			defer c.Close()
			var res Result
			c.do(context.Background(), &Request{URL: srv.URL, Body: []byte(`{}`)}, &res)
			q := res.Req
			if tt.msg == "" {
				mustOK(t, tt.name, &res, 3)
				return
			}
			if q.ErrorKind != schemas.ErrConnect || !strings.Contains(q.ErrorMessage, tt.msg) {
				t.Errorf("%s: %s %q; want connect containing %q", tt.name, q.ErrorKind, q.ErrorMessage, tt.msg)
			}
		})
	}
}

// A server that answers an HTTP/1.1 request with HTTP/2 frames (an HTTP/2-only server that
// accepted the connection without ALPN) is refused with a message that says so.
func TestTLSHTTP2OnlyServer(t *testing.T) {
	cert, pool := testCert(t, "127.0.0.1", time.Now().Add(time.Hour))
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				buf := make([]byte, 1024)
				nc.Read(buf) // the client's bytes: not the HTTP/2 preface
				// SETTINGS (empty), then GOAWAY with PROTOCOL_ERROR
				nc.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
			}()
		}
	}()
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, TLS: &tls.Config{RootCAs: pool}})
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{URL: "https://" + l.Addr().String(), Body: []byte(`{}`)}, &res)
	if q := res.Req; q.ErrorKind != schemas.ErrMalformedStream || !strings.Contains(q.ErrorMessage, "HTTP/2") {
		t.Errorf("%s %q; want malformed_stream naming HTTP/2", q.ErrorKind, q.ErrorMessage)
	}
}

// The tlsSocket hands crypto/tls bytes of one record at a time, however small its reads, and
// notes each record's end in the receive stream; in drain mode it stops when the socket read
// is used up instead of reading the socket again.
func TestTLSSocketRecordAtATime(t *testing.T) {
	rec := func(n int) []byte { return append([]byte{23, 3, 3, byte(n >> 8), byte(n)}, make([]byte, n)...) }
	var stream []byte
	var ends []int64
	for _, n := range []int{0, 1, 300, 17} {
		stream = append(stream, rec(n)...)
		ends = append(ends, int64(len(stream)))
	}
	for _, size := range []int{1, 2, 5, 7, 64, 1 << 10} {
		c, peer, _ := tcpPair(t, true)
		if _, err := peer.Write(stream); err != nil {
			t.Fatal(err)
		}
		s := &tlsSocket{Conn: c.Conn, c: c, buf: make([]byte, tlsReadBuf)}
		var got []int64
		var off int64
		p := make([]byte, size)
		for off < int64(len(stream)) {
			n, err := s.Read(p)
			if err != nil {
				t.Fatalf("size %d: Read at %d: %v", size, off, err)
			}
			next := ends[len(got)]
			if off+int64(n) > next {
				t.Fatalf("size %d: Read at %d returned %d bytes, past the record ending at %d", size, off, n, next)
			}
			off += int64(n)
			if off == next {
				if s.last != next {
					t.Fatalf("size %d: record end %d noted as %d", size, next, s.last)
				}
				got = append(got, next)
			}
		}
		s.drain = true
		if _, err := s.Read(p); err != errDrained {
			t.Errorf("size %d: Read in drain mode with nothing buffered = %v; want errDrained", size, err)
		}
	}
}
