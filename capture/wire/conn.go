package wire

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// readRecord is what the connection keeps about one socket read.
type readRecord struct {
	seq     int64 // read number on the connection, from 1
	resp    int64 // response ordinal the read ended in (framing.Response)
	bodyEnd int64 // body offset of that response at the end of the read
	kernel  int64 // kernel receive time (CLOCK_REALTIME ns); 0 when none
	user    int64 // time.Now() right after the read returned
	after   int64 // the data of this read became readable after this time (stampedConn.empty before it); 0 when unknown
	n       int32 // bytes read
	// full: the read filled the caller's buffer (more data may have been queued), so its kernel
	// time may be a later segment's. Under TLS: the socket read did, or bytes of it were left
	// over (a record begun, or more records than the caller's buffer held).
	full    bool
	headers bool // a final response's headers completed in this read
	// record: TLS, the read returned the plaintext of the records one socket read completed;
	// streamEnd is the receive-stream offset just past the last of them that carried body
	// bytes (an event in that record is exact when the read is not full).
	record    bool
	streamEnd int64
}

// sockRead is what one socket read says about when its bytes arrived.
type sockRead struct {
	kernel int64 // kernel receive time (CLOCK_REALTIME ns); 0 when none
	user   int64 // time.Now() right after the read returned
	after  int64 // the bytes became readable after this time (stampedConn.empty before the read); 0 when unknown
	full   bool  // the read filled its buffer
}

const ringSize = 128 // reads kept per connection; the decoder lags the socket by a few at most

// runRing is how many body runs (stretches of body bytes between chunk framing) a connection
// keeps for mapping body offsets to stream offsets: more than one read holds (32 KiB of events
// of at least 128 bytes each).
const runRing = 512

// stampedConn wraps a client TCP connection. Each Read asks the kernel for the receive timestamp of the
// data (SO_TIMESTAMPING, on Linux), takes the user time right after the syscall, runs the HTTP/1.1
// framing tracker over the bytes and keeps a record of the read, so the SSE decoder can look up
// the read that delivered any body offset. It embeds net.Conn (never *net.TCPConn, whose ReadFrom
// and WriteTo would bypass the wrapper).
type stampedConn struct {
	net.Conn
	stamping bool // SO_TIMESTAMPING is on for this socket
	// coalesce is ClientConfig.Coalesce: once reads come less than this apart, a read waits for
	// batchLowat bytes or this long (Linux), so one read takes what a burst brought.
	coalesce time.Duration
	track    bool // run the framing tracker
	// killed is set by kill: a past deadline cancels the connection's read and write, and a
	// batching reader's own read deadline (readBy) must not lift it.
	killed atomic.Bool
	stats  *counters
	sys    sysConn    // platform read path
	tls    *tlsSocket // set once a TLS handshake is done: Read returns plaintext (tls.go)
	// empty is a time at which the socket's receive queue was surely empty: of the latest read
	// that returned less than its buffer (tcp_recvmsg returns early only once the queue is
	// empty), the later of its kernel time and the start of its call. Bytes a later read returns
	// became readable after it. Only the reader touches it.
	empty int64

	mu     sync.Mutex
	fr     framing
	next   int64 // seq of the next read
	ring   [ringSize]readRecord
	hdr    readRecord // the read that completed the latest final response's headers
	hdrOK  bool
	runs   []bodyRun // a ring once it holds runRing entries; grown as needed (most responses need few)
	nruns  int64
	marks  []recordMark // TLS: a ring once it holds markRing entries, as runs
	nmarks int64
	port   uint16 // local port; 0 when not TCP

	// For the plain path's watchdog (TTFTTimeout, GapTimeout): the user time of the latest read
	// that returned bytes, the latest response ordinal whose body has had a byte, and the
	// ordinal of a response whose head has begun and not ended (framing.HeadOpen).
	lastRead atomic.Int64
	bodyResp atomic.Int64
	headOpen atomic.Int64

	closed atomic.Bool // counted out of the client's open connections
}

// wrap makes the stampedConn of a dialed connection; track runs the framing tracker.
func wrap(nc net.Conn, track bool, st *counters) *stampedConn {
	c := &stampedConn{Conn: nc, track: track, stats: st}
	st.opened.Add(1)
	n := st.open.Add(1)
	for p := st.peak.Load(); n > p && !st.peak.CompareAndSwap(p, n); p = st.peak.Load() {
	}
	c.fr.TrackRuns = track
	if a, ok := nc.LocalAddr().(*net.TCPAddr); ok {
		c.port = uint16(a.Port)
	}
	return c
}

// Close closes the connection and counts it out of the client's open connections.
func (c *stampedConn) Close() error {
	if !c.closed.Swap(true) {
		c.stats.open.Add(-1)
	}
	return c.Conn.Close()
}

// LocalPort returns the connection's local TCP port (0 when not TCP).
func (c *stampedConn) LocalPort() uint16 { return c.port }

