package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
)

// The fast server's HTTP/1.x request parser: minimal and strict. It reads what the simulator
// needs (request line, Host, Content-Length, Transfer-Encoding: chunked, Connection, Expect,
// x-sim-fault) and refuses what could make the framing ambiguous (obs-fold, a space before the
// colon, Content-Length together with Transfer-Encoding, differing Content-Lengths, control
// characters), so a request is never misread as two or two as one.

const (
	// maxHeaderBytes bounds a request head (request line and headers); over it: 431.
	maxHeaderBytes = 64 << 10
	// maxTrailerBytes bounds the trailer of a chunked request body.
	maxTrailerBytes = 16 << 10
)

// protoError is a request the server answers with a plain-text error and a closed connection,
// as net/http does (400 Bad Request: reason).
type protoError struct {
	code int
	msg  string
}

func (e *protoError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("%d %s", e.code, http.StatusText(e.code))
	}
	return fmt.Sprintf("%d %s: %s", e.code, http.StatusText(e.code), e.msg)
}

func badProto(format string, a ...any) *protoError {
	return &protoError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, a...)}
}

var errHeaderTooLarge = &protoError{code: http.StatusRequestHeaderFieldsTooLarge}

// reqHead is a parsed request head; its byte slices point into the buffer that was parsed.
type reqHead struct {
	method, target []byte
	minor          int   // HTTP/1.minor: 0 or 1
	contentLength  int64 // -1: no Content-Length
	chunked        bool  // Transfer-Encoding: chunked
	close          bool  // the connection closes after the response
	expect100      bool  // Expect: 100-continue
	fault          []byte
	fields         []byte // the header lines (for the net/http fallback)
}

// readHead reads one request head (up to and including its blank line) into dst[:0]. Empty
// lines before the request line are skipped (RFC 9112 §2.2). io.EOF means the connection
// ended cleanly before a request; io.ErrUnexpectedEOF, in the middle of one.
func readHead(br *bufio.Reader, dst []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	lineStart := 0
	for {
		frag, err := br.ReadSlice('\n')
		if len(dst)+len(frag) > limit {
			return dst, errHeaderTooLarge
		}
		dst = append(dst, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(dst) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
		line := dst[lineStart:]
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			if lineStart == 0 {
				dst = dst[:0] // an empty line before the request line
				continue
			}
			return dst, nil
		}
		lineStart = len(dst)
	}
}

// nextLine splits the first line (without its CRLF or LF) off b.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// isToken reports whether b is a non-empty RFC 9110 token (method, header name).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// trimOWS removes spaces and tabs around b.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// hasToken reports whether the comma-separated list v holds tok (case-insensitive).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var f []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			f, v = v[:i], v[i+1:]
		} else {
			f, v = v, nil
		}
		if bytes.EqualFold(trimOWS(f), []byte(tok)) {
			return true
		}
	}
	return false
}

// parseHead parses a head read by readHead into h: the request line, then each header field,
// then the checks across fields.
func parseHead(b []byte, h *reqHead) error {
	*h = reqHead{contentLength: -1}
	line, rest := nextLine(b)
	if err := parseRequestLine(line, h); err != nil {
		return err
	}
	h.fields = rest
	var f fieldCounts
	for len(rest) > 0 {
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break // the blank line that ends the head
		}
		if err := parseField(line, h, &f); err != nil {
			return err
		}
	}
	return finishHead(h, f)
}

// parseRequestLine parses METHOD TARGET HTTP/1.x into h.
func parseRequestLine(line []byte, h *reqHead) error {
	sp1 := bytes.IndexByte(line, ' ')
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 == sp1 {
		return badProto("malformed request line %q", line)
	}
	h.method, h.target = line[:sp1], line[sp1+1:sp2]
	proto := line[sp2+1:]
	if !isToken(h.method) {
		return badProto("invalid method %q", h.method)
	}
	if len(h.target) == 0 || (h.target[0] != '/' && !bytes.HasPrefix(h.target, []byte("http://")) &&
		!bytes.HasPrefix(h.target, []byte("https://")) && !(len(h.target) == 1 && h.target[0] == '*')) {
		return badProto("invalid request target %q", h.target)
	}
	for _, c := range h.target {
		if c <= ' ' || c == 0x7f {
			return badProto("invalid request target %q", h.target)
		}
	}
	switch string(proto) {
	case "HTTP/1.1":
		h.minor = 1
	case "HTTP/1.0":
		h.minor = 0
	default:
		if bytes.HasPrefix(proto, []byte("HTTP/")) {
			return &protoError{code: http.StatusHTTPVersionNotSupported, msg: fmt.Sprintf("unsupported protocol version %q", proto)}
		}
		return badProto("malformed request line %q", line)
	}
	return nil
}

// fieldCounts is what parseHead's checks across fields need of the fields seen.
type fieldCounts struct {
	hosts, te int  // Host and Transfer-Encoding fields
	keepAlive bool // Connection: keep-alive
}

