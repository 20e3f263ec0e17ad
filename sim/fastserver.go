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
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The fast server: Serve's own HTTP/1.1 loop. net/http costs about 45 µs of CPU per request
// on a 2-core machine (its background-read goroutine, per-request allocations, two writes),
// the whole budget of the simulator, so the generation endpoints are served here directly:
// one goroutine per connection, pooled buffers, a strict minimal parser (httpparse.go), and
// every SSE event (with CoalesceTail: every batch of events) written as one chunk with one
// write system call, framed in place in front of the rendered events. Other requests (GET /metrics, /v1/models, /health,
// HTTP/1.0, unusual targets) go through the same http.Handler as Handler's, via a small
// ResponseWriter (respWriter) that frames responses as net/http does.

const (
	// headerTimeout bounds the time from a request's first byte to the end of its head
	// (net/http's ReadHeaderTimeout, as before).
	headerTimeout = 30 * time.Second
	// reserve is the room kept in front of the SSE events of a write for the response head
	// and the chunk-size line (written in place: the events are not copied).
	reserve = 512
	// keepBuf: buffers that grew beyond this are not kept for the next request.
	keepBuf = 256 << 10
	// maxPostDrain: unread request bytes the fallback drains to keep a connection alive.
	maxPostDrain = 256 << 10
)

// connection states
const (
	stateActive int32 = iota
	stateIdle
	stateClosing
)

// fastServer is one Serve call: its connections and its shutdown state.
type fastServer struct {
	s        *Server
	mu       sync.Mutex
	conns    map[*conn]struct{}
	shutdown atomic.Bool
	quit     chan struct{} // closed at shutdown: ends a paced accept loop's wait
	wg       sync.WaitGroup
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// Serve serves on ln until ctx ends, then stops accepting, lets in-flight streams finish for
// up to ShutdownGrace, closes the rest and returns once every handler has returned. It does
// not stop the engine: Close does.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	fs := &fastServer{s: s, conns: map[*conn]struct{}{}, quit: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- fs.accept(ln) }()
	select {
	case err := <-errc:
		fs.closeAll()
		fs.wg.Wait()
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	fs.shutdown.Store(true)
	close(fs.quit)
	ln.Close()
	<-errc
	fs.closeIdle()
	done := make(chan struct{})
	go func() { fs.wg.Wait(); close(done) }()
	grace := time.NewTimer(s.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		s.log.Warn("shutdown grace over: closing in-flight streams", "grace", s.cfg.ShutdownGrace)
		s.abortOnce.Do(func() { close(s.abort) })
		fs.closeAll()
		<-done
	}
	s.active.Wait()
	return nil
}

// accept accepts connections until ln fails; nil once ln was closed by shutdown. With
// AcceptPace it accepts at most one connection every AcceptPace; the rest wait in the
// listen socket's accept queue (ListenBacklog), as behind a slow accept loop.
func (fs *fastServer) accept(ln net.Listener) error {
	var backoff time.Duration
	pace := fs.s.cfg.AcceptPace
	var next time.Time // paced: the earliest time of the next accept
	for {
		if pace > 0 && !fs.waitUntil(next) {
			return nil
		}
		nc, err := ln.Accept()
		if pace > 0 {
			next = time.Now().Add(pace)
		}
		if err != nil {
			if fs.shutdown.Load() {
				return nil
			}
			if isTimeout(err) || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				fs.s.log.Debug("accept", "err", err, "retry_in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		fs.s.m.accepted.Add(1)
		c := fs.newConn(nc)
		fs.mu.Lock()
		if fs.shutdown.Load() {
			fs.mu.Unlock()
			nc.Close()
			continue
		}
		fs.conns[c] = struct{}{}
		fs.wg.Add(1)
		fs.mu.Unlock()
		go c.serve()
	}
}

// waitUntil waits until t; false when shutdown came first. The last stretch of a wait (up to
// 2 ms) is slept with preciseSleep, since a Go timer may fire up to 1 ms late.
func (fs *fastServer) waitUntil(t time.Time) bool {
	d := time.Until(t)
	if d > time.Duration(preciseWindow) {
		tm := time.NewTimer(d - time.Duration(preciseWindow)/2)
		select {
		case <-tm.C:
		case <-fs.quit:
			tm.Stop()
			return false
		}
		d = time.Until(t)
	}
	if d > 0 {
		preciseSleep(d)
	}
	return !fs.shutdown.Load()
}

// isTemporary reports a resource shortage worth retrying (EMFILE and the like), as net/http
// does.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// closeIdle closes the connections waiting for a request.
func (fs *fastServer) closeIdle() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for c := range fs.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosing) {
			c.nc.Close()
		}
	}
}

