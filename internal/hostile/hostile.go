// Package hostile is a scripted HTTP/1.1 server for tests: a raw TCP listener (optionally
// TLS) that answers GET with a small 200 and each POST with canned bytes, good or broken in one
// of the ways Cases lists, so the client's wire path can be driven against what a broken
// server, proxy or load balancer really sends. The wire package's tests and the end-to-end
// tests of the binary share it.
package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Case is one broken response and what a client must record for it.
type Case struct {
	Name string
	// Kind and Message (a substring of the error message; empty: any), over plain http and TLS
	// alike.
	Kind, Message string
	// Chunks is how many events the client must keep (-1: any).
	Chunks int
	// Respond writes the response. Endless responses write until the client goes away.
	Respond func(w io.Writer)
	// Hold keeps the connection open after Respond, until the client closes it; Close closes
	// it at once. Otherwise the connection serves the next request (the response's framing is
	// complete, so a client may reuse it).
	Hold, Close bool
}

// endless bounds what an endless response writes when the client never goes away (a broken
// client must then fail its test, not the machine).
const endless = 256 << 20

const (
	sseHead     = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	contentEv   = "data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\n"
	finishEv    = "data: {\"choices\":[{\"index\":0,\"text\":\"ok\",\"finish_reason\":\"length\"}]}\n\n"
	doneEv      = "data: [DONE]\n\n"
	lastChunk   = "0\r\n\r\n"
	htmlPage    = "<html><body><h1>502 Bad Gateway</h1></body></html>\n"
	errorObject = "data: {\"error\":{\"message\":\"engine crashed\",\"type\":\"InternalServerError\",\"code\":500}}\n\n"
	wholeAnswer = `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"hello there","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`
)

// chunk frames s as one HTTP chunk.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// Good is a correct streamed answer: one event with a finish_reason, then [DONE].
func Good(w io.Writer) { io.WriteString(w, sseHead+chunk(finishEv)+chunk(doneEv)+lastChunk) }

// WholeJSON is a whole (non-streaming) completion: what a server or proxy that ignores
// stream: true answers.
func WholeJSON(w io.Writer) {
	fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(wholeAnswer), wholeAnswer)
}

// Events returns a response of n minimal events ("data: {}", an empty chunk each) and [DONE],
// written in 64 KiB chunks: a stream that is long in events but quick to send.
func Events(n int) func(io.Writer) {
	const ev = "data: {}\n\n"
	block := chunk(strings.Repeat(ev, (64<<10)/len(ev)))
	perBlock := (64 << 10) / len(ev)
	return func(w io.Writer) {
		if _, err := io.WriteString(w, sseHead); err != nil {
			return
		}
		for i := 0; i+perBlock <= n; i += perBlock {
			if _, err := io.WriteString(w, block); err != nil {
				return
			}
		}
		io.WriteString(w, chunk(strings.Repeat(ev, n%perBlock)+doneEv)+lastChunk)
	}
}

