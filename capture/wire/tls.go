package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TLS on the plain path: crypto/tls runs over the same kernel-timestamped socket as plain HTTP
// (see docs/design/tls.md). Under the tls.Client sits a tlsSocket, a net.Conn that reads the
// socket into a buffer of its own and hands crypto/tls the ciphertext one record at a time: it
// never returns a byte past the end of the record it is in. crypto/tls decrypts a record only
// once it has all of it, and each of its Reads returns plaintext of one record, so the record a
// Read decrypted is the last one the tlsSocket finished handing over: its arrival is the socket
// read that carried its last ciphertext byte, its place in the receive stream (for the packet
// tap) the offset just past that byte.
//
// A stampedConn.Read returns the plaintext of every record the latest socket read completed (it keeps
// calling crypto/tls while whole records of that read are buffered), so one stampedConn.Read is one
// socket read, as on plain HTTP, and an event is exact when its record is the last of the read
// to carry body bytes and nothing came after it in the read (a record that only ends the
// chunked framing may follow, as the framing may follow the last event on plain HTTP). The
// framing tracker, the SSE decoder and everything above see the plaintext as on plain HTTP.
//
// Writes: during the handshake the tlsSocket writes through to the socket. After it, crypto/tls
// only encrypts into a buffer, and the plain path writes that ciphertext with its own
// non-blocking writev on the sender's goroutine, as it writes a plain request.

// recordHeaderLen is the length of a TLS record header: type, version (2), length (2).
const recordHeaderLen = 5

// tlsReadBuf holds one socket read of ciphertext: a whole record of the largest size with room.
const tlsReadBuf = 16<<10 + 2048

// maxPieces bounds the records one stampedConn.Read returns, so that the marks of a read (markRing)
// outlive its decoding.
const maxPieces = markRing / 2

// tlsSocket is the net.Conn under a tls.Client: record-at-a-time reads of the stampedConn's socket
// and buffered writes. Reads happen on one goroutine at a time (the handshake's, then the
// connection's reader).
type tlsSocket struct {
	net.Conn // the TCP connection (deadlines, Close, addresses)
	c        *stampedConn
	tc       *tls.Conn
	name     string // the server name the certificate was checked against

	buf    []byte   // ciphertext of the latest socket read; buf[r:w] not yet handed over
	r, w   int      // read and write positions in buf
	sr     sockRead // that socket read
	stream int64    // receive-stream offset of buf[r]: ciphertext bytes handed over so far
	hdr    [recordHeaderLen]byte
	nhdr   int   // bytes of the current record's header handed over
	left   int   // bytes of the current record's body not yet handed over
	last   int64 // receive-stream offset just past the latest record handed over whole
	drain  bool  // hand over only what buf holds: Read returns errDrained when it is empty
	pieces []tlsPiece

	mu     sync.Mutex
	direct bool   // the handshake: writes go straight to the socket
	out    []byte // ciphertext crypto/tls wrote since the last seal
	spare  []byte // the buffer seal handed out last, reused by the next seal
	sent   int64  // bytes written straight to the socket
}

// tlsPiece is the plaintext one crypto/tls Read returned: n bytes of the record ending at
// receive-stream offset end.
type tlsPiece struct {
	n   int
	end int64
}

// recordMark says that the body of response resp had reached offset body at the end of the
// plaintext of the record ending at receive-stream offset stream.
type recordMark struct {
	resp, body, stream int64
}

// markRing is how many record marks a connection keeps for mapping an event to its record.
const markRing = 512

// errDrained ends crypto/tls's Read when the records of the latest socket read have all been
// handed over. It is temporary, so crypto/tls keeps its state and the next Read goes on.
var errDrained error = drainedError{}

type drainedError struct{}

func (drainedError) Error() string   { return "tls: socket read drained" }
func (drainedError) Timeout() bool   { return false }
func (drainedError) Temporary() bool { return true }