// closeAll closes every connection, in flight or not.
func (fs *fastServer) closeAll() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for c := range fs.conns {
		c.state.Store(stateClosing)
		c.nc.Close()
	}
}

// conn is one client connection. Its goroutine reads a request, answers it and loops; it is
// the peer of the generation requests it serves.
type conn struct {
	fs    *fastServer
	s     *Server
	nc    net.Conn
	state atomic.Int32

	cr   connReader
	br   *bufio.Reader
	head []byte
	h    reqHead
	body []byte

	out    []byte  // SSE writes: reserve bytes of room, then the events
	stamps []int64 // the current stream's stamps: before the writes of its deltas, then after
	rd     render
	rw     respWriter

	hdr        []byte // the pending SSE response head (startStream without flush)
	date       [29]byte
	dateSec    int64
	closeNow   bool // close after this response
	streamDone bool // the last SSE stream was written completely

	// the watch: a background read that notices a client leaving during a long wait
	watching  bool
	watchDone chan struct{}
	peerGone  chan struct{}
	watchByte [1]byte
	watchN    int
	watchErr  error
}

// connReader reads the connection, first returning a byte the watch read ahead.
type connReader struct {
	nc      net.Conn
	pending bool
	b       byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.pending && len(p) > 0 {
		p[0], r.pending = r.b, false
		return 1, nil
	}
	return r.nc.Read(p)
}

func (fs *fastServer) newConn(nc net.Conn) *conn {
	c := &conn{fs: fs, s: fs.s, nc: nc}
	c.cr.nc = nc
	c.rw.c = c
	c.rw.h = http.Header{}
	c.state.Store(stateIdle)
	return c
}

func (c *conn) serve() {
	c.br = readerPool.Get().(*bufio.Reader)
	c.br.Reset(&c.cr)
	defer func() {
		if err := recover(); err != nil && err != http.ErrAbortHandler {
			c.s.log.Error("panic serving a request", "remote", c.nc.RemoteAddr().String(), "panic", err)
		}
		c.stopWatch()
		c.nc.Close()
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.fs.mu.Lock()
		delete(c.fs.conns, c)
		c.fs.mu.Unlock()
		c.fs.wg.Done()
	}()
	for {
		c.state.Store(stateIdle)
		if c.fs.shutdown.Load() {
			return
		}
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return // closed by shutdown
		}
		if !c.serveOne() {
			return
		}
	}
}