// repeat writes head, then p over and over until a write fails or endless bytes went out.
func repeat(w io.Writer, head string, p []byte) {
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	for n := 0; n < endless; n += len(p) {
		if _, err := w.Write(p); err != nil {
			return
		}
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.Bytes()
}

// Cases are the broken responses, each answered to one POST.
var Cases = []Case{
	{Name: "html page as a 200", Kind: "malformed_stream", Message: "<html>", Chunks: 1, Respond: func(w io.Writer) {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(htmlPage), htmlPage)
	}},
	{Name: "a whole JSON answer", Kind: "not_streamed", Message: "not text/event-stream", Chunks: 1, Respond: WholeJSON},
	{Name: "html page as an event stream", Kind: "malformed_stream", Message: "no SSE data event", Chunks: 0, Respond: func(w io.Writer) {
		io.WriteString(w, sseHead+chunk(htmlPage)+lastChunk)
	}},
	{Name: "stream without [DONE]", Kind: "incomplete_stream", Message: "without [DONE]", Chunks: 2, Respond: func(w io.Writer) {
		io.WriteString(w, sseHead+chunk(contentEv)+chunk(contentEv)+lastChunk)
	}},
	{Name: "cut inside the chunked framing", Kind: "reset", Message: "closed inside the response body", Chunks: 1, Close: true, Respond: func(w io.Writer) {
		io.WriteString(w, sseHead+chunk(contentEv)+"40\r\ndata: {\"cho")
	}},
	{Name: "bad chunk size", Kind: "malformed_stream", Message: "malformed HTTP chunked body", Chunks: 1, Close: true, Respond: func(w io.Writer) {
		io.WriteString(w, sseHead+chunk(contentEv)+"zz\r\n"+contentEv)
	}},
	{Name: "error object as an event", Kind: "server_error_event", Message: "engine crashed", Chunks: 2, Respond: func(w io.Writer) {
		io.WriteString(w, sseHead+chunk(errorObject)+chunk(doneEv)+lastChunk)
	}},
	{Name: "gzip-encoded stream", Kind: "content_encoding", Message: "gzip", Chunks: 0, Respond: func(w io.Writer) {
		z := gzipped(finishEv + doneEv)
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", len(z))
		w.Write(z)
	}},
	{Name: "endless SSE line", Kind: "too_large", Message: "line too long", Chunks: 0, Respond: func(w io.Writer) {
		repeat(w, sseHead+chunk("data: "), []byte(chunk(strings.Repeat("x", 64<<10))))
	}},
	{Name: "endless lines that are not events", Kind: "too_large", Message: "without an SSE data event", Chunks: 1, Respond: func(w io.Writer) {
		repeat(w, sseHead+chunk(contentEv), []byte(chunk(strings.Repeat("<p>filler</p>\n", 4<<10))))
	}},
	{Name: "a terabyte non-streaming body", Kind: "too_large", Message: "non-streaming body of 1099511627776 bytes declared", Chunks: 0, Respond: func(w io.Writer) {
		repeat(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1099511627776\r\n\r\n{\"choices\":[{\"text\":\"", bytes.Repeat([]byte("x"), 64<<10))
	}},
	{Name: "endless headers", Kind: "too_large", Message: "headers or trailers over 64 KiB", Chunks: 0, Respond: func(w io.Writer) {
		repeat(w, "HTTP/1.1 200 OK\r\n", []byte("X-Pad: "+strings.Repeat("x", 100)+"\r\n"))
	}},
	{Name: "headers that stop", Kind: "gap_timeout", Chunks: 0, Hold: true, Respond: func(w io.Writer) {
		io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
	}},
	{Name: "no answer", Kind: "ttft_timeout", Chunks: 0, Hold: true, Respond: func(io.Writer) {}},
	{Name: "closed without an answer", Kind: "reset", Chunks: 0, Close: true, Respond: func(io.Writer) {}},
	{Name: "not HTTP", Kind: "malformed_stream", Message: "malformed HTTP", Chunks: 0, Close: true, Respond: func(w io.Writer) {
		io.WriteString(w, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
	}},
}

// Served is one POST the server answered.
type Served struct {
	Port int    // the client's TCP port
	N    int    // the POST's number on its connection, from 0
	Case string // the case's name; "" for a good answer
	Auth string // the request's Authorization header
}

// Server is a running scripted server.
type Server struct {
	URL   string // base URL, http:// or https://
	ln    net.Listener
	cases []Case
	mu    sync.Mutex
	posts int
	after int // with StartAfter: POSTs answered well before every one gets cases[0]; -1 otherwise
	conns map[net.Conn]struct{}
	log   []Served
	wg    sync.WaitGroup
}

// Start listens on 127.0.0.1 (with TLS when cfg is not nil) and answers until Close. A POST to
// /case/NAME gets that case (/case/ a good answer); any other POST gets, in turn, a good answer and the next of cases
// (good, cases[0], good, cases[1], ...), so a run's first second always holds good answers.
func Start(cases []Case, cfg *tls.Config) (*Server, error) {
	return start(&Server{cases: cases, after: -1}, cfg)
}

// StartAfter starts a server that answers the first good POSTs well and every later one with
// case c: a server that breaks down (or starts to misbehave) mid-run.
func StartAfter(good int, c Case, cfg *tls.Config) (*Server, error) {
	return start(&Server{cases: []Case{c}, after: good}, cfg)
}

func start(s *Server, cfg *tls.Config) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.URL, s.ln, s.conns = "http://"+ln.Addr().String(), ln, map[net.Conn]struct{}{}
	if cfg != nil {
		s.ln = tls.NewListener(ln, cfg)
		s.URL = "https://" + ln.Addr().String()
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Log returns the POSTs answered so far.
func (s *Server) Log() []Served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Served(nil), s.log...)
}

// Close stops the server and closes every connection.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve answers the requests of one connection.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	port := 0
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		port = a.Port
	}
	br := bufio.NewReader(c)
	for n := 0; ; {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if req.Method != http.MethodPost {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
			continue
		}
		cs := s.pick(req.URL.Path, req.Header.Get("Authorization"), port, n)
		n++
		if cs == nil {
			Good(c)
			continue
		}
		cs.Respond(c)
		switch {
		case cs.Hold:
			c.SetReadDeadline(time.Now().Add(time.Minute))
			io.Copy(io.Discard, c) // until the client closes the connection
			return
		case cs.Close:
			return
		}
	}
}

// pick returns the case for a POST to path, nil for a good answer, and logs it.
func (s *Server) pick(path, auth string, port, n int) *Case {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs *Case
	if name, ok := strings.CutPrefix(path, "/case/"); ok {
		for i := range s.cases {
			if s.cases[i].Name == name {
				cs = &s.cases[i]
			}
		}
	} else {
		switch i := s.posts; {
		case s.after >= 0:
			if i >= s.after {
				cs = &s.cases[0]
			}
		case i%2 == 1 && i/2 < len(s.cases):
			cs = &s.cases[i/2]
		}
		s.posts++
	}
	name := ""
	if cs != nil {
		name = cs.Name
	}
	s.log = append(s.log, Served{Port: port, N: n, Case: name, Auth: auth})
	return cs
}