// parseField parses one header field line into h and f.
func parseField(line []byte, h *reqHead, f *fieldCounts) error {
	if line[0] == ' ' || line[0] == '\t' {
		return badProto("obsolete line folding in header %q", line)
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return badProto("malformed header line %q", line)
	}
	name, value := line[:colon], trimOWS(line[colon+1:])
	if !isToken(name) {
		return badProto("invalid header name %q", name)
	}
	for _, c := range value {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return badProto("invalid value of header %s", name)
		}
	}
	switch {
	case bytes.EqualFold(name, []byte("Host")):
		f.hosts++
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, ok := parseLength(value)
		if !ok {
			return badProto("invalid Content-Length %q", value)
		}
		if h.contentLength >= 0 && h.contentLength != n {
			return badProto("differing Content-Lengths %d and %d", h.contentLength, n)
		}
		h.contentLength = n
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		f.te++
		if !bytes.EqualFold(value, []byte("chunked")) {
			return &protoError{code: http.StatusNotImplemented, msg: fmt.Sprintf("unsupported transfer encoding %q", value)}
		}
		h.chunked = true
	case bytes.EqualFold(name, []byte("Connection")):
		if hasToken(value, "close") {
			h.close = true
		}
		if hasToken(value, "keep-alive") {
			f.keepAlive = true
		}
	case bytes.EqualFold(name, []byte("Expect")):
		if h.minor == 1 {
			if !bytes.EqualFold(value, []byte("100-continue")) {
				return &protoError{code: http.StatusExpectationFailed, msg: fmt.Sprintf("unsupported expectation %q", value)}
			}
			h.expect100 = true
		}
	case bytes.EqualFold(name, []byte(FaultHeader)):
		h.fault = value
	}
	return nil
}

// finishHead checks the fields together: framing, Host, and HTTP/1.0's default close.
func finishHead(h *reqHead, f fieldCounts) error {
	switch {
	case f.te > 1:
		return badProto("more than one Transfer-Encoding header")
	case h.chunked && h.minor == 0:
		return badProto("Transfer-Encoding in an HTTP/1.0 request")
	case h.chunked && h.contentLength >= 0:
		return badProto("both Content-Length and Transfer-Encoding")
	case h.minor == 1 && f.hosts == 0:
		return badProto("missing required Host header")
	case f.hosts > 1:
		return badProto("more than one Host header")
	}
	if h.minor == 0 && !f.keepAlive {
		h.close = true
	}
	return nil
}

// parseLength parses a Content-Length value: decimal digits only, at most 18 of them.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// errBodyTooLarge: the request body is over maxBody bytes.
var errBodyTooLarge = fmt.Errorf("body is over the %d byte limit", maxBody)

// readReqBody reads the body of the request h into dst[:0]: Content-Length bytes, or a chunked
// body and its trailer. A *protoError is a malformed body; other errors are the connection's.
func readReqBody(br *bufio.Reader, h *reqHead, dst []byte) ([]byte, error) {
	dst = dst[:0]
	switch {
	case h.contentLength > maxBody:
		return dst, fmt.Errorf("body of %d bytes is over the %d byte limit", h.contentLength, maxBody)
	case h.contentLength > 0:
		// grow with the bytes that arrive, not to the announced length at once
		n := int(h.contentLength)
		for len(dst) < n {
			if len(dst) == cap(dst) {
				dst = append(dst, make([]byte, min(n-len(dst), max(len(dst), 16<<10)))...)[:len(dst)]
			}
			m, err := io.ReadFull(br, dst[len(dst):min(n, cap(dst))])
			dst = dst[:len(dst)+m]
			if err != nil {
				return dst[:0], fmt.Errorf("read body: %w", err)
			}
		}
		return dst, nil
	case !h.chunked:
		return dst, nil
	}
	cr := httputil.NewChunkedReader(br)
	for {
		if len(dst) > maxBody {
			return dst, errBodyTooLarge
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := cr.Read(dst[len(dst):min(cap(dst), maxBody+1)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return dst, fmt.Errorf("read chunked body: %w", err)
			}
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) {
				return dst, fmt.Errorf("read chunked body: %w", err)
			}
			return dst, badProto("malformed chunked body: %v", err)
		}
	}
	// the trailer: header lines up to a blank line (ignored)
	total, cont := 0, false
	for {
		frag, err := br.ReadSlice('\n')
		total += len(frag)
		if total > maxTrailerBytes {
			return dst, badProto("trailer over %d bytes", maxTrailerBytes)
		}
		if err == bufio.ErrBufferFull {
			cont = true
			continue
		}
		if err != nil {
			return dst, fmt.Errorf("read chunked body trailer: %w", err)
		}
		if !cont && (len(frag) == 1 || (len(frag) == 2 && frag[0] == '\r')) {
			return dst, nil
		}
		cont = false
	}
}
