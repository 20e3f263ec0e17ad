package wire

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// The plain path: HTTP/1.1 over plain TCP without net/http. net/http writes every request from
// a per-connection goroutine, so a request sent at its planned time waits for that goroutine to
// be scheduled (a thread handoff, milliseconds on a busy CPU). Here Send writes the request with
// one non-blocking writev on the caller's goroutine (the pacer), and a reader goroutine per
// connection, parked on the socket by the netpoller, reads the response when it arrives. The
// connection's framing tracker removes the chunked framing and keeps the headers, and the body
// goes through the SSE and JSON handling of client.go. https targets take the same path with
// crypto/tls over the socket (tls.go).

// watchTick is how often the watchdog checks requests in flight for their timeout and context.
const watchTick = 10 * time.Millisecond

// call is one request on the plain path.
type call struct {
	ctx      context.Context
	req      *Request
	res      *Result
	done     func(*Result)
	discard  bool  // only the status is wanted (warm-up): the body is read and dropped
	deadline int64 // unix ns; 0 = none
	ttftAt   int64 // unix ns by which the body must have begun (TTFTTimeout); 0 = none
	ttft     int64 // TTFTTimeout in ns; 0 = none
	gap      int64 // GapTimeout in ns; 0 = none
	cancelAt int64 // unix ns at which the client closes it (Request.CancelAfter); 0 = never
	resp     int64 // the response ordinal on the connection (stampedConn.begin), set before cur

	// The writer sets sent or werr, then publishes them with wstate.
	wstate  atomic.Int32
	sent    int64 // when the write that took the last byte began (unix ns)
	sentEnd int64 // when that write returned: the last byte left in [sent, sentEnd]
	txEnd   int64 // send-stream offset just past the request's last byte
	werr    error
	keep    bool         // set by the reader: the connection can carry another request
	parts   atomic.Int32 // writer and reader not yet finished; the last one calls complete
	ended   atomic.Bool  // the reader has read the whole response
}

// call.wstate values.
const (
	writing     = iota
	writingMore // finishWrite is writing the rest
	written
	writeFailed
)

// endpoint is a parsed target URL, cached per URL string.
type endpoint struct {
	addr string // host:port
	host string // Host header
	path string // request target
	pool *plainPool
}

// plainPool holds the connections to one address and scheme, and the requests waiting for one.
//
// Idle connections are reused most recently used first: the ones a server is least likely to
// have closed for idleness, and an idle pool that stays small (the rest go unused, and a server
// that closes idle connections closes those). A request that finds none idle waits in a FIFO
// queue and a dial starts while fewer dials are in flight than requests wait (Client.dialFor).
// A connection that goes idle, or a dial that succeeds, is handed to the oldest waiting request,
// which is written at once on the goroutine that handed it over: no waiter polls, lateness among
// waiters stays in planned order, and a dial never outlives the need that started it by more
// than its own connection (it then stays idle for the next request).
type plainPool struct {
	c       *Client
	addr    string
	tls     *tls.Config  // https; nil for http
	topping atomic.Bool  // a top-up of idle connections is running
	open    atomic.Int32 // connections open or being dialed
	dialing atomic.Int32 // dials in flight for waiting requests (at most maxDialing)
	nwait   atomic.Int32 // waiting.len(), readable without imu
	imu     sync.Mutex
	idle    []*plainConn // idle connections, most recently used last; guarded by imu
	waiting waitQueue    // requests waiting for a connection, oldest first; guarded by imu
	mu      sync.Mutex
	conns   map[*plainConn]struct{} // every open connection, for the watchdog and Close
}

// waiter is a request waiting for a connection.
type waiter struct {
	ep *endpoint
	cl *call
	t0 int64 // when it began to wait (unix ns)
}

// waitQueue is a FIFO of waiters.
type waitQueue struct {
	q    []*waiter
	head int
}

func (w *waitQueue) len() int { return len(w.q) - w.head }

func (w *waitQueue) push(x *waiter) {
	if w.head > 0 && w.head*2 >= len(w.q) { // reclaim the popped half
		n := copy(w.q, w.q[w.head:])
		clear(w.q[n:])
		w.q, w.head = w.q[:n], 0
	}
	w.q = append(w.q, x)
}

func (w *waitQueue) peek() *waiter { return w.q[w.head] }

func (w *waitQueue) pop() *waiter {
	x := w.q[w.head]
	w.q[w.head] = nil
	w.head++
	return x
}

// pushFront puts x back at the head.
func (w *waitQueue) pushFront(x *waiter) {
	if w.head > 0 {
		w.head--
		w.q[w.head] = x
		return
	}
	w.q = append([]*waiter{x}, w.q...)
}

// get takes the most recently used idle connection, or returns nil.
func (p *plainPool) get() *plainConn {
	p.imu.Lock()
	defer p.imu.Unlock()
	return p.popIdle()
}

