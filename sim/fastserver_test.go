package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// startNetHTTP serves cfg through net/http and Handler (the server Serve replaced), for
// comparison with the fast server.
func startNetHTTP(t testing.TB, cfg Config) string {
	t.Helper()
	ln := listenLocal(t)
	serve(t, cfg, ln, true)
	return ln.Addr().String()
}

// TestFastServerMatchesNetHTTP runs every golden exchange, and the endpoints served through
// the fallback, through the fast server and through net/http: the wire transcripts (status,
// header lines, de-chunked body; wall-clock values normalised) must be identical, and equal
// to the golden file where there is one.
func TestFastServerMatchesNetHTTP(t *testing.T) {
	type exchange struct {
		name   string // golden file, or "" for none
		cfg    func(*Config)
		method string
		path   string
		body   string
		header []string
	}
	var cases []exchange
	for _, c := range conformanceCases {
		cases = append(cases, exchange{name: c.name, cfg: c.cfg, method: "POST", path: apiPaths[c.api], body: c.body})
	}
	for _, c := range badRequestCases {
		cases = append(cases, exchange{name: c.name, method: "POST", path: c.path, body: c.body, header: c.header})
	}
	for _, f := range []string{Fault429, Fault500, Fault503, FaultStall, FaultDrop, FaultMalformed, FaultSlowHeaders} {
		cases = append(cases, exchange{name: "fault-" + f, method: "POST", path: "/v1/completions",
			body: `{"model":"sim","prompt":"a b c","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`, header: []string{FaultHeader, f}})
	}
	for _, c := range embedCases {
		cases = append(cases, exchange{name: c.name, method: "POST", path: "/v1/embeddings", body: c.body})
	}
	for _, c := range rankCases {
		cases = append(cases, exchange{name: c.name, method: "POST", path: c.path, body: c.body})
	}
	for _, c := range apiFaultCases {
		cases = append(cases, exchange{name: "fault-" + c.name, cfg: apiFaultConfig, method: "POST", path: apiPaths[c.api],
			body: apiFaultBodies[c.api], header: []string{FaultHeader, c.fault}})
	}
	cases = append(cases,
		exchange{method: "GET", path: "/health"},
		exchange{method: "GET", path: "/v1/models"},
		exchange{method: "GET", path: "/metrics"},
		exchange{method: "GET", path: "/nope"},           // 404 from the mux
		exchange{method: "GET", path: "/v1/completions"}, // 405 from the mux
		exchange{method: "POST", path: "/v1/completions?x=1", body: `{"model":"sim","prompt":"a","max_tokens":2,"stream":true}`}, // fallback route
		exchange{method: "HEAD", path: "/health"},
	)
	for _, tt := range cases {
		name := tt.name
		if name == "" {
			name = tt.method + " " + tt.path
		}
		t.Run(name, func(t *testing.T) {
			cfg := zeroConfig()
			cfg.Stall, cfg.SlowHeaders = 20*time.Millisecond, 20*time.Millisecond
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, fast := startServer(t, cfg)
			std := startNetHTTP(t, cfg)
			got := normalize(rawRequest(t, fast, tt.method, tt.path, tt.body, tt.header...))
			want := normalize(rawRequest(t, std, tt.method, tt.path, tt.body, tt.header...))
			if got != want {
				t.Errorf("fast server transcript differs from net/http's:\nfast:\n%s\nnet/http:\n%s", got, want)
			}
			if tt.name != "" && !*update {
				golden(t, tt.name, got)
			}
		})
	}
}

