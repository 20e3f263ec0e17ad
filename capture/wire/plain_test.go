package wire

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

const okSSE = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"

// countingServer starts srv counting the connections it accepts.
func countingServer(t *testing.T, h http.Handler, configure func(*http.Server)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	var conns atomic.Int32
	srv.Config.ConnState = connCounter(&conns)
	if configure != nil {
		configure(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// connCounter is a ConnState hook that counts the connections a server accepts in n.
func connCounter(n *atomic.Int32) func(net.Conn, http.ConnState) {
	return func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
}

// countConns installs connCounter on hs and returns the count's reader.
func countConns(hs *http.Server) func() int32 {
	var n atomic.Int32
	hs.ConnState = connCounter(&n)
	return n.Load
}

func mustOK(t *testing.T, what string, res *Result, chunks int) {
	t.Helper()
	if res.Req.ErrorKind != "" || len(res.Chunks) != chunks {
		t.Fatalf("%s: error %q (%s), %d chunks; want none, %d", what, res.Req.ErrorKind, res.Req.ErrorMessage, len(res.Chunks), chunks)
	}
	// (SentNs is when the write that took the last byte began; a server that answers before
	// reading the whole request can answer before that.)
	if res.Req.SentNs < res.Req.SendStartNs || res.Req.DoneNs == nil {
		t.Errorf("%s: SendStartNs %d SentNs %d DoneNs %v; want SentNs >= SendStartNs and DoneNs set", what, res.Req.SendStartNs, res.Req.SentNs, res.Req.DoneNs)
	}
}

func TestSendWritesOnTheCallersGoroutine(t *testing.T) {
	srv, _ := countingServer(t, rawSSE(okSSE), nil)
	c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
	defer c.Close()
	if err := c.Warm(context.Background(), srv.URL, 1); err != nil {
		t.Fatal(err)
	}
	ep, err := c.endpointFor(srv.URL + "/v1/completions")
	if err != nil {
		t.Fatal(err)
	}
	pc := ep.pool.get() // the warm connection; hand it back for Send to take
	if pc == nil {
		t.Fatal("no idle connection after Warm")
	}
	ep.pool.put(pc)
	hold := make(chan struct{})
	done := make(chan struct{})
	var res Result
	// The reader ends the call in done, which waits: the call stays current on the connection.
	c.Send(context.Background(), &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &res, func(*Result) { <-hold; close(done) })
	cl := pc.cur.Load()
	if cl == nil {
		close(hold)
		t.Fatalf("Send did not use the idle warm connection")
	}
	if cl.wstate.Load() != written {
		t.Errorf("request not written when Send returned; want written on the caller's goroutine")
	}
	close(hold)
	<-done
	mustOK(t, "send", &res, 3)
	// One writev carries head and body, so the response cannot arrive before it began.
	if res.Req.HeadersNs == nil || *res.Req.HeadersNs < res.Req.SentNs {
		t.Errorf("HeadersNs %v before SentNs %d; want the response after the write began", res.Req.HeadersNs, res.Req.SentNs)
	}
	if !res.Req.ConnReused {
		t.Errorf("ConnReused = false on the warm connection")
	}
}

func TestPlainKeepAliveAndClose(t *testing.T) {
	t.Run("reuse", func(t *testing.T) {
		srv, conns := countingServer(t, rawSSE(okSSE), nil)
		c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
		defer c.Close()
		sendInTurn(t, c, srv.URL, 5)
		if n := conns.Load(); n != 1 {
			t.Errorf("5 sequential requests used %d connections; want 1", n)
		}
	})
	t.Run("connection close", func(t *testing.T) {
		srv, conns := closingServer(t)
		c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
		defer c.Close()
		for i, res := range sendInTurn(t, c, srv.URL, 3) {
			if res.Req.ConnReused {
				t.Errorf("request %d reused a connection the server closed", i)
			}
		}
		if n := conns.Load(); n != 3 {
			t.Errorf("3 requests answered with Connection: close used %d connections; want 3", n)
		}
	})
	t.Run("server idle timeout", func(t *testing.T) {
		srv, _ := countingServer(t, rawSSE(okSSE), func(s *http.Server) { s.IdleTimeout = 30 * time.Millisecond })
		c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
		defer c.Close()
		var res Result
		c.do(context.Background(), &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &res)
		mustOK(t, "first", &res, 3)
		time.Sleep(300 * time.Millisecond) // the server closes the idle connection; its reader notices
		c.do(context.Background(), &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &res)
		mustOK(t, "after the server's idle timeout", &res, 3)
		if res.Req.ConnReused {
			t.Errorf("ConnReused = true on a connection the server closed")
		}
	})
}

func TestPlainLargeBody(t *testing.T) {
	var got atomic.Int64
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Store(n)
		rawSSE(okSSE)(w, r)
	}), nil)
	c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
	defer c.Close()
	if err := c.Warm(context.Background(), srv.URL, 1); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"prompt":"` + strings.Repeat("x", 16<<20) + `"}`)
	var res Result
	c.do(context.Background(), &Request{URL: srv.URL + "/v1/completions", Body: body}, &res)
	mustOK(t, "16 MiB body", &res, 3) // more than a socket buffer: the rest is written off the caller
	if got.Load() != int64(len(body)) {
		t.Errorf("server read %d body bytes; want %d", got.Load(), len(body))
	}
}

func TestPlainBodyUntilClose(t *testing.T) {
	base := serveTCP(t, func(conn net.Conn) {
		defer conn.Close()
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		// No Content-Length, not chunked: the body ends when the connection closes.
		fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+okSSE)
	})
	c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
	defer c.Close()
	for i, res := range sendInTurn(t, c, base, 2) {
		if res.Req.ConnReused {
			t.Errorf("request %d: ConnReused = true after a body that ended with the connection", i)
		}
	}
}

func TestMinIdleTopUp(t *testing.T) {
	srv, conns := countingServer(t, rawSSE(okSSE), nil)
	c := NewClient(ClientConfig{MaxConns: 16, MinIdle: 4, Timestamps: true})
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &res)
	mustOK(t, "first", &res, 3)
	ep, _ := c.endpointFor(srv.URL + "/v1/completions")
	deadline := time.Now().Add(5 * time.Second)
	for ep.pool.idleCount() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := ep.pool.idleCount(); n < 4 {
		t.Fatalf("%d idle connections after 5 s; want MinIdle 4", n)
	}
	if n := conns.Load(); n < 4 || n > 5 {
		t.Errorf("server saw %d connections; want 4 or 5 (the first plus the top-up)", n)
	}
}

func TestPlainConnectionCap(t *testing.T) {
	t.Run("closed connections free their slot", func(t *testing.T) {
		srv, conns := closingServer(t)
		c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true})
		defer c.Close()
		sendInTurn(t, c, srv.URL, 3)
		if n := conns.Load(); n != 3 {
			t.Errorf("%d connections; want 3", n)
		}
	})
	t.Run("senders over the cap wait for a connection", func(t *testing.T) {
		srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(20 * time.Millisecond)
			rawSSE(okSSE)(w, r)
		}), nil)
		c := NewClient(ClientConfig{MaxConns: 2, Timestamps: true})
		defer c.Close()
		results := sendAtOnce(c, srv.URL, 8)
		for i := range results {
			mustOK(t, fmt.Sprint("request ", i), &results[i], 3)
		}
		if n := conns.Load(); n != 2 {
			t.Errorf("8 concurrent requests with MaxConns 2 used %d connections; want 2", n)
		}
	})
}

func TestPlainEarlyResponseStopsTheWrite(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	base := serveTCP(t, func(conn net.Conn) {
		defer conn.Close()
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil { // headers only; the body stays unread
			return
		}
		fmt.Fprint(conn, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\n\r\ntoo long")
		<-release // hold the connection open without reading
	})
	c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var res Result
	start := time.Now()
	c.do(ctx, &Request{URL: base + "/v1/completions", Body: make([]byte, 64<<20)}, &res)
	if res.Req.ErrorKind != schemas.ErrHTTPStatus || res.Req.Status != 413 || !strings.Contains(res.Req.ErrorMessage, "too long") {
		t.Errorf("error %q status %d message %q; want http_status 413 'too long'", res.Req.ErrorKind, res.Req.Status, res.Req.ErrorMessage)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("do took %v: the unfinished write was not stopped", d)
	}
}

func TestPlainPoolIsLIFO(t *testing.T) {
	p := &plainPool{}
	a, b := &plainConn{}, &plainConn{}
	p.put(a)
	p.put(b)
	if got := p.get(); got != b {
		t.Errorf("first get = %p; want the most recently used %p", got, b)
	}
	if got := p.get(); got != a {
		t.Errorf("second get = %p; want %p", got, a)
	}
	if got := p.get(); got != nil || p.idleCount() != 0 {
		t.Errorf("get on an empty pool = %p, %d idle; want nil, 0", got, p.idleCount())
	}
}

func TestPlainMalformedResponse(t *testing.T) {
	base := serveTCP(t, func(conn net.Conn) {
		defer conn.Close()
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		fmt.Fprint(conn, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
		time.Sleep(time.Second) // keep the connection open: the client must not wait for more
	})
	c := NewClient(ClientConfig{MaxConns: 4, Timestamps: true})
	defer c.Close()
	var res Result
	start := time.Now()
	c.do(context.Background(), &Request{URL: base + "/v1/completions", Body: []byte(`{}`)}, &res)
	if res.Req.ErrorKind != schemas.ErrMalformedStream || !strings.Contains(res.Req.ErrorMessage, "malformed HTTP") {
		t.Errorf("error %q (%s); want malformed_stream, malformed HTTP response", res.Req.ErrorKind, res.Req.ErrorMessage)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("do took %v; want the bad status line to end the request at once", d)
	}
}

// TestConnectionCounters checks Opened and TakeOpenPeak: three requests at once open three
// connections, all open at the peak; with the server closing each connection, sequential
// requests open one each and never have two open at once.
func TestConnectionCounters(t *testing.T) {
	slow, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		rawSSE(okSSE)(w, r)
	}), nil)
	c := NewClient(ClientConfig{MaxConns: 8, Timestamps: true})
	defer c.Close()
	sendAtOnce(c, slow.URL, 3)
	if o, p := c.Opened(), c.TakeOpenPeak(); o != 3 || p != 3 {
		t.Errorf("3 concurrent requests: Opened %d, TakeOpenPeak %d; want 3, 3", o, p)
	}
	if p := c.TakeOpenPeak(); p != 3 {
		t.Errorf("TakeOpenPeak again = %d; want the 3 still open (idle)", p)
	}

	closing, _ := closingServer(t)
	c2 := NewClient(ClientConfig{MaxConns: 8, Timestamps: true})
	defer c2.Close()
	sendInTurn(t, c2, closing.URL, 3)
	if o, p := c2.Opened(), c2.TakeOpenPeak(); o != 3 || p != 1 {
		t.Errorf("3 sequential requests, each connection closed by the server: Opened %d, TakeOpenPeak %d; want 3, 1", o, p)
	}
}

// TestWaitersTakeConnectionsInOrder: requests that find no idle connection wait in the order
// they were sent, and each connection that goes idle goes to the oldest: at the connection cap
// (one), five requests are written and answered in the order they were sent.
func TestWaitersTakeConnectionsInOrder(t *testing.T) {
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		rawSSE(okSSE)(w, r)
	}), nil)
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := make([]Result, 5)
	order := make(chan int, len(results))
	for i := range results {
		c.Send(ctx, &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &results[i], func(*Result) { order <- i })
	}
	for want := range results {
		if got := <-order; got != want {
			t.Errorf("request %d ended in place %d; want the order they were sent in", got, want)
		}
	}
	for i := range results {
		mustOK(t, fmt.Sprint("request ", i), &results[i], 3)
		if i > 0 && results[i].Req.SentNs < results[i-1].Req.SentNs {
			t.Errorf("request %d written at %d, before request %d (%d)", i, results[i].Req.SentNs, i-1, results[i-1].Req.SentNs)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections; want 1", n)
	}
}

// sendAtOnce sends n completions requests to base at once (10 s deadline) and returns their
// results when all are done.
func sendAtOnce(c *Client, base string, n int) []Result {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := make([]Result, n)
	done := make(chan struct{}, n)
	for i := range results {
		c.Send(ctx, &Request{URL: base + "/v1/completions", Body: []byte(`{}`)}, &results[i], func(*Result) { done <- struct{}{} })
	}
	for range results {
		<-done
	}
	return results
}

// sendInTurn sends n requests to base, each after the previous has ended (at most 10 s in
// all), checks that each got okSSE's three events, and returns them.
func sendInTurn(t *testing.T, c *Client, base string, n int) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := make([]Result, n)
	for i := range results {
		c.do(ctx, &Request{URL: base + "/v1/completions", Body: []byte(`{}`)}, &results[i])
		mustOK(t, fmt.Sprint("request ", i), &results[i], 3)
	}
	return results
}

// serveTCP listens on loopback until the test ends and hands each connection it accepts to
// handle, one at a time on one goroutine; it returns the base URL.
func serveTCP(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			handle(conn)
		}
	}()
	return "http://" + l.Addr().String()
}

// closingServer answers every request with okSSE and Connection: close, and counts its
// connections.
func closingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	return countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		rawSSE(okSSE)(w, r)
	}), nil)
}

// TestNewConnectionClosedBeforeFirstRequest: a new connection whose reader has already ended
// (the server closed it before any request, as a TLS 1.3 server refusing the client's
// certificate does) is handed to a waiting request: the request ends with a connect error that
// says so. It used to go back to the queue with no dial started for it, and wait forever.
func TestNewConnectionClosedBeforeFirstRequest(t *testing.T) {
	base := serveTCP(t, func(conn net.Conn) { conn.Close() })
	res := handEndedConn(t, base+"/v1/completions", func(*plainConn) {})
	if q := res.Req; q.ErrorKind != schemas.ErrConnect || !strings.Contains(q.ErrorMessage, "closed a new connection before its first request") {
		t.Errorf("%s %q; want connect, the server closed the new connection", q.ErrorKind, q.ErrorMessage)
	}
}

// TestReusedConnectionEndedIsReplaced: a kept-alive connection whose reader ended while it
// went back to the pool (here closed on the client's side; a server closing it as it falls idle
// is the same) is handed to a waiting request: the request gets a new connection. It used to
// wait with no dial started for it.
func TestReusedConnectionEndedIsReplaced(t *testing.T) {
	srv := httptest.NewServer(rawSSE(okSSE))
	defer srv.Close()
	res := handEndedConn(t, srv.URL+"/v1/completions", func(pc *plainConn) {
		pc.taken() // it has carried a request
		pc.c.Close()
	})
	mustOK(t, "after the ended connection", res, 3)
}

// handEndedConn dials a connection to url with a one-connection client, runs end on it, waits
// until its reader has ended, and hands it to a request waiting for a connection (plainPool.put,
// where a dial or a response would); it returns the request's result once it has ended.
func handEndedConn(t *testing.T, url string, end func(*plainConn)) *Result {
	t.Helper()
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true})
	t.Cleanup(c.Close)
	ep, err := c.endpointFor(url)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.dialWithin(context.Background(), ep.pool)
	if err != nil || pc == nil {
		t.Fatalf("dial: %v", err)
	}
	end(pc)
	for limit := time.Now().Add(10 * time.Second); !pc.dead.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(limit) {
			t.Fatal("the connection's reader did not end within 10s")
		}
	}
	res := new(Result)
	res.reset()
	res.st.init()
	done := make(chan struct{})
	cl := &call{ctx: context.Background(), req: &Request{URL: url, Body: []byte(`{}`)}, res: res, done: func(*Result) { close(done) }}
	ep.pool.imu.Lock()
	ep.pool.waiting.push(&waiter{ep: ep, cl: cl, t0: time.Now().UnixNano()})
	ep.pool.nwait.Add(1)
	ep.pool.imu.Unlock()
	go ep.pool.put(pc)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not ended within 10s: it waits for a dial nobody starts")
	}
	return res
}