// popIdle takes the most recently used idle connection, or returns nil; imu is held.
func (p *plainPool) popIdle() *plainConn {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	pc := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return pc
}

// put hands pc to the oldest waiting request, which is written on pc at once, or makes it idle
// when none waits.
func (p *plainPool) put(pc *plainConn) {
	p.imu.Lock()
	if p.waiting.len() == 0 {
		p.idle = append(p.idle, pc)
		p.imu.Unlock()
		return
	}
	w := p.waiting.pop()
	p.nwait.Add(-1)
	p.imu.Unlock()
	w.cl.res.Req.ConnWaitNs = w.cl.res.st.int64p(slotConnWait, time.Now().UnixNano()-w.t0)
	reused := pc.taken()
	if pc.send(w.ep, w.cl, reused) {
		return
	}
	if !reused && p.c != nil {
		// The server closed a new connection before its first request (a TLS 1.3 server that
		// refuses the client's certificate says so only then): a connect error, as a failed
		// dial's, not another dial that would meet the same end.
		p.c.endWaiter(w.cl, schemas.ErrConnect, pc.endError())
		return
	}
	// pc was found dead: w stays first, and a dial starts for it (the reader that retired pc
	// looked for waiters to dial for while w was out of the queue).
	p.imu.Lock()
	p.waiting.pushFront(w)
	p.nwait.Add(1)
	p.imu.Unlock()
	if p.c != nil {
		p.c.dialFor(p)
	}
}

// idleCount returns the number of idle connections.
func (p *plainPool) idleCount() int {
	p.imu.Lock()
	defer p.imu.Unlock()
	return len(p.idle)
}

// plainConn is one keep-alive connection of the plain path.
type plainConn struct {
	c    *stampedConn
	rc   syscall.RawConn
	pool *plainPool
	buf  []byte               // socket reads
	body plainBody            // the current response's body reader (used by the reader goroutine only)
	cur  atomic.Pointer[call] // the call on it; nil while idle; retired once its reader has ended
	end  error                // the reader's last read, written before it sets cur to retired
	dead atomic.Bool          // the reader has ended: never hand this connection out again
	mu   sync.Mutex           // orders the watchdog's kill against the end of a call
	cut  *cutError            // why, when TTFTTimeout or GapTimeout; guarded by mu

	// Written only by the connection's current owner (the goroutine sending on it).
	head     []byte
	w0, w1   []byte // unwritten parts of head and body
	park     bool   // writeFn waits for the socket on EAGAIN instead of returning
	blocked  bool   // writeFn returned on EAGAIN with bytes left
	wErrno   syscall.Errno
	wfn      func(fd uintptr) bool
	wlast    int64 // when the write call that took the request's last byte began (unix ns)
	wlastEnd int64 // when it returned
	wtotal   int64 // bytes written on the connection so far

	// The dial, reported by the first request that takes the connection.
	connectNs  int64
	synRetrans int32 // SYN retransmissions before the server answered (TCP_INFO); -1 unknown
	tlsNs      int64 // TLS handshake; 0 without TLS
	resumed    bool  // the handshake resumed a session
	used       atomic.Bool
}

// retired is pc.cur once the connection's reader has ended: a sender claims a connection by
// swapping nil for its call, the reader retires an idle one by swapping nil (or its last call,
// still completing) for retired, so a call is never left on a connection nobody reads.
var retired = new(call)

// endError says why pc's reader ended before pc carried a request (a caller that lost the claim
// to the reader reads it).
func (pc *plainConn) endError() error {
	if pc.cur.Load() != retired { // the client closed it (Close); its reader may still be ending
		return errors.New("the connection was closed before its first request")
	}
	switch err := pc.end; {
	case err == nil:
		return errors.New("the server sent bytes on a new connection before any request, and wirebench closed it")
	case errors.Is(err, io.EOF):
		return errors.New("the server closed a new connection before its first request")
	default:
		return err
	}
}

// taken marks pc as used and reports whether it had been used before (a reused connection).
func (pc *plainConn) taken() bool { return pc.used.Swap(true) }