// rawRequest is rawPost with any method; HEAD responses have no body to read.
func rawRequest(t testing.TB, addr, method, path, body string, header ...string) wire {
	t.Helper()
	if method == "POST" {
		return rawPost(t, addr, path, body, header...)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n", method, path)
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	i := bytes.Index(all, []byte("\r\n\r\n"))
	if i < 0 {
		t.Fatalf("no header end in %q", all)
	}
	w := wire{head: string(all[:i+2]), complete: true}
	fmt.Sscanf(w.head, "HTTP/1.1 %d", &w.status)
	w.body = all[i+4:]
	if strings.Contains(w.head, "Transfer-Encoding: chunked") {
		w.body, w.complete = dechunk(t, w.body)
	}
	return w
}

// TestFastServerProtocol sends raw bytes over one connection and checks the responses: keep-
// alive, pipelining, chunked request bodies, 100-continue, HTTP/1.0, and refused requests.
func TestFastServerProtocol(t *testing.T) {
	const body = `{"model":"sim","prompt":"a b","max_tokens":2,"stream":true}`
	post := func(extra string) string {
		return fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: %d\r\n%s\r\n%s", len(body), extra, body)
	}
	chunkedBody := fmt.Sprintf("%x\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n", 10, body[:10], len(body)-10, body[10:])
	tests := []struct {
		name string
		in   string
		want []string // substrings, in order, of everything the server sends until it closes
		not  []string // substrings that must not appear
	}{
		{"keep-alive then close", post("") + post("Connection: close\r\n"),
			[]string{"HTTP/1.1 200 OK\r\n", "data: [DONE]", "0\r\n\r\n", "HTTP/1.1 200 OK\r\n", "Connection: close\r\n", "data: [DONE]"}, nil},
		{"pipelined with a GET", post("") + "GET /health HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n",
			[]string{"Transfer-Encoding: chunked", "data: [DONE]", "HTTP/1.1 200 OK\r\n", "Content-Length: 0\r\n"}, nil},
		{"chunked request body", "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunkedBody,
			[]string{"HTTP/1.1 200 OK\r\n", `"text":"quick "`, "data: [DONE]"}, nil},
		{"100-continue", post("Expect: 100-continue\r\nConnection: close\r\n"),
			[]string{"HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\n", "data: [DONE]"}, nil},
		{"HTTP/1.0", fmt.Sprintf("POST /v1/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s", len(body), body),
			[]string{"HTTP/1.0 200 OK\r\n", "\r\n\r\ndata: ", "data: [DONE]\n\n"}, []string{"chunked"}},
		{"leading blank line", "\r\n" + post("Connection: close\r\n"), []string{"HTTP/1.1 200 OK\r\n"}, nil},
		{"obs-fold", "GET /health HTTP/1.1\r\nHost: sim\r\nX-A: 1\r\n 2\r\n\r\n", []string{"HTTP/1.1 400 Bad Request\r\n", "obsolete line folding"}, []string{"200 OK"}},
		{"space before colon", "GET /health HTTP/1.1\r\nHost : sim\r\n\r\n", []string{"HTTP/1.1 400 Bad Request\r\n", "invalid header name"}, nil},
		{"CL and TE", "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", []string{"400 Bad Request: both Content-Length and Transfer-Encoding"}, nil},
		{"differing CLs", "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", []string{"400 Bad Request: differing"}, nil},
		{"bad CL", "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: -1\r\n\r\n", []string{"400 Bad Request: invalid Content-Length"}, nil},
		{"gzip TE", "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nTransfer-Encoding: gzip\r\n\r\n", []string{"HTTP/1.1 501 Not Implemented\r\n"}, nil},
		{"bad chunk", "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", []string{"HTTP/1.1 400 Bad Request\r\n", "malformed chunked body"}, nil},
		{"no Host", "GET /health HTTP/1.1\r\n\r\n", []string{"400 Bad Request: missing required Host header"}, nil},
		{"HTTP/2.0", "GET /health HTTP/2.0\r\nHost: sim\r\n\r\n", []string{"HTTP/1.1 505 HTTP Version Not Supported\r\n"}, nil},
		{"bad expectation", "GET /health HTTP/1.1\r\nHost: sim\r\nExpect: teapot\r\n\r\n", []string{"HTTP/1.1 417 Expectation Failed\r\n"}, nil},
		{"head too large", "GET /health HTTP/1.1\r\nHost: sim\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes) + "\r\n\r\n", []string{"HTTP/1.1 431 Request Header Fields Too Large\r\n"}, nil},
		{"body too large", fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: %d\r\n\r\n", maxBody+1),
			[]string{"HTTP/1.1 400 Bad Request\r\n", "Connection: close\r\n", "over the"}, nil},
		{"garbage", "\x00\x01\x02 hello\r\n\r\n", []string{"HTTP/1.1 400 Bad Request\r\n"}, nil},
	}
	_, addr := startServer(t, zeroConfig())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, tt.in); err != nil {
				t.Fatal(err)
			}
			out, err := io.ReadAll(c) // the server must close the connection in every case
			if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("read: %v (got %q)", err, out)
			}
			rest := string(out)
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("response lacks %q (in order) in:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(string(out), n) {
					t.Errorf("response holds %q:\n%s", n, out)
				}
			}
		})
	}
}