// Read hands crypto/tls the next ciphertext bytes, never past the end of the current record;
// it reads the socket only when all it read before has been handed over.
func (s *tlsSocket) Read(p []byte) (int, error) {
	if s.r == s.w {
		if s.drain {
			return 0, errDrained
		}
		n, sr, err := s.c.readSocket(s.buf)
		if n <= 0 {
			return 0, err
		}
		s.r, s.w, s.sr = 0, n, sr
	}
	n := 0
	for n < len(p) && s.r < s.w {
		var k int
		if s.nhdr < recordHeaderLen {
			k = min(recordHeaderLen-s.nhdr, s.w-s.r, len(p)-n)
			copy(s.hdr[s.nhdr:], s.buf[s.r:s.r+k])
			s.nhdr += k
			if s.nhdr == recordHeaderLen {
				s.left = int(s.hdr[3])<<8 | int(s.hdr[4])
			}
		} else {
			k = min(s.left, s.w-s.r, len(p)-n)
			s.left -= k
		}
		copy(p[n:], s.buf[s.r:s.r+k])
		s.r += k
		n += k
		if s.nhdr == recordHeaderLen && s.left == 0 {
			s.last = s.stream + int64(n)
			s.nhdr = 0
			break
		}
	}
	s.stream += int64(n)
	return n, nil
}

// read returns the plaintext of the records the latest socket read completed (the first call
// to crypto/tls waits for one), as far as p holds it, and records the read with that socket
// read's times.
func (s *tlsSocket) read(p []byte) (int, error) {
	s.pieces = s.pieces[:0]
	n, err := s.tc.Read(p)
	if n == 0 {
		return 0, s.refused(err)
	}
	s.pieces = append(s.pieces, tlsPiece{n: n, end: s.last})
	s.drain = true
	for err == nil && n < len(p) && len(s.pieces) < maxPieces {
		k, e := s.tc.Read(p[n:])
		if e == errDrained {
			break
		}
		if k > 0 {
			s.pieces = append(s.pieces, tlsPiece{n: k, end: s.last})
		}
		n, err = n+k, e
	}
	s.drain = false
	// Bytes of the socket read left over (a record begun, or p full) came in its newest
	// segment, or with it: then the read's time is not the last record's own.
	full := s.sr.full || s.r < s.w || s.nhdr > 0
	s.c.recordTLS(p[:n], s.pieces, readRecord{kernel: s.sr.kernel, user: s.sr.user, after: s.sr.after, full: full, record: true})
	return n, err
}

// recordTLS records a read of TLS plaintext p made of pieces: the framing tracker sees each
// piece, a mark per piece maps body offsets to records, and r.streamEnd is the end of the last
// record that carried body bytes.
func (c *stampedConn) recordTLS(p []byte, pieces []tlsPiece, r readRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	for _, pc := range pieces {
		body := c.fr.BodyOffset()
		resp := c.fr.Response()
		if c.feed(p[:pc.n]) {
			r.headers = true
		}
		p = p[pc.n:]
		if c.fr.Response() != resp || c.fr.BodyOffset() != body {
			r.streamEnd = pc.end
		}
		m := recordMark{resp: c.fr.Response(), body: c.fr.BodyOffset(), stream: pc.end}
		if len(c.marks) < markRing {
			c.marks = append(c.marks, m)
		} else {
			c.marks[c.nmarks%markRing] = m
		}
		c.nmarks++
	}
	c.keep(r, n)
}

// recordOf returns the receive-stream end of the record holding body byte end − 1 of response
// resp; ok is false when its mark was overwritten or never made.
func (c *stampedConn) recordOf(resp, end int64) (stream int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := c.nmarks - 1; i >= max(0, c.nmarks-int64(len(c.marks))); i-- {
		m := &c.marks[i%markRing]
		if m.resp < resp || m.resp == resp && m.body < end {
			break
		}
		if m.resp == resp {
			stream, ok = m.stream, true
		}
	}
	return stream, ok
}

// Write sends the handshake's bytes to the socket; after the handshake it keeps what crypto/tls
// writes (requests, and on the reader's side a key update's answer or an alert) for seal.
func (s *tlsSocket) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.direct {
		n, err := s.Conn.Write(p)
		s.sent += int64(n)
		return n, err
	}
	s.out = append(s.out, p...)
	return len(p), nil
}

// seal encrypts plaintext and returns the ciphertext to write, after anything crypto/tls wrote
// since the last seal. The result is valid until the next seal: the caller owns the connection
// and writes it before the next request.
func (s *tlsSocket) seal(plaintext []byte) ([]byte, error) {
	if _, err := s.tc.Write(plaintext); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.out
	s.out, s.spare = s.spare[:0], b
	return b, nil
}