// endpointFor parses and caches rawURL.
func (c *Client) endpointFor(rawURL string) (*endpoint, error) {
	if e, ok := c.eps.Load(rawURL); ok {
		return e.(*endpoint), nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	e := &endpoint{host: u.Host, path: u.RequestURI()}
	port := u.Port()
	switch u.Scheme {
	case "https":
		port = cmp.Or(port, "443")
	case "http":
		port = cmp.Or(port, "80")
	default:
		return nil, fmt.Errorf("unsupported protocol scheme %q", u.Scheme)
	}
	e.addr = net.JoinHostPort(u.Hostname(), port)
	p, ok := c.pools.Load(u.Scheme + "://" + e.addr)
	if !ok {
		np := &plainPool{c: c, addr: e.addr, conns: map[*plainConn]struct{}{}}
		if u.Scheme == "https" {
			np.tls = c.tlsConfig(u.Hostname())
		}
		p, _ = c.pools.LoadOrStore(u.Scheme+"://"+e.addr, np)
	}
	e.pool = p.(*plainPool)
	c.eps.Store(rawURL, e)
	return e, nil
}

// Send starts the request and returns; done(res) is called once the response has been read
// (or the request failed), on another goroutine (on the caller's only when the URL does not
// parse), so it may block. With an idle connection the request is written (on https:
// encrypted and written) before Send returns, on the calling goroutine, with no handoff to
// another goroutine; otherwise (a dial, the connection cap reached) it continues on a new
// goroutine. res is filled as the Result doc says.
func (c *Client) Send(ctx context.Context, r *Request, res *Result, done func(*Result)) {
	res.reset()
	res.st.init()
	res.Req.Seq = r.Seq
	res.Req.SendStartNs = time.Now().UnixNano()
	ep, err := c.endpointFor(r.URL)
	if err != nil {
		c.fail(ctx, res, schemas.ErrConnect, fmt.Errorf("build request: %w", err))
		done(res)
		return
	}
	cl := &call{ctx: ctx, req: r, res: res, done: done}
	if c.cfg.Timeout > 0 {
		cl.deadline = res.Req.SendStartNs + int64(c.cfg.Timeout)
	}
	if c.cfg.TTFTTimeout > 0 {
		cl.ttftAt = res.Req.SendStartNs + int64(c.cfg.TTFTTimeout)
		cl.ttft = int64(c.cfg.TTFTTimeout)
	}
	cl.gap = int64(c.cfg.GapTimeout)
	if r.CancelAfter > 0 {
		cl.cancelAt = res.Req.SendStartNs + int64(r.CancelAfter)
	}
	c.sendOrWait(ep, cl)
}

// sendOrWait writes cl on the most recently used idle connection, or queues it for the next
// connection to be handed over (plainPool.put) and starts a dial when fewer are in flight than
// requests wait. A request that waits is finished by whoever hands it a connection, by a failed
// dial (connect), or by the watchdog (its timeout, ttft_timeout or context).
func (c *Client) sendOrWait(ep *endpoint, cl *call) {
	p := ep.pool
	for {
		p.imu.Lock()
		pc := p.popIdle()
		if pc == nil {
			if p.open.Load() >= int32(c.cfg.MaxConns) && int(p.dialing.Load()) <= p.waiting.len() {
				cl.res.Req.ConnCapped = true // no dial can start for it: it waits at the cap
			}
			p.waiting.push(&waiter{ep: ep, cl: cl, t0: time.Now().UnixNano()})
			p.nwait.Add(1)
			p.imu.Unlock()
			c.watchOnce.Do(func() { go c.watch() }) // it expires waiters, even before any dial succeeds
			c.dialFor(p)
			return
		}
		p.imu.Unlock()
		if pc.send(ep, cl, pc.taken()) {
			return
		}
		// found dead before any byte went out: try the next
	}
}

// dialFor starts dials while fewer are in flight than requests wait, within maxDialing and
// MaxConns. A server whose accept queue overflows answers a SYN only on a retransmission (1 s,
// 3 s, 7 s later); the waits are recorded per request (conn_wait_ns, and connect_ns and
// syn_retrans of a fresh connection), and a connection that goes idle meanwhile is handed over
// first: a dial never holds up a send that could have had a connection.
func (c *Client) dialFor(p *plainPool) {
	for {
		d := p.dialing.Load()
		if d >= maxDialing || d >= p.nwait.Load() {
			return
		}
		if p.open.Add(1) > int32(c.cfg.MaxConns) {
			p.open.Add(-1)
			return
		}
		if !p.dialing.CompareAndSwap(d, d+1) {
			p.open.Add(-1)
			continue
		}
		go c.dialInto(p)
	}
}

// failOldest ends the oldest waiting request with the error of a dial that failed.
func (c *Client) failOldest(p *plainPool, err error) {
	p.imu.Lock()
	if p.waiting.len() == 0 {
		p.imu.Unlock()
		return
	}
	w := p.waiting.pop()
	p.nwait.Add(-1)
	p.imu.Unlock()
	c.endWaiter(w.cl, schemas.ErrConnect, err)
}

// endWaiter ends cl, which never got a connection, with kind and err (cancelled when its
// context is done).
func (c *Client) endWaiter(cl *call, kind string, err error) {
	c.fail(cl.ctx, cl.res, kind, err)
	if cl.ctx.Err() != nil {
		cl.res.Req.ErrorKind = schemas.ErrCancelled
	}
	cl.done(cl.res)
}

// expireWaiters ends the waiting requests whose context is done or that had no connection
// within their timeout or ttft_timeout, from the oldest on up to the first that may wait on
// (deadlines come in the order requests began to wait).
func (c *Client) expireWaiters(p *plainPool, now int64) {
	if p.nwait.Load() == 0 {
		return
	}
	type ended struct {
		w    *waiter
		kind string
		err  error
	}
	var out []ended
	p.imu.Lock()
	for p.waiting.len() > 0 {
		w := p.waiting.peek()
		kind, err := w.expired(now, c.cfg.TTFTTimeout)
		if err == nil {
			break
		}
		out = append(out, ended{p.waiting.pop(), kind, err})
		p.nwait.Add(-1)
	}
	p.imu.Unlock()
	if len(out) == 0 {
		return
	}
	go func() { // done may block (the worker's results queue): never on the watchdog
		for _, e := range out {
			c.fail(e.w.cl.ctx, e.w.cl.res, e.kind, e.err)
			e.w.cl.done(e.w.cl.res)
		}
	}()
}

// expired says why w must stop waiting at now (unix ns), or returns a nil error.
func (w *waiter) expired(now int64, ttft time.Duration) (string, error) {
	cl := w.cl
	waited := time.Duration(now - w.t0).Round(time.Millisecond)
	switch {
	case cl.ctx.Err() != nil:
		return schemas.ErrCancelled, cl.ctx.Err()
	case cl.deadline != 0 && now > cl.deadline:
		return schemas.ErrTimeout, fmt.Errorf("no connection within the request timeout (waited %v)", waited)
	case cl.ttftAt != 0 && now > cl.ttftAt:
		return schemas.ErrTTFTTimeout, fmt.Errorf("no connection within ttft_timeout %v", ttft)
	}
	return "", nil
}

// dialInto dials a connection for the waiting requests (already counted in p.open and
// p.dialing) and hands it to the oldest (plainPool.put); a failed dial ends the oldest with its
// error (connect). Either way it starts the next dial if requests still wait.
func (c *Client) dialInto(p *plainPool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the client's Close ends the dial
		select {
		case <-c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	pc, err := c.dialPlain(ctx, p)
	p.dialing.Add(-1)
	switch {
	case err != nil:
		p.open.Add(-1)
		c.failOldest(p, err)
	case c.isClosed():
		pc.close() // the client closed while the dial went on
		return
	default:
		p.put(pc)
	}
	c.dialFor(p)
}

// isClosed reports whether Close has been called.
func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// maxDialing bounds the dials in flight per target and worker. It binds only when connects are
// slow, that is when the server is not accepting: more SYNs would then only overflow its accept
// queue further (each dropped SYN is retried after 1 s, 3 s, ...) and take CPU from a server
// that shares the machine, while requests wait for a connection either way (recorded as
// conn_wait_ns). A server that accepts in 50 µs allows 32 / 50 µs = 640,000 dials a second.
const maxDialing = 32

// dialWithin dials a new connection to p if that keeps p within MaxConns; it returns nil, nil
// when p is at its cap.
func (c *Client) dialWithin(ctx context.Context, p *plainPool) (*plainConn, error) {
	if p.open.Add(1) > int32(c.cfg.MaxConns) {
		p.open.Add(-1)
		return nil, nil
	}
	pc, err := c.dialPlain(ctx, p)
	if err != nil {
		p.open.Add(-1)
	}
	return pc, err
}

// dialPlain opens a connection, starts its reader and registers it with the watchdog; the caller
// has counted it in p.open (dialWithin). ConnectTimeout bounds the TCP connect and the TLS
// handshake together.
func (c *Client) dialPlain(ctx context.Context, p *plainPool) (*plainConn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	t0 := time.Now()
	nc, err := c.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		nc.Close()
		return nil, err
	}
	pc := &plainConn{c: newConn(nc, c.cfg.Timestamps, true, &c.stats), rc: rc, pool: p, buf: make([]byte, 16<<10),
		connectNs: time.Since(t0).Nanoseconds(), synRetrans: synRetransmits(rc)}
	if p.tls != nil {
		if pc.tlsNs, pc.resumed, pc.wtotal, err = startTLS(ctx, pc.c, p.tls); err != nil {
			pc.c.Close() // counted out of the open connections
			return nil, err
		}
	}
	pc.c.fr.Collect = true
	pc.c.coalesce = c.cfg.Coalesce // after the handshake, which it would only slow
	pc.wfn = pc.writeFn
	p.mu.Lock()
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	c.watchOnce.Do(func() { go c.watch() })
	go c.readLoop(pc)
	return pc, nil
}

// send writes cl's request on pc, which the caller owns. It reports false, having closed pc,
// when pc turned out dead before anything was written; from true on, pc's reader finishes cl.
func (pc *plainConn) send(ep *endpoint, cl *call, reused bool) bool {
	if pc.dead.Load() {
		pc.close()
		return false
	}
	res := cl.res
	s := &res.st
	s.conn = pc.c
	s.resp, s.cursor = pc.c.begin()
	cl.resp = s.resp
	pc.head = appendHead(pc.head[:0], ep, cl.req)
	pc.w0, pc.w1 = pc.head, cl.req.Body
	pc.park, pc.blocked, pc.wErrno = false, false, 0
	cl.parts.Store(2)
	if !pc.cur.CompareAndSwap(nil, cl) {
		pc.close() // the reader retired it: the server closed it while it was idle
		return false
	}
	res.Req.ConnReused = reused
	if !reused {
		res.Req.ConnectNs = s.int64p(slotConnect, pc.connectNs)
		if pc.synRetrans >= 0 {
			res.Req.SynRetrans = s.int32p(slotSynRetrans, int64(pc.synRetrans))
		}
		pc.reportTLS(res)
	}
	if err := pc.sealRequest(cl.req.Body); err != nil {
		pc.writeFailed(cl, err, true)
		return true
	}
	err := pc.rc.Write(pc.wfn)
	switch {
	case err == nil && pc.wErrno == 0 && !pc.blocked:
		cl.sent, cl.sentEnd, cl.txEnd = pc.wlast, pc.wlastEnd, pc.wtotal
		cl.wstate.Store(written)
		pc.finished(cl, true)
	case err == nil && pc.wErrno == 0:
		cl.wstate.Store(writingMore)
		if cl.ended.Load() {
			pc.stopWrite() // the response is already in (the reader saw writing, not writingMore)
		}
		go pc.finishWrite(cl) // the socket buffer is full: write the rest off the caller
	default:
		if err == nil {
			err = pc.wErrno
		}
		pc.writeFailed(cl, err, true)
	}
	return true
}

// finished is called by the writer and by the reader when each is done with cl; the last one
// completes the call, on a new goroutine when it is the sender (done must not run on a pacer).
func (pc *plainConn) finished(cl *call, sender bool) {
	if cl.parts.Add(-1) != 0 {
		return
	}
	if sender {
		go pc.complete(cl)
		return
	}
	pc.complete(cl)
}

// stopWrite makes a write still going on fail at once: its response has ended.
func (pc *plainConn) stopWrite() { _ = pc.c.SetWriteDeadline(time.Unix(1, 0)) }

// complete ends cl once the request is written and the response read: the connection goes back
// to the pool (or is closed), then done is called.
func (pc *plainConn) complete(cl *call) {
	res := cl.res
	if cl.wstate.Load() == written {
		res.Req.SentNs = cl.sent
		res.Req.SentEndNs = res.st.int64p(slotSentEnd, cl.sentEnd)
		res.Req.TxStreamEnd = res.st.int64p(slotTxEnd, cl.txEnd)
	}
	if p := pc.c.LocalPort(); p != 0 {
		res.Req.LocalPort = res.st.int32p(slotPort, int64(p))
	}
	if res.Req.SentNs == 0 && res.Req.HeadersNs != nil {
		res.Req.SentNs = *res.Req.HeadersNs // the server answered before the request was written
	}
	keep := cl.keep && cl.wstate.Load() == written && !pc.dead.Load()
	pc.mu.Lock()
	if pc.c.killed.Load() {
		keep = false // a past read deadline is set
	}
	if !pc.cur.CompareAndSwap(cl, nil) {
		keep = false // the reader retired the connection: the server closed it
	}
	pc.mu.Unlock()
	if keep {
		pc.pool.put(pc)
	} else {
		pc.close() // before done: the next request may need this connection's slot
	}
	cl.done(res)
}

// finishWrite writes the rest of a request that did not fit into the socket buffer.
func (pc *plainConn) finishWrite(cl *call) {
	pc.park = true
	err := pc.rc.Write(pc.wfn)
	if err == nil && pc.wErrno != 0 {
		err = pc.wErrno
	}
	if err != nil {
		pc.writeFailed(cl, err, false)
		return
	}
	cl.sent, cl.sentEnd, cl.txEnd = pc.wlast, pc.wlastEnd, pc.wtotal
	cl.wstate.Store(written)
	pc.finished(cl, false)
}

// writeFailed records a write error and shuts the socket down: the reader then ends the call.
func (pc *plainConn) writeFailed(cl *call, err error, sender bool) {
	cl.werr = fmt.Errorf("write request: %w", err)
	cl.wstate.Store(writeFailed)
	_ = pc.rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	pc.finished(cl, sender)
}

// writeFn writes w0 and w1 with writev, without parking unless park is set.
//
// The request counts as sent when the writev that takes its last byte begins (wlast), not when
// it returns: the bytes are in the kernel by then, and a thread can be preempted on its way
// out of the system call (on a busy CPU for hundreds of µs), which would otherwise show as
// send lag although the request left on time.
func (pc *plainConn) writeFn(fd uintptr) bool {
	for len(pc.w0)+len(pc.w1) > 0 {
		t := time.Now().UnixNano()
		n, errno := writev(fd, pc.w0, pc.w1)
		switch errno {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if pc.park {
				return false
			}
			pc.blocked = true
			return true
		default:
			pc.wErrno = errno
			return true
		}
		k := min(n, len(pc.w0))
		pc.w0 = pc.w0[k:]
		pc.w1 = pc.w1[n-k:]
		pc.wlast, pc.wlastEnd = t, time.Now().UnixNano()
		pc.wtotal += int64(n)
	}
	return true
}

// appendHead appends the request line and headers.
func appendHead(b []byte, ep *endpoint, r *Request) []byte {
	method := r.method
	if method == "" {
		method = "POST"
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, ep.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, ep.host...)
	b = append(b, "\r\nUser-Agent: wirebench\r\n"...)
	if method != "GET" || len(r.Body) > 0 {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(r.Body)), 10)
		b = append(b, "\r\n"...)
	}
	for k, vs := range r.Header {
		if k == "Content-Type" || k == "Content-Length" || k == "Host" {
			continue
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return append(b, "\r\n"...)
}

// readLoop is the connection's reader: parked on the socket while the connection is idle, it
// serves each response as it arrives, then gives the connection back to the pool.
func (c *Client) readLoop(pc *plainConn) {
	defer pc.close()
	var last *call
	for {
		err := pc.read()
		cl := pc.cur.Load()
		for cl == nil || cl == last {
			// The server closed an idle connection (or sent bytes nobody asked for); the last
			// call may still be completing on its writer. Retire the connection, unless a
			// sender claimed it meanwhile (send): its call then gets this read.
			pc.end = err
			if pc.cur.CompareAndSwap(cl, retired) {
				return
			}
			cl = pc.cur.Load()
		}
		last = cl
		cl.keep = c.serve(pc, cl, err)
		keep := cl.keep
		cl.ended.Store(true)
		if cl.wstate.Load() == writingMore {
			// The response has ended before the request was all written (the server answered
			// early): stop writing; the connection is not reused.
			pc.stopWrite()
		}
		pc.finished(cl, false)
		if !keep {
			return
		}
	}
}

// serve reads cl's response, its first read already done (err is that read's error), and reports
// whether the connection can carry another request.
func (c *Client) serve(pc *plainConn, cl *call, err error) bool {
	res := cl.res
	s := &res.st
	fr := &pc.c.fr
	// Until this response's headers are in.
	for !(fr.Response() == s.resp && !fr.InHeaders()) {
		if fr.Bad() {
			c.fail(cl.ctx, res, classify(cl.ctx, cl.ctx, framingErr(fr)), framingErr(fr))
			return false
		}
		if err != nil {
			c.fail(cl.ctx, res, classify(cl.ctx, cl.ctx, err), pc.readErr(cl, err))
			return false
		}
		err = pc.read()
	}
	head := fr.Head
	line, _, _ := bytes.Cut(head, []byte{'\n'})
	status := fr.Status()
	text := ""
	if status != http.StatusOK && len(line) > 9 {
		text = string(line[9:]) // only an error message uses it
	}
	pc.body = plainBody{pc: pc, resp: s.resp, err: err}
	b := &pc.body
	if cl.discard {
		res.Req.Status = int32(status)
	} else {
		c.handle(cl.ctx, cl.ctx, response{status: status, statusText: text, header: rawHeader(head), body: b}, cl.req, res)
	}
	switch res.Req.ErrorKind {
	case "", schemas.ErrHTTPStatus, schemas.ErrServerEvent, schemas.ErrNotStreamed: // a whole answer: the connection may serve the next
	default:
		return false
	}
	// Read the rest of an error body or anything the decoder left, up to maxDrain, so the next
	// response starts clean; then reuse only a complete, keep-alive HTTP/1.1 response (an
	// endless error body closes the connection instead of holding the request).
	for drained := 0; b.err == nil && !b.ended() && drained < maxDrain; {
		n, e := b.Read(pc.buf)
		if e != nil {
			break
		}
		drained += n
	}
	fr.Body = fr.Body[:0]
	return b.ended() && b.err == nil && bytes.HasPrefix(line, []byte("HTTP/1.1")) && !hasToken(rawHeader(head).Get("Connection"), "close")
}

// readErr is the message of a failed read: the write error when the request could not be sent.
func (pc *plainConn) readErr(cl *call, err error) error {
	if cl.wstate.Load() == writeFailed {
		return cl.werr
	}
	if err == io.EOF {
		return errors.New("connection closed before the response ended")
	}
	return err
}

// plainBody reads the current response's body (framing removed) from the connection.
type plainBody struct {
	pc   *plainConn
	resp int64
	off  int   // bytes of fr.Body already returned
	err  error // the read error that ended the connection, kept for every later Read
}

// ended reports whether the body is complete and fully returned.
func (b *plainBody) ended() bool {
	fr := &b.pc.c.fr
	return b.off == len(fr.Body) && (fr.Response() > b.resp || fr.Done())
}

func (b *plainBody) Read(p []byte) (int, error) {
	fr := &b.pc.c.fr
	for {
		if b.off < len(fr.Body) {
			n := copy(p, fr.Body[b.off:])
			b.off += n
			if b.off == len(fr.Body) {
				fr.Body, b.off = fr.Body[:0], 0
			}
			return n, nil
		}
		if fr.Response() == b.resp && fr.Done() {
			return 0, io.EOF
		}
		if fr.Bad() { // before the read's error: under TLS a close can come with the bad bytes
			b.err = framingErr(fr)
			return 0, b.err
		}
		if b.err != nil {
			if b.err == io.EOF && fr.Response() == b.resp && fr.ClosesAtEOF() {
				return 0, io.EOF // a body without a length ends with the connection
			}
			if b.err == io.EOF {
				return 0, errClosedInBody
			}
			return 0, b.err
		}
		b.err = b.pc.read()
	}
}

// maxDrain bounds what serve reads of a response body nobody uses (the rest of an error body)
// before it closes the connection instead.
const maxDrain = 64 << 10

// errClosedInBody is a connection that ended before its response's framing did (kind reset).
var errClosedInBody = fmt.Errorf("connection closed inside the response body: %w", io.ErrUnexpectedEOF)

// framingErr says why the framing tracker stopped: a head over maxHeaderBytes (too_large) or
// bytes that are not HTTP/1.1 (malformed_stream).
func framingErr(fr *framing) error {
	if fr.TooLarge() {
		return &kindError{kind: schemas.ErrTooLarge, err: fmt.Errorf("response headers or trailers over %d KiB", maxHeaderBytes>>10)}
	}
	if fr.HTTP2() {
		return &kindError{kind: schemas.ErrMalformedStream, err: errors.New("the server answered with HTTP/2 frames: it speaks only HTTP/2; wirebench measures HTTP/1.1")}
	}
	if fr.Response() == 0 || fr.InHeaders() {
		return &kindError{kind: schemas.ErrMalformedStream, err: errors.New("malformed HTTP response")}
	}
	return &kindError{kind: schemas.ErrMalformedStream, err: errors.New("malformed HTTP chunked body")}
}

// read reads from the socket into buf; when the watchdog cut the call for TTFTTimeout or
// GapTimeout, the error says so.
func (pc *plainConn) read() error {
	_, err := pc.c.Read(pc.buf)
	if err != nil {
		pc.mu.Lock()
		ce := pc.cut
		pc.mu.Unlock()
		if ce != nil {
			return &cutError{kind: ce.kind, limit: ce.limit, quiet: ce.quiet, err: err}
		}
	}
	return err
}

// rawHeader looks up header values in the framing tracker's LF-separated header lines.
type rawHeader []byte

// Get returns the first value of the header name (ASCII case-insensitive), or "".
func (h rawHeader) Get(name string) string {
	rest := []byte(h)
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[i+1:] // the status line
	}
	for len(rest) > 0 {
		line, tail, _ := bytes.Cut(rest, []byte{'\n'})
		rest = tail
		if k, v, ok := bytes.Cut(line, []byte{':'}); ok && asciiEqualFold(bytes.TrimSpace(k), name) {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

// hasToken reports whether the comma-separated list v holds token (case-insensitive).
func hasToken(v, token string) bool {
	for f := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.TrimSpace(f), token) {
			return true
		}
	}
	return false
}

// close closes the connection and forgets it.
func (pc *plainConn) close() {
	pc.dead.Store(true)
	pc.c.Close()
	pc.pool.mu.Lock()
	_, ok := pc.pool.conns[pc]
	if ok {
		delete(pc.pool.conns, pc)
		pc.pool.open.Add(-1)
	}
	pc.pool.mu.Unlock()
	if ok && pc.pool.c != nil {
		pc.pool.c.dialFor(pc.pool) // a request waiting at the cap may dial now
	}
}

// watch ends requests past their timeout or whose context is done, by giving their connection
// a read deadline in the past (the reader then fails the request), or, while they wait for a
// connection, at once (expireWaiters). It also tops up idle connections to MinIdle. It runs
// until Close.
func (c *Client) watch() {
	t := time.NewTicker(watchTick)
	defer t.Stop()
	var conns []*plainConn
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		conns = conns[:0]
		c.pools.Range(func(_, v any) bool {
			p := v.(*plainPool)
			p.mu.Lock()
			for pc := range p.conns {
				conns = append(conns, pc)
			}
			p.mu.Unlock()
			c.expireWaiters(p, now)
			if want := c.cfg.MinIdle - p.idleCount(); want > 0 && p.topping.CompareAndSwap(false, true) {
				go c.topUp(p, want)
			}
			return true
		})
		var lastCtx context.Context
		lastDone := false
		for _, pc := range conns {
			cl := pc.cur.Load()
			if cl == nil || cl == retired {
				continue
			}
			if cl.ctx != lastCtx {
				lastCtx, lastDone = cl.ctx, cl.ctx.Err() != nil
			}
			var cut *cutError
			if !lastDone && (cl.deadline == 0 || now < cl.deadline) {
				if cut = cl.cut(pc.c, now); cut == nil {
					continue
				}
			}
			// The reader's read (and a write still going on) fail with a timeout, classified as
			// cancelled when the context is done, as the cut's kind when there is one.
			pc.mu.Lock()
			if pc.cur.Load() == cl && !pc.c.killed.Load() {
				pc.cut = cut
				pc.c.kill() // a write still going on fails too
			}
			pc.mu.Unlock()
		}
	}
}