// serveOne reads and answers one request; false: close the connection.
func (c *conn) serveOne() bool {
	c.nc.SetReadDeadline(time.Now().Add(headerTimeout))
	var err error
	c.head, err = readHead(c.br, c.head[:0], maxHeaderBytes)
	if err == nil {
		err = parseHead(c.head, &c.h)
	}
	if err != nil {
		var pe *protoError
		if errors.As(err, &pe) {
			c.protoError(pe)
		}
		return false
	}
	if c.h.expect100 && (c.h.contentLength > 0 || c.h.chunked) { // as net/http: even when the body came along
		if _, err := io.WriteString(c.nc, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	var bodyErr error
	c.body, bodyErr = readReqBody(c.br, &c.h, c.body[:0])
	c.nc.SetReadDeadline(time.Time{})
	c.closeNow = c.h.close || c.fs.shutdown.Load()
	c.rw.reset(c.h.minor, bytes.Equal(c.h.method, []byte("HEAD")))
	if bodyErr != nil {
		var pe *protoError
		switch {
		case errors.As(bodyErr, &pe):
			c.protoError(pe)
		case c.h.contentLength > maxBody:
			c.closeNow = true
			a, _ := apiOf(c.h.target) // its error format (OpenAI's for other targets)
			badRequest(&c.rw, a, "read request body: %v", bodyErr)
			c.rw.finish()
		}
		return false
	}
	a, ok := apiOf(c.h.target)
	if !ok || c.h.minor != 1 || string(c.h.method) != "POST" {
		return c.fallback()
	}
	c.s.active.Add(1)
	defer c.s.active.Done()
	var j job
	if c.s.parseJob(&c.rw, c.body, nil, unsafeString(c.h.fault), a, &j) {
		c.s.runJob(&c.rw, c, &j, &c.rd)
	}
	c.stopWatch()
	if len(c.hdr) > 0 {
		return false // the stream ended before its first write: the client left
	}
	if c.rw.used {
		if c.rw.finish() != nil {
			return false
		}
	} else if !c.streamDone {
		return false // the stream was cut short (client gone, fault, shutdown)
	}
	c.trim()
	return !c.closeNow
}

// streamed reports whether the last response was a complete SSE stream (its last write
// done); an interrupted stream leaves the connection unusable.
func (c *conn) streamed() bool { return c.streamDone }

// trim drops buffers that grew too large for keeping.
func (c *conn) trim() {
	if cap(c.out) > keepBuf {
		c.out = nil
	}
	if cap(c.body) > keepBuf {
		c.body = nil
	}
	if cap(c.rw.out) > keepBuf {
		c.rw.out = nil
	}
}

// protoError answers a request that cannot be parsed, as net/http does, and the connection
// closes.
func (c *conn) protoError(pe *protoError) {
	text := strconv.Itoa(pe.code) + " " + http.StatusText(pe.code)
	if pe.msg != "" {
		text += ": " + pe.msg
	}
	io.WriteString(c.nc, "HTTP/1.1 "+strconv.Itoa(pe.code)+" "+http.StatusText(pe.code)+
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+text)
}

// fallback serves any other request through the http.Handler, with respWriter.
func (c *conn) fallback() bool {
	target := string(c.h.target)
	u, err := url.ParseRequestURI(target)
	if err != nil {
		c.protoError(badProto("invalid request target %q", target))
		return false
	}
	hdr := http.Header{}
	for rest := c.h.fields; len(rest) > 0; {
		var line []byte
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		hdr.Add(string(line[:i]), string(trimOWS(line[i+1:])))
	}
	r := &http.Request{
		Method:        string(c.h.method),
		URL:           u,
		Proto:         "HTTP/1." + strconv.Itoa(c.h.minor),
		ProtoMajor:    1,
		ProtoMinor:    c.h.minor,
		Header:        hdr,
		Body:          io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)),
		Host:          hdr.Get("Host"),
		RemoteAddr:    c.nc.RemoteAddr().String(),
		RequestURI:    target,
		Close:         c.closeNow,
	}
	if u.Host != "" {
		r.Host = u.Host
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.s.Handler().ServeHTTP(&c.rw, r.WithContext(ctx))
	if err := c.rw.finish(); err != nil {
		return false
	}
	c.trim()
	return !c.closeNow
}

// dateHeader returns the Date value for now (cached for the second).
func (c *conn) dateHeader() []byte {
	now := time.Now()
	if sec := now.Unix(); sec != c.dateSec {
		c.dateSec = sec
		now.UTC().AppendFormat(c.date[:0], http.TimeFormat)
	}
	return c.date[:]
}

// peer: the fast server's side of a generation request.

func (c *conn) gone() <-chan struct{} { return nil }

// wait blocks until q.wake fires. A wait that blocks starts the watch when the model has
// latency (with none the stream ends in microseconds and a leaving client is noticed by the
// next write), so a client that leaves while its request queues or waits is noticed.
func (c *conn) wait(q *seq) bool {
	select {
	case <-q.wake:
		return true
	case <-c.s.abort:
		return false
	default:
	}
	if c.s.eagerHeaders {
		c.startWatch()
	}
	select {
	case <-q.wake:
		return true
	case <-c.peerGone: // nil without a watch: never
	case <-c.s.abort:
	}
	return false
}

func (c *conn) sleep(d time.Duration) bool {
	c.startWatch()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.peerGone:
	case <-c.s.abort:
	}
	return false
}

// startWatch starts a background read of the connection: it returns when the client closes
// it (EOF or error: peerGone is closed), sends a byte of its next request (kept for it), or
// stopWatch interrupts it.
func (c *conn) startWatch() {
	if c.watching {
		return
	}
	c.watching = true
	c.watchDone = make(chan struct{})
	c.peerGone = make(chan struct{})
	done, gone := c.watchDone, c.peerGone
	go func() {
		n, err := c.nc.Read(c.watchByte[:])
		c.watchN, c.watchErr = n, err
		if n == 0 && err != nil && !isTimeout(err) {
			close(gone)
		}
		close(done)
	}()
}