// streamEnd maps body offset end (exclusive) of response resp to the offset in the
// connection's receive stream just past that body byte; ok is false when the run was
// overwritten or never seen.
func (c *stampedConn) streamEnd(resp, end int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.nruns - 1; i >= max(0, c.nruns-int64(len(c.runs))); i-- {
		r := &c.runs[i%runRing]
		if r.Resp == resp && r.Body < end {
			return r.Stream + end - r.Body, true
		}
		if r.Resp < resp {
			break
		}
	}
	return 0, false
}

type counters struct {
	reads, bytes atomic.Int64
	// Connections: opened so far, open now, and the most open at once since the last
	// Client.TakeOpenPeak.
	opened, open, peak atomic.Int64
}

// kill makes the connection's read and any write going on fail at once with a timeout.
func (c *stampedConn) kill() {
	c.killed.Store(true)
	_ = c.SetDeadline(time.Unix(1, 0))
}

// readBy sets the read deadline to t (zero: none) unless kill has run. Either order of the two
// ends with the past deadline: kill stores killed before it sets the deadline, readBy checks it
// after.
func (c *stampedConn) readBy(t time.Time) {
	_ = c.SetReadDeadline(t)
	if c.killed.Load() {
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
}

// Read reads from the socket with its timestamps and records the read; under TLS it returns
// the plaintext of the records that one socket read completed (tls.go).
func (c *stampedConn) Read(p []byte) (int, error) {
	if c.tls != nil {
		return c.tls.read(p)
	}
	n, sr, err := c.readSocket(p)
	if n > 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		r := readRecord{kernel: sr.kernel, user: sr.user, after: sr.after, full: sr.full}
		if c.track {
			r.headers = c.feed(p[:n])
		}
		c.keep(r, n)
	}
	return n, err
}

// readSocket reads from the socket with its timestamps. Only the connection's reader calls it.
func (c *stampedConn) readSocket(p []byte) (int, sockRead, error) {
	start := time.Now().UnixNano()
	n, kernel, err := c.sys.read(c, p)
	user := time.Now().UnixNano()
	if n <= 0 {
		return n, sockRead{}, err
	}
	c.sys.arrived(c, user)
	c.stats.reads.Add(1)
	c.stats.bytes.Add(int64(n))
	sr := sockRead{kernel: kernel, user: user, after: c.empty, full: n == len(p)}
	if !sr.full {
		c.empty = max(kernel, start)
	}
	c.lastRead.Store(user)
	return n, sr, err
}

// feed runs the framing tracker over p and keeps its body runs; it reports whether a final
// response's headers completed in p. c.mu is held.
func (c *stampedConn) feed(p []byte) (headers bool) {
	headers = c.fr.Feed(p)
	for _, br := range c.fr.Runs {
		if len(c.runs) < runRing {
			c.runs = append(c.runs, br)
		} else {
			c.runs[c.nruns%runRing] = br
		}
		c.nruns++
	}
	c.fr.Runs = c.fr.Runs[:0]
	return headers
}

// keep records a read of n bytes, r's times set, after the framing tracker has seen them. c.mu
// is held.
func (c *stampedConn) keep(r readRecord, n int) {
	c.next++
	r.seq, r.n = c.next, int32(n)
	r.resp, r.bodyEnd = c.fr.Response(), c.fr.BodyOffset()
	if r.headers {
		c.hdr, c.hdrOK = r, true
	}
	if r.bodyEnd > 0 {
		c.bodyResp.Store(r.resp)
	}
	c.headOpen.Store(c.fr.HeadOpen())
	c.ring[c.next%ringSize] = r
}

// begin is called when a request gets the connection: it returns the ordinal the response will
// have and the seq of the first read that can belong to it.
func (c *stampedConn) begin() (resp, firstSeq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fr.Response() + 1, c.next + 1
}

// headers returns the read that completed the headers of response resp.
func (c *stampedConn) headers(resp int64) (readRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hdrOK || c.hdr.resp != resp {
		return readRecord{}, false
	}
	return c.hdr, true
}

// lookup finds the first read at or after *cursor that ends at or beyond body offset off of
// response resp, and advances *cursor to it. ok is false when no such read is known (the
// tracker and the decoder disagree, or the record was overwritten).
func (c *stampedConn) lookup(resp, off int64, cursor *int64) (readRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := *cursor
	if s <= c.next-ringSize {
		s = c.next - ringSize + 1
	}
	for ; s <= c.next; s++ {
		r := &c.ring[s%ringSize]
		if r.resp == resp && r.bodyEnd >= off {
			*cursor = s
			return *r, true
		}
		if r.resp > resp {
			break
		}
	}
	return readRecord{}, false
}

// Stamping reports whether the kernel gives receive timestamps on this connection.
func (c *stampedConn) Stamping() bool { return c.stamping }