// cut returns why cl, in flight on conn, is past its GapTimeout (the body or the headers have
// begun and no byte has arrived since) or its TTFTTimeout (no body byte yet, however far the
// headers have come: headers dripped a byte at a time are cut too), or nil.
func (cl *call) cut(conn *stampedConn, now int64) *cutError {
	if cl.cancelAt != 0 && now >= cl.cancelAt {
		return &cutError{kind: schemas.ErrCancelledByClient, quiet: time.Duration(now - (cl.cancelAt - int64(cl.req.CancelAfter)))}
	}
	if cl.ttftAt == 0 && cl.gap == 0 {
		return nil
	}
	body := conn.bodyResp.Load() >= cl.resp
	if body || conn.headOpen.Load() == cl.resp {
		// The server has begun to answer: a silence is a gap.
		if q := now - conn.lastRead.Load(); cl.gap != 0 && q > cl.gap {
			return &cutError{kind: schemas.ErrGapTimeout, limit: time.Duration(cl.gap), quiet: time.Duration(q)}
		}
	}
	if !body && cl.ttftAt != 0 && now > cl.ttftAt {
		return &cutError{kind: schemas.ErrTTFTTimeout, limit: time.Duration(cl.ttft), quiet: time.Duration(now - (cl.ttftAt - cl.ttft))}
	}
	return nil
}