// stopWatch ends the background read; a byte it read goes to the next request, an error
// closes the connection after this response.
func (c *conn) stopWatch() {
	if !c.watching {
		return
	}
	c.watching = false
	c.nc.SetReadDeadline(aLongTimeAgo)
	<-c.watchDone
	c.nc.SetReadDeadline(time.Time{})
	if c.watchN == 1 {
		c.cr.pending, c.cr.b = true, c.watchByte[0]
	} else if c.watchErr != nil && !isTimeout(c.watchErr) {
		c.closeNow = true
	}
	c.peerGone = nil
}

var aLongTimeAgo = time.Unix(1, 0)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// startStream prepares the SSE response head: Cache-Control and Content-Type (the handler's
// headers, sorted, as net/http writes them), then Date, Connection and Transfer-Encoding.
func (c *conn) startStream(flush bool) {
	c.streamDone = false
	h := append(c.hdr[:0], "HTTP/1.1 200 OK\r\nCache-Control: no-cache\r\nContent-Type: text/event-stream; charset=utf-8\r\nDate: "...)
	h = append(h, c.dateHeader()...)
	if c.closeNow || c.fs.shutdown.Load() {
		c.closeNow = true
		h = append(h, "\r\nConnection: close"...)
	}
	h = append(h, "\r\nTransfer-Encoding: chunked\r\n\r\n"...)
	c.hdr = h
	if flush {
		if _, err := c.nc.Write(h); err != nil {
			c.closeNow = true
		}
		c.hdr = c.hdr[:0]
	}
}

func (c *conn) streamBuf() []byte {
	if cap(c.out) < reserve+4096 {
		c.out = make([]byte, reserve, 16<<10)
	}
	return c.out[:reserve]
}

// streamWrite frames b[reserve:] as one HTTP chunk (plus the final zero chunk when last),
// puts a pending response head in front, and writes it all in one system call.
func (c *conn) streamWrite(b []byte, last bool) error {
	body := len(b) - reserve
	b = append(b, "\r\n"...)
	if last {
		b = append(b, "0\r\n\r\n"...)
	}
	start := reserve - 2
	b[start], b[start+1] = '\r', '\n'
	for n := body; ; n >>= 4 {
		start--
		b[start] = "0123456789abcdef"[n&0xf]
		if n < 16 {
			break
		}
	}
	if len(c.hdr) > 0 {
		start -= len(c.hdr)
		copy(b[start:], c.hdr)
		c.hdr = c.hdr[:0]
	}
	c.out = b[:0]
	if _, err := c.nc.Write(b[start:]); err != nil {
		return err
	}
	if last {
		c.streamDone = true
	}
	return nil
}

func (c *conn) stampBufs(n int) (sent, end []int64) {
	if cap(c.stamps) < 2*n {
		c.stamps = make([]int64, 2*n)
	}
	c.stamps = c.stamps[:2*n]
	clear(c.stamps)
	return c.stamps[:n:n], c.stamps[n:]
}

// respWriter is the http.ResponseWriter of the fast server's other responses. Like net/http,
// it holds back the first 2 KiB of the body: a handler that finishes within them gets a
// Content-Length, one that flushes or writes more gets chunked encoding (HTTP/1.1) or a closed
// connection (HTTP/1.0). The head is written in net/http's order: the handler's headers
// sorted, then Date, Content-Length, Content-Type, Connection, Transfer-Encoding.
type respWriter struct {
	c        *conn
	h        http.Header
	minor    int
	isHead   bool
	used     bool // WriteHeader, Write or Flush was called
	status   int
	headSent bool
	chunking bool
	noBody   bool   // HEAD, 1xx, 204, 304
	body     []byte // held back until the head is sent
	out      []byte // bytes to write
	keys     []string
}

const bufferBeforeChunking = 2048

func (w *respWriter) reset(minor int, isHead bool) {
	clear(w.h)
	w.minor, w.isHead = minor, isHead
	w.used, w.status, w.headSent, w.chunking, w.noBody = false, 0, false, false, false
	w.body, w.out = w.body[:0], w.out[:0]
}

func (w *respWriter) Header() http.Header { return w.h }

func (w *respWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.used = true
	w.status = code
	w.noBody = w.isHead || code == http.StatusNoContent || code == http.StatusNotModified || (code >= 100 && code < 200)
}

