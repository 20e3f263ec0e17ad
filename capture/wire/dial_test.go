package wire

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// gateListener accepts its first connection, then nothing more until closed: later connections
// stay in (or overflow) the kernel's accept queue.
type gateListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
	first  bool
	mu     sync.Mutex
}

func (g *gateListener) Accept() (net.Conn, error) {
	g.mu.Lock()
	first := !g.first
	g.first = true
	g.mu.Unlock()
	if first {
		return g.Listener.Accept()
	}
	<-g.closed
	return nil, net.ErrClosed
}

func (g *gateListener) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.Listener.Close()
}

// listenBacklog listens on 127.0.0.1 with the given accept-queue backlog.
func listenBacklog(t *testing.T, backlog int) net.Listener {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, backlog); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestDialNeverHoldsUpASend: request B arrives while A holds the only connection and the
// server's accept queue is full, so B's dial goes unanswered (its SYN dropped). When A's answer
// ends, B must take A's connection at once instead of waiting on its dial.
func TestDialNeverHoldsUpASend(t *testing.T) {
	ln := &gateListener{Listener: listenBacklog(t, 1), closed: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond)
		rawSSE(okSSE)(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	c := NewClient(ClientConfig{MaxConns: 16, Timestamps: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var a, b Result
	aDone, bDone := make(chan time.Time, 1), make(chan time.Time, 1)
	c.Send(ctx, &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &a, func(*Result) { aDone <- time.Now() })
	time.Sleep(50 * time.Millisecond)
	for range 3 { // fill the accept queue: later SYNs are dropped
		if conn, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond); err == nil {
			defer conn.Close()
		}
	}
	bStart := time.Now()
	c.Send(ctx, &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &b, func(*Result) { bDone <- time.Now() })
	aEnd, bEnd := <-aDone, <-bDone
	mustOK(t, "A", &a, 3)
	mustOK(t, "B", &b, 3)
	// B's own dial is never answered (its SYN is dropped, then retried after 1 s, 3 s, ...): B
	// can only finish by taking A's connection, 600 ms after A ends.
	if after := bEnd.Sub(aEnd); after < 0 || after > 3*time.Second {
		t.Errorf("B ended %v after A (B began %v before A ended); want it on A's connection right after A", after, aEnd.Sub(bStart))
	}
	if !b.Req.ConnReused || b.Req.ConnWaitNs == nil || *b.Req.ConnWaitNs < int64(200*time.Millisecond) {
		t.Errorf("B: reused %v, conn_wait %v; want a reused connection after a recorded wait", b.Req.ConnReused, b.Req.ConnWaitNs)
	}
}

// TestWaitForConnectionTimesOut: a request that gets no connection within its timeout (the only
// one busy, the server's accept queue full) fails with a timeout instead of waiting on.
func TestWaitForConnectionTimesOut(t *testing.T) {
	ln := &gateListener{Listener: listenBacklog(t, 1), closed: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		rawSSE(okSSE)(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	c := NewClient(ClientConfig{MaxConns: 16, Timestamps: true, Timeout: 300 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var a, b Result
	aDone, bDone := make(chan struct{}), make(chan struct{})
	c.Send(ctx, &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &a, func(*Result) { close(aDone) })
	time.Sleep(50 * time.Millisecond)
	for range 3 {
		if conn, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond); err == nil {
			defer conn.Close()
		}
	}
	t0 := time.Now()
	c.Send(ctx, &Request{URL: srv.URL + "/v1/completions", Body: []byte(`{}`)}, &b, func(*Result) { close(bDone) })
	<-bDone
	if took := time.Since(t0); b.Req.ErrorKind != schemas.ErrTimeout || took > 2*time.Second {
		t.Errorf("B: error kind %q (%s) after %v; want %q soon after its 300 ms timeout", b.Req.ErrorKind, b.Req.ErrorMessage, took, schemas.ErrTimeout)
	}
	<-aDone
}

// A dial whose SYNs go unanswered (the server's accept queue full) fails as connect after
// ConnectTimeout, not after the kernel's SYN retries (over two minutes).
func TestDialBoundedByConnectTimeout(t *testing.T) {
	ln := &gateListener{Listener: listenBacklog(t, 0), closed: make(chan struct{}), first: true} // accepts nothing
	defer ln.Close()
	for range 3 { // fill the accept queue: later SYNs are dropped
		if conn, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond); err == nil {
			defer conn.Close()
		}
	}
	const limit = 1500 * time.Millisecond
	c := NewClient(ClientConfig{MaxConns: 4, ConnectTimeout: limit})
	defer c.Close()
	res, doneAt := sendTimed(c, "http://"+ln.Addr().String()+"/v1/completions")
	if res.Req.ErrorKind != schemas.ErrConnect {
		t.Fatalf("error %q (%s); want %s", res.Req.ErrorKind, res.Req.ErrorMessage, schemas.ErrConnect)
	}
	if d := time.Duration(doneAt - res.Req.SendStartNs); d < limit || d > limit+time.Second {
		t.Errorf("dial failed %v after the send began; want soon after the %v connect timeout", d, limit)
	}
}

func TestSynRetries(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int
	}{
		{time.Second, 1},       // the first retransmission (at 1 s) comes too late: keep one anyway
		{2 * time.Second, 1},   // 1 s fits, 3 s does not
		{10 * time.Second, 3},  // 1, 3, 7 s
		{15 * time.Second, 3},  // 15 s is not before 15 s
		{time.Minute, 5},       // 1, 3, 7, 15, 31 s
		{1000 * time.Hour, 21}, // 2^22 - 1 s passes 1000 h
		{math.MaxInt64, 30},    // bounded, without overflow
	} {
		if got := synRetries(tt.d); got != tt.want {
			t.Errorf("synRetries(%v) = %d; want %d", tt.d, got, tt.want)
		}
	}
}

func TestGiveUp(t *testing.T) {
	for _, tt := range []struct {
		retries int
		want    time.Duration
	}{
		{15, 924600 * time.Millisecond}, // the kernel's default tcp_retries2: about 15 minutes
		{8, 102200 * time.Millisecond},  // a common tuning: 0.2 s × (2^9 - 1)
		{9, 204600 * time.Millisecond},  // the last doubling
		{10, 324600 * time.Millisecond}, // then 120 s each
	} {
		if got := giveUp(tt.retries); got != tt.want {
			t.Errorf("giveUp(%d) = %v; want %v", tt.retries, got, tt.want)
		}
	}
}