// warmOnePlain dials a connection to base and checks it with GET /health (or /v1/models); it
// stays idle in the pool.
func (c *Client) warmOnePlain(ctx context.Context, base string) error {
	var pc *plainConn
	var last error
	for _, path := range []string{"/health", "/v1/models"} {
		ep, err := c.endpointFor(base + path)
		if err != nil {
			return fmt.Errorf("warm %s: %w", base, err)
		}
		if pc == nil {
			if pc, err = c.dialWithin(ctx, ep.pool); err != nil {
				return fmt.Errorf("warm %s: %w", base+path, err)
			}
			if pc == nil {
				return fmt.Errorf("warm %s: more connections than the pool's %d", base, c.cfg.MaxConns)
			}
		}
		var res Result
		res.reset()
		res.st.init()
		done := make(chan struct{})
		cl := &call{ctx: ctx, req: &Request{method: "GET"}, res: &res, discard: true, done: func(*Result) { close(done) }}
		pc.send(ep, cl, pc.taken())
		<-done
		if res.Req.ErrorKind != "" {
			return fmt.Errorf("warm %s: %s", base+path, res.Req.ErrorMessage)
		}
		if res.Req.Status < 400 {
			return nil
		}
		last = fmt.Errorf("warm %s: status %d", base+path, res.Req.Status)
		// The reader gave the connection back to the pool when it can be reused; take it again.
		pc = ep.pool.get()
	}
	return last
}

