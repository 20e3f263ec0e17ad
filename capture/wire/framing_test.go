package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// frame builds a raw HTTP/1.1 response carrying body, framed as chosen by mode (0 chunked with
// chunk sizes from sizes, 1 Content-Length, 2 close-delimited), optionally preceded by a 100
// Continue and with chunk extensions and trailers. off[i] is the body offset after raw[:i].
func frame(body, sizes []byte, mode, flags uint8) (raw []byte, off []int64) {
	var b bytes.Buffer
	var offs []int64
	put := func(s string, bodyBytes bool) {
		for i := range len(s) {
			b.WriteByte(s[i])
			n := int64(0)
			if len(offs) > 0 {
				n = offs[len(offs)-1]
			}
			if bodyBytes {
				n++
			}
			offs = append(offs, n)
		}
	}
	if flags&1 != 0 {
		put("HTTP/1.1 100 Continue\r\n\r\n", false)
	}
	put("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", false)
	switch mode % 3 {
	case 0:
		put("Transfer-Encoding: chunked\r\n\r\n", false)
		rest := body
		for i := 0; len(rest) > 0; i++ {
			n := 1
			if len(sizes) > 0 {
				n = int(sizes[i%len(sizes)])%64 + 1
			}
			n = min(n, len(rest))
			ext := ""
			if flags&2 != 0 && i%2 == 0 {
				ext = `;name="va;l"`
			}
			hex := fmt.Sprintf("%x", n)
			if flags&8 != 0 {
				hex = fmt.Sprintf("%X", n)
			}
			put(hex+ext+"\r\n", false)
			put(string(rest[:n]), true)
			put("\r\n", false)
			rest = rest[n:]
		}
		put("0\r\n", false)
		if flags&4 != 0 {
			put("X-Trailer: 1\r\nX-Other: two\r\n", false)
		}
		put("\r\n", false)
	case 1:
		put(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)), false)
		put(string(body), true)
	case 2:
		put("Connection: close\r\n\r\n", false)
		put(string(body), true)
	}
	return b.Bytes(), append([]int64{0}, offs...)
}

// FuzzFraming checks that the framing tracker agrees with net/http on randomly framed bodies:
// the body length, the body offset after every prefix, the end of the response and, on a
// keep-alive connection, the next response.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("data: x\n\n"), []byte{3, 1, 60}, uint8(0), uint8(7))
	f.Add([]byte("hello world"), []byte{}, uint8(1), uint8(1))
	f.Add([]byte("abc"), []byte{0}, uint8(2), uint8(0))
	f.Add([]byte(""), []byte{5}, uint8(0), uint8(4))
	f.Fuzz(func(t *testing.T, body, sizes []byte, mode, flags uint8) {
		raw, off := frame(body, sizes, mode, flags)
		br := bufio.NewReader(bytes.NewReader(raw))
		resp, err := http.ReadResponse(br, nil)
		for err == nil && resp.StatusCode < 200 {
			resp, err = http.ReadResponse(br, nil) // interim responses, as the Transport does
		}
		if err != nil {
			t.Fatalf("net/http: %v on %q", err, raw)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("net/http read %q, %v; want %q", got, err, body)
		}
		var fr framing
		for i := range raw {
			fr.Feed(raw[i : i+1])
			if fr.BodyOffset() != off[i+1] && fr.Response() == 1 {
				t.Fatalf("after %d of %d bytes: BodyOffset() = %d; want %d (raw %q)", i+1, len(raw), fr.BodyOffset(), off[i+1], raw)
			}
			if done := fr.Done(); done && i+1 < len(raw) {
				t.Fatalf("after %d of %d bytes: Done() = true; want false (raw %q)", i+1, len(raw), raw)
			}
		}
		if fr.Bad() || fr.Response() != 1 || fr.BodyOffset() != int64(len(body)) {
			t.Fatalf("Bad %v Response %d BodyOffset %d; want false 1 %d (raw %q)", fr.Bad(), fr.Response(), fr.BodyOffset(), len(body), raw)
		}
		if mode%3 == 2 {
			return // close-delimited: the response ends only with the connection
		}
		if !fr.Done() {
			t.Fatalf("Done() = false at the end of %q", raw)
		}
		// Keep-alive: the next response on the same connection, fed in one piece.
		raw2, _ := frame([]byte("next"), nil, 1, 0)
		fr.Feed(raw2)
		if fr.Response() != 2 || fr.BodyOffset() != 4 || !fr.Done() {
			t.Errorf("second response: Response %d BodyOffset %d Done %v; want 2 4 true", fr.Response(), fr.BodyOffset(), fr.Done())
		}
	})
}

