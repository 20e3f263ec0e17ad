package wire

import "bytes"

// framing tracks HTTP/1.1 response framing over the raw bytes a connection reads, so that each
// socket read can be tagged with the response it belongs to and the body offset it ends at. It
// understands status lines, 1xx interim responses, headers, chunked bodies (with chunk extensions
// and trailers), Content-Length bodies, bodies without a length that end at close, 204/304
// responses, and keep-alive reuse (the next status line starts the next response). Responses to
// HEAD requests are not supported (wirebench never sends HEAD).
//
// It allocates nothing after the first responses: it keeps at most the first 128 bytes of each
// header line, enough for the status code, Content-Length and Transfer-Encoding.
type framing struct {
	state   int
	resp    int64 // ordinal of the current final (non-1xx) response on the connection, from 1
	body    int64 // body bytes of the current response so far
	remain  int64 // bytes left in the current chunk or Content-Length body
	status  int
	chunked bool
	clen    int64 // -1 when none
	line    [128]byte
	nline   int // bytes of the current line (may exceed len(line); only the prefix is kept)
	sizeOK  bool
	bad     bool
	big     bool // bad because the head passed maxHeaderBytes
	h2      bool // bad because a response began with an HTTP/2 frame
	hbytes  int  // bytes of the current head: status lines (interim responses too) and headers, or trailers

	// With Collect set, Feed also appends the body bytes (chunk framing removed) to Body, and
	// the current final response's status line and header lines (each cut at 128 bytes and
	// ended by LF) to Head. The reader consumes Body and may truncate it.
	Collect bool
	Body    []byte
	Head    []byte

	// With TrackRuns set, Feed appends to Runs where each stretch of body bytes begins in the
	// connection's byte stream, so a body offset maps to a stream offset (chunk framing sits
	// between the stretches). The caller consumes Runs and may truncate it.
	TrackRuns bool
	Runs      []bodyRun
	stream    int64 // bytes fed so far
}

// bodyRun says that body byte Body of response Resp is stream byte Stream, and the body bytes
// after it follow it in the stream up to the next run.
type bodyRun struct {
	Resp, Body, Stream int64
}

const (
	fsStatus    = iota // expecting a status line (or between responses)
	fsHeader           // header lines
	fsChunkSize        // chunk-size line
	fsChunkData        // chunk data
	fsChunkCRLF        // CRLF after chunk data
	fsTrailer          // trailer lines after the last chunk
	fsLength           // Content-Length body
	fsClose            // body until the connection closes
	fsDone             // response complete; next bytes start the next response
)

// Response returns the ordinal of the current (or last completed) final response, from 1; 0
// before the first.
func (f *framing) Response() int64 { return f.resp }

// BodyOffset returns the body bytes of the current response seen so far.
func (f *framing) BodyOffset() int64 { return f.body }

// Done reports whether the current response is complete (its framing ended).
func (f *framing) Done() bool { return f.state == fsDone || (f.state == fsStatus && f.resp > 0) }

// ClosesAtEOF reports whether the current body has no length and ends when the connection closes.
func (f *framing) ClosesAtEOF() bool { return f.state == fsClose }

// Status returns the status code of the current response (0 before the first status line).
func (f *framing) Status() int { return f.status }

// InHeaders reports whether the tracker is inside a status line or headers.
func (f *framing) InHeaders() bool { return f.state == fsStatus || f.state == fsHeader }

// Bad reports that the bytes did not parse as HTTP/1.1 responses, or that a head passed
// maxHeaderBytes (the tracker then stops).
func (f *framing) Bad() bool { return f.bad }

// HTTP2 reports that the tracker stopped because a response began with an HTTP/2 SETTINGS or
// GOAWAY frame: an HTTP/2-only server answered an HTTP/1.1 request.
func (f *framing) HTTP2() bool { return f.h2 }

// TooLarge reports that the tracker stopped because a response's head (status lines and
// headers, interim responses included) or its trailers passed maxHeaderBytes.
func (f *framing) TooLarge() bool { return f.big }