// topUp dials up to n more idle connections to p, within MaxConns.
func (c *Client) topUp(p *plainPool, n int) {
	defer p.topping.Store(false)
	for range n {
		select {
		case <-c.closed:
			return
		default:
		}
		pc, err := c.dialWithin(context.Background(), p)
		if pc == nil || err != nil {
			return
		}
		p.put(pc)
	}
}

// closePlain closes every connection of the plain path and stops the watchdog.
func (c *Client) closePlain() {
	close(c.closed)
	c.pools.Range(func(_, v any) bool {
		p := v.(*plainPool)
		p.mu.Lock()
		conns := make([]*plainConn, 0, len(p.conns))
		for pc := range p.conns {
			conns = append(conns, pc)
		}
		p.mu.Unlock()
		for _, pc := range conns {
			pc.c.Close() // its reader forgets it
		}
		p.imu.Lock()
		var waiting []*waiter
		for p.waiting.len() > 0 {
			waiting = append(waiting, p.waiting.pop())
		}
		p.nwait.Store(0)
		p.imu.Unlock()
		for _, w := range waiting {
			c.fail(w.cl.ctx, w.cl.res, schemas.ErrCancelled, errors.New("the client closed while the request waited for a connection"))
			w.cl.done(w.cl.res)
		}
		return true
	})
}