// sealRequest encrypts the request (pc.head, then body) into the ciphertext the plain path
// writes (pc.w0); on plain http it does nothing.
func (pc *plainConn) sealRequest(body []byte) error {
	t := pc.c.tls
	if t == nil {
		return nil
	}
	pc.head = append(pc.head, body...)
	var err error
	pc.w0, err = t.seal(pc.head)
	pc.w1 = nil
	return err
}

// reportTLS records the handshake of pc, a new connection, in the request that first uses it.
func (pc *plainConn) reportTLS(res *Result) {
	if pc.c.tls == nil {
		return
	}
	s := &res.st
	res.Req.TLSHandshakeNs = s.int64p(slotTLS, pc.tlsNs)
	s.p.resumed = pc.resumed
	res.Req.TLSResumed = &s.p.resumed
}

// startTLS runs the TLS handshake on c's socket and switches c's reads to plaintext. It returns
// the handshake's duration, whether it resumed a session, and the bytes it wrote.
func startTLS(ctx context.Context, c *stampedConn, cfg *tls.Config) (ns int64, resumed bool, written int64, err error) {
	s := &tlsSocket{Conn: c.Conn, c: c, name: cfg.ServerName, buf: make([]byte, tlsReadBuf), direct: true}
	s.tc = tls.Client(s, cfg)
	t0 := time.Now()
	if err := s.tc.HandshakeContext(ctx); err != nil {
		return 0, false, 0, tlsError(cfg.ServerName, err)
	}
	ns = time.Since(t0).Nanoseconds()
	st := s.tc.ConnectionState()
	if p := st.NegotiatedProtocol; p != "" && p != "http/1.1" {
		return 0, false, 0, fmt.Errorf("the server chose %q over TLS (ALPN); wirebench measures HTTP/1.1 only", p)
	}
	s.mu.Lock()
	s.direct = false
	written = s.sent
	s.mu.Unlock()
	c.tls = s
	return ns, st.DidResume, written, nil
}

// refused turns a TLS alert the server sent before any response on the connection into a
// connect error that says why: a TLS 1.3 server checks the client's certificate after the
// client's side of the handshake is done, so its refusal comes with the first read.
func (s *tlsSocket) refused(err error) error {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" || s.c.fr.Response() > 0 {
		return err
	}
	return &kindError{kind: schemas.ErrConnect, err: tlsError(s.name, err)}
}

// tlsError says why a handshake failed, naming the server name the certificate was checked
// against and, for the common certificate problems, what to change.
func tlsError(name string, err error) error {
	var (
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		why     string
	)
	switch {
	case errors.As(err, &unknown):
		why = "the server's certificate is not signed by a trusted CA (set target.tls.ca_file to the CA that signed it)"
	case errors.As(err, &host):
		why = fmt.Sprintf("the server's certificate is not valid for %q (set target.tls.server_name to a name it holds)", name)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		why = "the server's certificate has expired or is not yet valid"
	case errors.As(err, &verify):
		why = "the server's certificate did not verify"
	case strings.Contains(err.Error(), "no application protocol"):
		why = "the server speaks only HTTP/2 (it refused ALPN http/1.1); wirebench measures HTTP/1.1"
	case strings.Contains(err.Error(), "certificate required"), strings.Contains(err.Error(), "bad certificate"):
		why = "the server wants a client certificate it accepts (target.tls.cert_file and key_file)"
	default:
		return fmt.Errorf("TLS handshake (server name %q): %w", name, err)
	}
	return fmt.Errorf("TLS handshake (server name %q): %s: %w", name, why, err)
}

// tlsConfig returns the configuration of connections to host: the client's TLS settings with
// ALPN http/1.1 only, the server name (when not set) from the URL, and the client's session
// cache, so new connections resume a session.
func (c *Client) tlsConfig(host string) *tls.Config {
	cfg := &tls.Config{}
	if c.cfg.TLS != nil {
		cfg = c.cfg.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ClientSessionCache == nil {
		cfg.ClientSessionCache = c.sessions
	}
	return cfg
}