// TestFastServerKeepAliveClient: Go's HTTP client reuses one connection for many requests of
// every kind (the path of the benchmark and of wirebench's own client).
func TestFastServerKeepAliveClient(t *testing.T) {
	_, addr := startServer(t, zeroConfig())
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	conns := 0
	for i := range 30 {
		var req *http.Request
		switch i % 3 {
		case 0:
			req, _ = http.NewRequest("POST", "http://"+addr+"/v1/completions", strings.NewReader(`{"model":"sim","prompt":"a","max_tokens":3,"stream":true}`))
		case 1:
			req, _ = http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"a"}],"max_tokens":3}`))
		case 2:
			req, _ = http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		}
		req = req.WithContext(withConnCounter(req.Context(), &conns))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(b) == 0 {
			t.Fatalf("request %d: status %d, %d bytes, %v", i, resp.StatusCode, len(b), err)
		}
	}
	if conns != 1 {
		t.Errorf("30 requests opened %d connections; want 1 (keep-alive)", conns)
	}
}

// TestFastServerDetectsClientGone: a request whose client leaves while it waits for a free
// slot is dropped at once, so the next one is not held up behind it. (Unnoticed, it would be
// admitted and hold the slot for its 300 ms TTFT, until its first write failed.)
func TestFastServerDetectsClientGone(t *testing.T) {
	cfg := zeroConfig()
	cfg.TTFT, cfg.ITL, cfg.MaxNumSeqs = 300*time.Millisecond, 10*time.Millisecond, 1
	srv, addr := startServer(t, cfg)
	client := newClient()
	first := make(chan result, 1)
	go func() { first <- streamOnce(t, client, "http://"+addr, 10) }() // ≈ 390 ms
	time.Sleep(50 * time.Millisecond)
	// the second request queues behind the first, then its client leaves
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"sim","prompt":"x","max_tokens":10,"stream":true}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || line != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("queued request: status line %q, %v", line, err)
	}
	c.Close()
	third := streamOnce(t, client, "http://"+addr, 1)
	<-first
	// behind the first only, the third queues ≈ 330 ms; behind the abandoned one too, ≈ 640 ms
	if q := time.Duration(third.truth.QueueNs); q > 500*time.Millisecond {
		t.Errorf("third request queued %v; want < 500ms (the abandoned one must not run)", q)
	}
	if n := srv.m.success.Load(); n != 2 {
		t.Errorf("%d requests completed; want 2 (the abandoned one must not)", n)
	}
}

// TestFastServerShutdown: on cancel, an in-flight stream finishes within the grace and new
// connections are refused; past the grace, a stream is cut and Serve returns.
func TestFastServerShutdown(t *testing.T) {
	tests := []struct {
		name     string
		tokens   int
		grace    time.Duration
		complete bool
	}{
		{"finishes within grace", 20, 3 * time.Second, true},  // ≈ 200 ms of stream
		{"cut at grace", 1000, 200 * time.Millisecond, false}, // ≈ 10 s of stream
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := zeroConfig()
			cfg.TTFT, cfg.ITL, cfg.ShutdownGrace = 10*time.Millisecond, 10*time.Millisecond, tt.grace
			srv, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, ln) }()
			idle, err := net.Dial("tcp", ln.Addr().String()) // an idle keep-alive connection
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			got := make(chan wire, 1)
			go func() {
				got <- rawPost(t, ln.Addr().String(), "/v1/completions", fmt.Sprintf(`{"model":"sim","prompt":"a","max_tokens":%d,"stream":true}`, tt.tokens))
			}()
			time.Sleep(50 * time.Millisecond)
			start := time.Now()
			cancel()
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve = %v; want nil", err)
				}
			case <-time.After(tt.grace + 5*time.Second):
				t.Fatal("Serve did not return")
			}
			if el := time.Since(start); !tt.complete && el < tt.grace {
				t.Errorf("Serve returned after %v; want it to wait the %v grace", el, tt.grace)
			}
			w := <-got
			if w.status != 200 || w.complete != tt.complete {
				t.Errorf("in-flight stream: status %d complete %v; want 200, %v", w.status, w.complete, tt.complete)
			}
			idle.SetDeadline(time.Now().Add(5 * time.Second))
			if n, err := idle.Read(make([]byte, 1)); err == nil {
				t.Errorf("idle connection read %d bytes after shutdown; want it closed", n)
			}
			if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
				c.Close()
				t.Error("a new connection was accepted after shutdown")
			}
		})
	}
}

// FuzzParseRequest feeds arbitrary bytes to the request reader: it must never panic or hang,
// and whatever it accepts must have unambiguous framing.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: 2\r\n\r\n{}"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.0\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\nConnection: close, keep-alive\r\nExpect: 100-continue\r\nx-sim-fault: drop\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16) // tiny: lines span buffer refills
		var head, body []byte
		for range 64 {
			var err error
			head, err = readHead(br, head, 1024)
			if err != nil {
				return
			}
			if len(head) > 1024 {
				t.Fatalf("readHead returned %d bytes; limit 1024", len(head))
			}
			var h reqHead
			if err := parseHead(head, &h); err != nil {
				var pe *protoError
				if !errors.As(err, &pe) || pe.code < 400 {
					t.Fatalf("parseHead error %v is not a 4xx/5xx protoError", err)
				}
				return
			}
			if h.chunked && h.contentLength >= 0 {
				t.Fatalf("accepted both chunked and Content-Length %d", h.contentLength)
			}
			if !isToken(h.method) || len(h.target) == 0 || bytes.ContainsAny(h.target, " \r\n") {
				t.Fatalf("accepted method %q target %q", h.method, h.target)
			}
			body, err = readReqBody(br, &h, body)
			if err != nil {
				return
			}
			if h.contentLength >= 0 && int64(len(body)) != h.contentLength {
				t.Fatalf("body of %d bytes; Content-Length %d", len(body), h.contentLength)
			}
		}
	})
}

// withConnCounter counts the new (not reused) connections the requests of ctx get.
func withConnCounter(ctx context.Context, n *int) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			*n++
		}
	}})
}