// HeadOpen returns the ordinal a response will have (Response) whose status line or headers have
// begun and not ended, else 0: a server that stalls inside its headers has begun to answer.
func (f *framing) HeadOpen() int64 {
	switch {
	case f.state == fsHeader && f.status >= 200:
		return f.resp
	case f.state == fsHeader, f.state == fsStatus && f.nline > 0:
		return f.resp + 1
	}
	return 0
}

// Feed consumes bytes read from the connection. It reports whether the headers of a final
// response completed inside p.
func (f *framing) Feed(p []byte) (headersDone bool) {
	end := f.stream + int64(len(p))
	defer func() { f.stream = end }()
	for len(p) > 0 && !f.bad {
		switch f.state {
		case fsDone:
			f.state = fsStatus
			f.nline, f.hbytes = 0, 0
		case fsStatus, fsHeader, fsChunkSize, fsTrailer, fsChunkCRLF:
			i := bytes.IndexByte(p, '\n')
			part := p
			if i >= 0 {
				part = p[:i]
			}
			if f.nline < len(f.line) {
				copy(f.line[f.nline:], part)
			}
			f.nline += len(part)
			if !f.bounded(len(part) + min(i+1, 1)) {
				return headersDone
			}
			if f.state == fsStatus && f.nline >= http2FrameHeader && f.nline-len(part) < http2FrameHeader && http2Frame(f.line[:http2FrameHeader]) {
				f.bad, f.h2 = true, true
				return headersDone
			}
			if i < 0 {
				if f.state == fsChunkCRLF && f.nline > 1 {
					f.bad = true
				}
				return headersDone
			}
			p = p[i+1:]
			n := f.nline
			if n > len(f.line) {
				n = len(f.line)
			}
			line := f.line[:n]
			if len(line) > 0 && line[len(line)-1] == '\r' && f.nline <= len(f.line) {
				line = line[:len(line)-1]
			}
			long := f.nline > len(f.line)
			f.nline = 0
			if f.lineDone(line, long) {
				headersDone = true
			}
		case fsChunkData, fsLength:
			n := int64(len(p))
			if n > f.remain {
				n = f.remain
			}
			f.run(end - int64(len(p)))
			f.remain -= n
			f.body += n
			if f.Collect {
				f.Body = append(f.Body, p[:n]...)
			}
			p = p[n:]
			if f.remain == 0 {
				if f.state == fsChunkData {
					f.state = fsChunkCRLF
				} else {
					f.state = fsDone
				}
			}
		case fsClose:
			f.run(end - int64(len(p)))
			f.body += int64(len(p))
			if f.Collect {
				f.Body = append(f.Body, p...)
			}
			return headersDone
		}
	}
	return headersDone
}

// http2FrameHeader is the length of an HTTP/2 frame header: length (3), type, flags, stream (4).
const http2FrameHeader = 9

// http2Frame reports whether b (9 bytes) is the header of an HTTP/2 SETTINGS or GOAWAY frame on
// stream 0 shorter than 64 KiB: how an HTTP/2 server begins (or ends) a connection. No status
// line begins with a NUL byte.
func http2Frame(b []byte) bool {
	return b[0] == 0 && (b[3] == 0x4 || b[3] == 0x7) && b[5]|b[6]|b[7]|b[8] == 0
}

// maxHeaderBytes bounds a response's head (status lines, interim responses included, and
// headers) and, separately, its trailers: a server whose headers never end is cut there (kind
// too_large) instead of being read for ever. net/http's default is 1 MiB; LLM servers send
// well under 1 KiB.
const maxHeaderBytes = 64 << 10

// maxChunkLine bounds a chunk-size line (hex size and extensions).
const maxChunkLine = 1024

// bounded counts n more bytes of a line; it stops the tracker (bad) when a head or trailers
// pass maxHeaderBytes or a chunk-size line passes maxChunkLine, and then reports false.
func (f *framing) bounded(n int) bool {
	switch f.state {
	case fsStatus, fsHeader, fsTrailer:
		f.hbytes += n
		if f.hbytes > maxHeaderBytes {
			f.bad, f.big = true, true
		}
	case fsChunkSize:
		if f.nline > maxChunkLine {
			f.bad = true
		}
	}
	return !f.bad
}