func TestFramingTable(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		resp    int64
		body    int64
		done    bool
		bad     bool
		headers int // Feed calls that reported headers complete (fed in one piece: 0 or 1)
	}{
		{"204 has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", 1, 0, true, false, 1},
		{"304 has no body", "HTTP/1.1 304 Not Modified\r\n\r\n", 1, 0, true, false, 1},
		{"103 then 200", "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 1, 2, true, false, 1},
		{"TE gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 1, 3, true, false, 1},
		{"close-delimited", "HTTP/1.1 200 OK\r\n\r\nabcdef", 1, 6, false, false, 1},
		{"bad status line", "SSH-2.0-OpenSSH\r\n", 0, 0, false, true, 0},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 1, 0, false, true, 1},
		{"missing chunk CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n", 1, 1, false, true, 1},
		{"long header line kept short", "HTTP/1.1 200 OK\r\nX-Long: " + string(bytes.Repeat([]byte("y"), 500)) + "\r\nContent-Length: 1\r\n\r\nz", 1, 1, true, false, 1},
	}
	for _, tt := range tests {
		var fr framing
		h := 0
		if fr.Feed([]byte(tt.raw)) {
			h = 1
		}
		if fr.Response() != tt.resp || fr.BodyOffset() != tt.body || fr.Done() != tt.done || fr.Bad() != tt.bad || h != tt.headers {
			t.Errorf("%s: Response %d BodyOffset %d Done %v Bad %v headers %d; want %d %d %v %v %d", tt.name,
				fr.Response(), fr.BodyOffset(), fr.Done(), fr.Bad(), h, tt.resp, tt.body, tt.done, tt.bad, tt.headers)
		}
	}
}

// TestStreamEndMapsBodyToStream reads two chunked responses and a Content-Length one through a
// stampedConn in pieces of every size and checks that each body offset maps to the stream offset of the
// same byte (what the packet tap join relies on).
func TestStreamEndMapsBodyToStream(t *testing.T) {
	bodies := []string{"data: a\n\ndata: bb\n\n", "data: [DONE]\n\n", "{\"x\":1}"}
	raw := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"9\r\ndata: a\n\n\r\na\r\ndata: bb\n\n\r\n0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\ne;ext=1\r\ndata: [DONE]\n\n\r\n0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"x\":1}"
	for size := 1; size <= len(raw); size++ {
		client, server := net.Pipe()
		go func() {
			for i := 0; i < len(raw); i += size {
				server.Write([]byte(raw[i:min(i+size, len(raw))]))
			}
			server.Close()
		}()
		c := wrap(client, true, &counters{})
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		for r, body := range bodies {
			for end := int64(1); end <= int64(len(body)); end++ {
				got, ok := c.streamEnd(int64(r+1), end)
				if !ok || got < 1 || got > int64(len(raw)) || raw[got-1] != body[end-1] {
					t.Fatalf("size %d: streamEnd(resp %d, %d) = %d, %v; want the stream offset past %q", size, r+1, end, got, ok, body[end-1])
				}
			}
		}
		client.Close()
	}
}

// The tracker stops (Bad, TooLarge) on a head or trailers over maxHeaderBytes, interim
// responses included, and on an overlong chunk-size line; HeadOpen names a response whose head
// has begun and not ended.
func TestFramingBounds(t *testing.T) {
	pad := func(n int) string { return "X-Pad: " + string(bytes.Repeat([]byte("x"), n)) + "\r\n" }
	many := func(line string, total int) string {
		var b bytes.Buffer
		for b.Len() < total {
			b.WriteString(line)
		}
		return b.String()
	}
	tests := []struct {
		name      string
		raw       string
		bad, big  bool
		headOpen  int64
		responses int64
	}{
		{"status line only", "HTTP/1.1 200 OK\r\n", false, false, 1, 1},
		{"half a status line", "HTTP/1.1 2", false, false, 1, 0},
		{"headers within the bound", "HTTP/1.1 200 OK\r\n" + many(pad(100), maxHeaderBytes-200) + "\r\n", false, false, 0, 1},
		{"endless headers", "HTTP/1.1 200 OK\r\n" + many(pad(100), maxHeaderBytes+1), true, true, 1, 1},
		{"endless status line", many("x", maxHeaderBytes+1), true, true, 1, 0},
		{"endless interim responses", many("HTTP/1.1 100 Continue\r\n\r\n", maxHeaderBytes+1), true, true, 1, 0},
		{"interim then a stall", "HTTP/1.1 100 Continue\r\n\r\n", false, false, 0, 0},
		{"trailers have their own bound", "HTTP/1.1 200 OK\r\n" + many(pad(100), maxHeaderBytes-200) + "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n" + many(pad(100), maxHeaderBytes-200) + "\r\n", false, false, 0, 1},
		{"endless trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + many(pad(100), maxHeaderBytes+1), true, true, 0, 1},
		{"endless chunk-size line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1" + many(";ext=1", 2*maxChunkLine), true, false, 0, 1},
	}
	for _, tt := range tests {
		var f framing
		f.Collect = true
		for p := []byte(tt.raw); len(p) > 0; p = p[min(len(p), 1000):] {
			f.Feed(p[:min(len(p), 1000)])
		}
		if f.Bad() != tt.bad || f.TooLarge() != tt.big || f.HeadOpen() != tt.headOpen || f.Response() != tt.responses {
			t.Errorf("%s: Bad %v TooLarge %v HeadOpen %d Response %d; want %v %v %d %d", tt.name, f.Bad(), f.TooLarge(), f.HeadOpen(), f.Response(), tt.bad, tt.big, tt.headOpen, tt.responses)
		}
		if len(f.Head) > maxHeaderBytes {
			t.Errorf("%s: Head holds %d bytes; want at most %d", tt.name, len(f.Head), maxHeaderBytes)
		}
	}
}