func (w *respWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.noBody && w.headSent:
	case !w.headSent && len(w.body)+len(p) <= bufferBeforeChunking, w.noBody:
		w.body = append(w.body, p...) // for the Content-Length of a HEAD response too
	default:
		if !w.headSent {
			w.sendHead(-1)
		}
		w.out = w.appendFrame(w.out, p)
		if len(w.out) >= 32<<10 {
			return len(p), w.flushOut()
		}
	}
	return len(p), nil
}

// appendFrame appends p to b, as one chunk when chunking.
func (w *respWriter) appendFrame(b, p []byte) []byte {
	if !w.chunking {
		return append(b, p...)
	}
	if len(p) == 0 {
		return b
	}
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// sendHead puts the head and the held-back body into out; clen >= 0 is the whole body's
// length (the handler is done).
func (w *respWriter) sendHead(clen int64) {
	w.out = w.appendHead(w.out, clen)
	if !w.noBody {
		w.out = w.appendFrame(w.out, w.body)
	}
	w.body = w.body[:0]
}

// Flush sends the head and everything written so far.
func (w *respWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(-1)
	}
	w.flushOut()
}

func (w *respWriter) flushOut() error {
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.c.nc.Write(w.out)
	w.out = w.out[:0]
	if err != nil {
		w.c.closeNow = true
	}
	return err
}

// finish completes the response after the handler returned.
func (w *respWriter) finish() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		clen := int64(len(w.body))
		if w.isHead && clen == 0 {
			clen = -1 // a HEAD handler that wrote nothing: the length is unknown
		}
		w.sendHead(clen)
	}
	if w.chunking {
		w.out = append(w.out, "0\r\n\r\n"...)
	}
	return w.flushOut()
}

// appendHead appends the status line and the headers and marks the head sent.
func (w *respWriter) appendHead(b []byte, clen int64) []byte {
	w.headSent = true
	h := w.h
	te := h.Get("Transfer-Encoding")
	hasCL := h.Get("Content-Length") != ""
	if w.minor == 0 || w.c.fs.shutdown.Load() || hasToken([]byte(h.Get("Connection")), "close") {
		w.c.closeNow = true
	}
	var setCL, setCT, setTE, setConn string
	skipCL := false
	bodyless := w.status == http.StatusNoContent || w.status == http.StatusNotModified || (w.status >= 100 && w.status < 200)
	switch {
	case bodyless:
		skipCL = true
	case w.isHead:
		if clen > 0 && !hasCL {
			setCL = strconv.FormatInt(clen, 10)
		}
	case hasCL:
	case clen >= 0 && te == "":
		setCL = strconv.FormatInt(clen, 10)
	case w.minor == 1 && te != "identity":
		w.chunking, setTE, skipCL = true, "chunked", true
	default:
		w.c.closeNow = true
	}
	if _, ok := h["Content-Type"]; !ok && !w.noBody && te == "" && len(w.body) > 0 {
		setCT = http.DetectContentType(w.body)
	}
	if w.c.closeNow && w.minor == 1 {
		setConn = "close"
	}
	b = append(b, "HTTP/1."...)
	b = strconv.AppendInt(b, int64(w.minor), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	if text := http.StatusText(w.status); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(w.status), 10)
	}
	b = append(b, "\r\n"...)
	w.keys = w.keys[:0]
	for k := range h {
		switch {
		case k == "Transfer-Encoding", k == "Content-Length" && skipCL, k == "Connection" && w.c.closeNow:
		default:
			w.keys = append(w.keys, k)
		}
	}
	sortStrings(w.keys)
	for _, k := range w.keys {
		for _, v := range h[k] {
			b = appendField(b, k, v)
		}
	}
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = append(b, w.c.dateHeader()...)
		b = append(b, "\r\n"...)
	}
	for _, kv := range [...][2]string{{"Content-Length", setCL}, {"Content-Type", setCT}, {"Connection", setConn}, {"Transfer-Encoding", setTE}} {
		if kv[1] != "" {
			b = appendField(b, kv[0], kv[1])
		}
	}
	return append(b, "\r\n"...)
}

// appendField appends "k: v" and CRLF; CR and LF in v become spaces (as in net/http).
func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\r' || c == '\n' {
			b = append(b, ' ')
		} else {
			b = append(b, c)
		}
	}
	return append(b, "\r\n"...)
}

// sortStrings sorts a few header keys in place (insertion sort: no allocation).
func sortStrings(a []string) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
