package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/internal/race"
)

// event212 is a typical ~212-byte OpenAI chat chunk event.
const event212 = `data: {"id":"chatcmpl-7a1c9e0b5f2d4e8a","object":"chat.completion.chunk","created":1732870000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n"

// tcpPair returns a wrapped client connection (timestamps on) and its raw server peer.
func tcpPair(tb testing.TB, stamp bool) (*stampedConn, net.Conn, *net.TCPConn) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		s, _ := l.Accept()
		acc <- s
	}()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	peer := <-acc
	nc.SetReadDeadline(time.Now().Add(time.Minute)) // a broken test fails instead of hanging
	var st counters
	c := newConn(nc, stamp, true, &st)
	tb.Cleanup(func() { nc.Close(); peer.Close() })
	return c, peer, nc.(*net.TCPConn)
}

// readAll reads exactly len(p) bytes with r.
func readFull(tb testing.TB, r io.Reader, p []byte) {
	if _, err := io.ReadFull(r, p); err != nil {
		tb.Fatal(err)
	}
}

// TestReadAllocs: a timestamped read through the wrapper, framing tracker included, allocates
// nothing in steady state.
func TestReadAllocs(t *testing.T) {
	c, peer, _ := tcpPair(t, true)
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	peer.Write(head)
	buf := make([]byte, 4096)
	readFull(t, c, buf[:len(head)])
	chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", len(event212), event212))
	allocs := testing.AllocsPerRun(1000, func() {
		peer.Write(chunk)
		readFull(t, c, buf[:len(chunk)])
	})
	if allocs != 0 {
		t.Errorf("allocations per read = %v; want 0", allocs)
	}
	if c.stamping {
		if r, ok := c.lookup(1, c.fr.BodyOffset(), new(int64)); !ok || r.kernel == 0 {
			t.Errorf("last read: kernel time %d, found %v; want a kernel time", r.kernel, ok)
		}
	}
}

// BenchmarkRead measures one write+read of a 212-byte event over loopback through the wrapper
// (recvmsg with timestamps, framing tracker) and, for comparison, through *net.TCPConn.
func BenchmarkRead(b *testing.B) {
	for _, mode := range []string{"wire", "wire-nostamp", "tcpconn"} {
		b.Run(mode, func(b *testing.B) {
			c, peer, tc := tcpPair(b, mode == "wire")
			var r io.Reader = c
			if mode == "tcpconn" {
				r = tc
			}
			peer.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))
			buf := make([]byte, 4096)
			readFull(b, r, buf[:47])
			chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", len(event212), event212))
			b.ReportAllocs()
			for b.Loop() {
				peer.Write(chunk)
				readFull(b, r, buf[:len(chunk)])
			}
		})
	}
}

// decodeAll decodes every event of body and parses its payload; it returns the event count.
func decodeAll(d *decoder, ev *event, pl *payload, body []byte) int {
	d.Reset()
	n := 0
	for i := 0; i < len(body); i += 4096 {
		d.Feed(body[i:min(i+4096, len(body))])
		for d.Next(ev) {
			if !ev.Comment && string(ev.Data) != "[DONE]" {
				parsePayload(ev.Data, pl, false)
			}
			n++
		}
	}
	return n
}

// TestDecodeAllocs: decoding and parsing an event allocates nothing in steady state.
func TestDecodeAllocs(t *testing.T) {
	body := []byte(strings.Repeat(event212, 100))
	var d decoder
	var ev event
	var pl payload
	if n := decodeAll(&d, &ev, &pl, body); n != 100 || pl.Content != 6 {
		t.Fatalf("decoded %d events (content %d); want 100 (6)", n, pl.Content)
	}
	if a := testing.AllocsPerRun(100, func() { decodeAll(&d, &ev, &pl, body) }); a != 0 {
		t.Errorf("allocations per 100 events = %v; want 0", a)
	}
}

// BenchmarkDecodeEvent measures SSE decoding plus payload parsing per event.
func BenchmarkDecodeEvent(b *testing.B) {
	body := []byte(strings.Repeat(event212, 1000))
	var d decoder
	var ev event
	var pl payload
	b.ReportAllocs()
	for b.Loop() { // one op = 1000 events
		decodeAll(&d, &ev, &pl, body)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/event")
}

// rawServer answers every request on a connection with the same prebuilt chunked SSE response,
// one write per event (one segment each; over TLS one record each), so nearly all CPU goes to
// the client. With tcfg it serves TLS.
func rawServer(tb testing.TB, events int, tcfg *tls.Config) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	scheme := "http://"
	if tcfg != nil {
		l, scheme = tls.NewListener(l, tcfg), "https://"
	}
	chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", len(event212), event212))
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	done := []byte("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					conn.Write(head)
					for range events {
						conn.Write(chunk)
					}
					conn.Write(done)
				}
			}()
		}
	}()
	return scheme + l.Addr().String() + "/v1/chat/completions"
}

// BenchmarkClientEvents measures events per second through one client (do over a keep-alive
// connection, 200 events per response) with the server in the same process, under capture's
// default memory budget: a lower bound on one client core's capacity.
func BenchmarkClientEvents(b *testing.B) {
	const events = 200
	url := rawServer(b, events, nil)
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, MemoryBudget: 256 << 20})
	defer c.Close()
	var res Result
	req := &Request{URL: url, Body: []byte(`{"stream":true}`)}
	b.ReportAllocs()
	for b.Loop() {
		c.do(context.Background(), req, &res)
		if res.Req.ErrorKind != "" || len(res.Chunks) != events+1 {
			b.Fatalf("error %q (%s), %d chunks; want none, %d", res.Req.ErrorKind, res.Req.ErrorMessage, len(res.Chunks), events+1)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*events)/sec, "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

// BenchmarkClientRequests measures one request (do over a keep-alive connection, 16 events of
// 212 bytes, one segment and over TLS one record each) over plain HTTP and over TLS: the
// process's CPU time per request (cpu_us/req, user + system) with the server in the same
// process, so the TLS case also pays the server's encryption and its ratio to plain bounds the
// client's from above.
func BenchmarkClientRequests(b *testing.B) {
	const events = 16
	scfg, pem, err := hostile.SelfSigned()
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			url := rawServer(b, events, map[string]*tls.Config{"tls": scfg}[mode])
			c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, TLS: &tls.Config{RootCAs: roots}})
			defer c.Close()
			var res Result
			req := &Request{URL: url, Body: []byte(`{"stream":true}`)}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				c.do(context.Background(), req, &res)
				if res.Req.ErrorKind != "" || len(res.Chunks) != events+1 {
					b.Fatalf("error %q (%s), %d chunks; want none, %d", res.Req.ErrorKind, res.Req.ErrorMessage, len(res.Chunks), events+1)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu_us/req")
		})
	}
}

// TestTLSReadAllocs: a read of TLS plaintext through the stampedConn (record-at-a-time reader,
// crypto/tls, framing tracker) allocates one 24-byte object in steady state, and that in
// crypto/tls (readFromUntil's atLeastReader, once per record, as for any crypto/tls client);
// the rest of the path allocates nothing.
func TestTLSReadAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("crypto/tls's sync.Pools drop items at random under the race detector; runs in the plain go test")
	}
	c, peer, _ := tcpPair(t, true)
	scfg, pem, err := hostile.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	srv := tls.Server(peer, scfg)
	go srv.Handshake()
	if _, _, _, err := startTLS(context.Background(), c, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	srv.Write(head)
	buf := make([]byte, 16<<10)
	readFull(t, c, buf[:len(head)])
	chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", len(event212), event212))
	allocs := testing.AllocsPerRun(1000, func() {
		srv.Write(chunk)
		readFull(t, c, buf[:len(chunk)])
	})
	if allocs > 1 {
		t.Errorf("allocations per TLS read = %v; want at most crypto/tls's one", allocs)
	}
	if r, ok := c.lookup(1, c.fr.BodyOffset(), new(int64)); !ok || !r.record || (c.stamping && r.kernel == 0) {
		t.Errorf("last read: %+v, found %v; want a TLS record read with a kernel time", r, ok)
	}
}

// cpuTime returns the process's user + system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSimTrailer measures parsing the simulator's x-sim comment of a 64-token answer (its
// send times before and after each event's write): once per request against wirebench sim.
func BenchmarkSimTrailer(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"queue_ns":0,"prefill_ns":0,"decode_ns":0`)
	for _, key := range []string{"sent_ns", "sent_end_ns"} {
		fmt.Fprintf(&sb, `,%q:[`, key)
		for i := range 64 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprint(&sb, 1796340459251509024+int64(i)*5_000)
		}
		sb.WriteByte(']')
	}
	sb.WriteString(`,"model":"sim"}`)
	var c Client
	var res Result
	b.ReportAllocs()
	for b.Loop() {
		res.reset()
		res.st.sim = append(res.st.sim, sb.String()...)
		c.applySim(&res)
	}
	if len(res.st.srv) != 64 || len(res.st.srvEnd) != 64 || res.st.srv[63] != 1796340459251509024+63*5_000 {
		b.Fatalf("parsed %d and %d send times, last %d", len(res.st.srv), len(res.st.srvEnd), res.st.srv[len(res.st.srv)-1])
	}
}