// run records that the current body offset sits at stream offset at.
func (f *framing) run(at int64) {
	if f.TrackRuns {
		f.Runs = append(f.Runs, bodyRun{Resp: f.resp, Body: f.body, Stream: at})
	}
}

// lineDone handles one complete line (without its CRLF); it reports a final response's headers
// completing. It is the framing's state machine, one case per state, kept in one function over
// the 80-line rule: a reader checks each transition against RFC 9112 in one place, and the
// chunk-size case runs once per chunk on the read path, where a call per state would be
// overhead for no gain.
func (f *framing) lineDone(line []byte, long bool) bool {
	switch f.state {
	case fsStatus:
		if len(line) == 0 && !long {
			return false // tolerate stray blank lines between responses, as net/http does
		}
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			f.bad = true
			return false
		}
		code := 0
		for _, c := range line[9:12] {
			if c < '0' || c > '9' {
				f.bad = true
				return false
			}
			code = code*10 + int(c-'0')
		}
		f.status = code
		f.chunked, f.clen = false, -1
		f.state = fsHeader
		if code >= 200 {
			f.resp++
			f.body = 0
			if f.Collect {
				f.Head = append(append(f.Head[:0], line...), '\n')
			}
		}
	case fsHeader:
		if len(line) == 0 && !long {
			return f.headersEnd()
		}
		if f.Collect && f.status >= 200 {
			f.Head = append(append(f.Head, line...), '\n')
		}
		if long {
			return false
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			return false
		}
		name, value := line[:i], bytes.TrimSpace(line[i+1:])
		switch {
		case asciiEqualFold(name, "transfer-encoding"):
			// The last coding decides: chunked must be last for a chunked body.
			v := value
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				v = bytes.TrimSpace(v[j+1:])
			}
			f.chunked = asciiEqualFold(v, "chunked")
		case asciiEqualFold(name, "content-length"):
			var n int64
			if len(value) == 0 || len(value) > 18 {
				f.bad = true
				return false
			}
			for _, c := range value {
				if c < '0' || c > '9' {
					f.bad = true
					return false
				}
				n = n*10 + int64(c-'0')
			}
			f.clen = n
		}
	case fsChunkSize:
		if long {
			f.bad = true
			return false
		}
		if j := bytes.IndexByte(line, ';'); j >= 0 {
			line = line[:j] // chunk extensions are ignored
		}
		line = bytes.TrimRight(line, " \t")
		if len(line) == 0 || len(line) > 15 {
			f.bad = true
			return false
		}
		var n int64
		for _, c := range line {
			d, ok := hexDigit(c)
			if !ok {
				f.bad = true
				return false
			}
			n = n<<4 | int64(d)
		}
		if n == 0 {
			f.state = fsTrailer
		} else {
			f.remain = n
			f.state = fsChunkData
		}
	case fsChunkCRLF:
		if len(line) != 0 || long {
			f.bad = true
			return false
		}
		f.state = fsChunkSize
	case fsTrailer:
		if len(line) == 0 && !long {
			f.state = fsDone
		}
	}
	return false
}

func (f *framing) headersEnd() bool {
	if f.status >= 200 {
		f.hbytes = 0 // trailers have a bound of their own
	}
	switch {
	case f.status < 200:
		f.state = fsStatus // interim response: the final one follows
		return false
	case f.status == 204 || f.status == 304:
		f.state = fsDone
	case f.chunked:
		f.state = fsChunkSize
	case f.clen == 0:
		f.state = fsDone
	case f.clen > 0:
		f.remain = f.clen
		f.state = fsLength
	default:
		f.state = fsClose
	}
	return true
}

// asciiEqualFold reports whether b and s are equal ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lowerASCII(b[i]) != lowerASCII(s[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
