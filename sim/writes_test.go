package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sysWrite is one Write call of the server on a connection: its bytes and when it began and
// returned (time.Now().UnixNano(), the clock of the x-sim send stamps).
type sysWrite struct {
	b          []byte
	start, end int64
}

// recConn records the server's writes on one connection.
type recConn struct {
	net.Conn
	mu     sync.Mutex
	writes []sysWrite
}

func (c *recConn) Write(b []byte) (int, error) {
	start := time.Now().UnixNano()
	n, err := c.Conn.Write(b)
	end := time.Now().UnixNano()
	c.mu.Lock()
	c.writes = append(c.writes, sysWrite{b: bytes.Clone(b), start: start, end: end})
	c.mu.Unlock()
	return n, err
}

// recListener hands the server connections that record their writes.
type recListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*recConn
}

func (l *recListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &recConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// lastWrites returns the writes of the last accepted connection.
func (l *recListener) lastWrites(t *testing.T) []sysWrite {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) == 0 {
		t.Fatal("no connection accepted")
	}
	c := l.conns[len(l.conns)-1]
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sysWrite(nil), c.writes...)
}

// startRecording serves cfg through the fast server (Serve) or through net/http with Handler,
// on a listener whose connections record every write.
func startRecording(t *testing.T, cfg Config, netHTTP bool) (*recListener, string) {
	t.Helper()
	rl := &recListener{Listener: listenLocal(t)}
	serve(t, cfg, rl, netHTTP)
	return rl, rl.Addr().String()
}

// writeEvents splits the recorded writes of one chunked SSE response into the SSE events each
// write carried. The response head may share the first write with a chunk; every write must
// carry whole HTTP chunks, and the terminating zero chunk must come last.
func writeEvents(writes []sysWrite) ([][]event, error) {
	out := make([][]event, len(writes))
	head, ended := false, false
	for i, w := range writes {
		b := w.b
		if ended {
			return out, fmt.Errorf("write %d comes after the terminating chunk: %q", i, b)
		}
		if !head {
			j := bytes.Index(b, []byte("\r\n\r\n"))
			if j < 0 {
				return out, fmt.Errorf("write %d: the response head is not in one write: %q", i, b)
			}
			if !bytes.Contains(b[:j], []byte("Transfer-Encoding: chunked")) {
				return out, fmt.Errorf("response is not chunked: %q", b[:j])
			}
			head, b = true, b[j+4:]
		}
		var payload []byte
		for len(b) > 0 {
			j := bytes.Index(b, []byte("\r\n"))
			if j < 0 {
				return out, fmt.Errorf("write %d: an HTTP chunk's size line is cut: %q", i, b)
			}
			n, err := strconv.ParseInt(string(b[:j]), 16, 64)
			if err != nil {
				return out, fmt.Errorf("write %d: bad chunk size line %q", i, b[:j])
			}
			b = b[j+2:]
			if n == 0 {
				if string(b) != "\r\n" {
					return out, fmt.Errorf("write %d: %q after the terminating chunk", i, b)
				}
				ended, b = true, nil
				break
			}
			if int64(len(b)) < n+2 || string(b[n:n+2]) != "\r\n" {
				return out, fmt.Errorf("write %d: an HTTP chunk of %d bytes does not end in this write", i, n)
			}
			payload, b = append(payload, b[:n]...), b[n+2:]
		}
		evs, err := parseSSE(payload)
		if err != nil {
			return out, fmt.Errorf("write %d does not carry whole SSE events: %v: %q", i, err, payload)
		}
		out[i] = evs
	}
	if !ended {
		return out, errors.New("no terminating chunk")
	}
	return out, nil
}

// writtenBytes is the bytes of all writes.
func writtenBytes(writes []sysWrite) int {
	n := 0
	for _, w := range writes {
		n += len(w.b)
	}
	return n
}

// oneEventPerWrite is the check of the default: no write carries more than one SSE event.
func oneEventPerWrite(perWrite [][]event) error {
	for i, evs := range perWrite {
		if len(evs) > 1 {
			var names []string
			for _, e := range evs {
				names = append(names, eventName(e))
			}
			return fmt.Errorf("write %d of %d carries %d events: %s", i, len(perWrite), len(evs), strings.Join(names, ", "))
		}
	}
	return nil
}

// eventName names an event for messages: content (any event carrying tokens: text,
// reasoning, tool-call arguments), role, finish, usage, x-sim, [DONE], or a typed event's type.
func eventName(e event) string {
	switch {
	case e.data == "[DONE]":
		return "[DONE]"
	case e.data == "":
		return "x-sim"
	case strings.HasSuffix(e.name, ".delta"), e.name == "content_block_delta" && !strings.Contains(e.data, `"signature_delta"`):
		return "content"
	case e.name != "":
		return e.name
	}
	var c struct {
		Choices []struct {
			Text  string `json:"text"`
			Delta struct {
				Role             string `json:"role"`
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
				ToolCalls        []any  `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage any `json:"usage"`
	}
	json.Unmarshal([]byte(e.data), &c)
	switch {
	case c.Usage != nil:
		return "usage"
	case len(c.Choices) != 1:
		return "?"
	case c.Choices[0].FinishReason != nil:
		return "finish"
	case c.Choices[0].Text != "" || c.Choices[0].Delta.Content != "" || c.Choices[0].Delta.ReasoningContent != "" || len(c.Choices[0].Delta.ToolCalls) > 0:
		return "content"
	case c.Choices[0].Delta.Role != "":
		return "role"
	}
	return "?"
}

// TestEachEventOwnWrite: by default every SSE event of a stream (role, each content chunk,
// finish, usage, x-sim, [DONE]) leaves in its own write system call and its own HTTP chunk, in
// order, on both server paths, and each content chunk's sent_ns is taken after the previous
// write returned and (StampLead) before its own write began, its sent_end_ns after its own
// write returned and before the next began. With CoalesceTail the last content event shares
// its write with the whole tail, which the same check must catch, and the chunks of that write
// have no sent_end_ns (the x-sim comment left in it).
func TestEachEventOwnWrite(t *testing.T) {
	configs := []struct {
		name string
		cfg  func(*Config)
	}{
		{"zero-latency", nil}, // every chunk ready at once: one write each all the same
		{"fixed", func(c *Config) { c.TTFT, c.ITL = 2*time.Millisecond, time.Millisecond }},
		{"stamp-lead", func(c *Config) { c.TTFT, c.ITL, c.StampLead = 2*time.Millisecond, time.Millisecond, time.Millisecond }},
	}
	// every config has one reasoning token: chat, responses and messages answers begin with it
	requests := []struct {
		name, path, body string
		api              api
		want             []string // the events, in order
	}{
		{"completions-usage", "/v1/completions", `{"model":"sim","prompt":"a b c","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`, apiCompletions,
			[]string{"content", "content", "content", "content", "finish", "usage", "x-sim", "[DONE]"}},
		{"chat", "/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`, apiChat,
			[]string{"role", "content", "content", "content", "finish", "x-sim", "[DONE]"}},
		// a target with a query string goes through the fast server's net/http-style fallback
		{"fallback", "/v1/completions?x=1", `{"model":"sim","prompt":"a","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`, apiCompletions,
			[]string{"content", "content", "finish", "usage", "x-sim", "[DONE]"}},
		{"responses", "/v1/responses", `{"model":"sim","input":"hi","max_output_tokens":3,"stream":true}`, apiResponses,
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "content",
				"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
				"response.output_item.added", "response.content_part.added", "content", "content",
				"response.output_text.done", "response.content_part.done", "response.output_item.done", "x-sim", "response.completed"}},
		{"messages-tools", "/v1/messages", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"tools":[{"name":"f"}]}`, apiMessages,
			[]string{"message_start", "ping", "content_block_start", "content", "content_block_delta", "content_block_stop",
				"content_block_start", "content", "content", "content_block_stop", "message_delta", "x-sim", "message_stop"}},
	}
	for _, server := range []string{"fast", "net-http"} {
		for _, c := range configs {
			for _, r := range requests {
				for _, coalesce := range []bool{false, true} {
					name := server + "/" + c.name + "/" + r.name
					if coalesce {
						name += "/coalesce-tail"
					}
					t.Run(name, func(t *testing.T) {
						cfg := zeroConfig()
						if c.cfg != nil {
							c.cfg(&cfg)
						}
						cfg.CoalesceTail, cfg.ReasoningTokens = coalesce, 1
						rl, addr := startRecording(t, cfg, server == "net-http")
						w := rawPost(t, addr, r.path, r.body)
						if w.status != 200 || !w.complete {
							t.Fatalf("status %d, complete %v:\n%s", w.status, w.complete, w.body)
						}
						checkStream(t, w.body, r.api)
						evs, _ := parseSSE(w.body)
						truth := groundTruth(t, evs)
						writes := rl.lastWrites(t)
						perWrite, err := writeEvents(writes)
						if total := writtenBytes(writes); err != nil && server == "net-http" && coalesce && total > 4096 {
							// net/http writes through a 4 KiB bufio.Writer: a larger write (here the
							// whole coalesced stream) leaves in several system calls
							t.Skipf("net/http split a response of %d bytes: %v", total, err)
						}
						if err != nil {
							t.Fatal(err)
						}
						var got []string
						var contentWrite []int // index of the write of each content chunk
						for i, evs := range perWrite {
							for _, e := range evs {
								got = append(got, eventName(e))
								if got[len(got)-1] == "content" {
									contentWrite = append(contentWrite, i)
								}
							}
						}
						if strings.Join(got, " ") != strings.Join(r.want, " ") {
							t.Fatalf("events %v; want %v", got, r.want)
						}
						err = oneEventPerWrite(perWrite)
						if !coalesce && err != nil {
							t.Errorf("every event should have its own write: %v", err)
						}
						if coalesce {
							if err == nil {
								t.Errorf("--coalesce-tail: every event had its own write; want the last content event with the tail")
							}
							last := perWrite[contentWrite[len(contentWrite)-1]]
							if n := len(last); eventName(last[n-1]) != r.want[len(r.want)-1] {
								var names []string
								for _, e := range last {
									names = append(names, eventName(e))
								}
								t.Errorf("--coalesce-tail: the last content event's write carries %v; want it to end with the tail and the terminal event", names)
							}
						}
						// sent_ns: taken after the write before the chunk's own returned, and at
						// least StampLead before that write began
						if len(truth.SentNs) != len(contentWrite) {
							t.Fatalf("%d sent_ns for %d content events", len(truth.SentNs), len(contentWrite))
						}
						for j, sent := range truth.SentNs {
							wi := contentWrite[j]
							if lead := writes[wi].start - sent; lead < int64(cfg.StampLead) {
								t.Errorf("chunk %d: stamped %d ns before its write began; want at least the stamp lead %v", j, lead, cfg.StampLead)
							}
							if wi > 0 && sent < writes[wi-1].end {
								t.Errorf("chunk %d: stamped %d ns before the previous write returned; want the stamp just before its own write", j, writes[wi-1].end-sent)
							}
						}
						checkSentEnd(t, truth, contentWrite, writes)
					})
				}
			}
		}
	}
}

// checkSentEnd checks the x-sim comment's sent_end_ns against the recorded writes: one per
// content chunk whose write came before the comment's, each taken after that write returned and
// before the next write began.
func checkSentEnd(t *testing.T, truth xsim, contentWrite []int, writes []sysWrite) {
	t.Helper()
	xsimWrite := len(writes) - 1 // the comment leaves in the last write or the one before
	for xsimWrite > 0 && !bytes.Contains(writes[xsimWrite].b, []byte(": x-sim ")) {
		xsimWrite--
	}
	want := 0
	for _, wi := range contentWrite {
		if wi < xsimWrite {
			want++
		}
	}
	if len(truth.SentEndNs) != want {
		t.Fatalf("%d sent_end_ns for %d content events written before the x-sim comment", len(truth.SentEndNs), want)
	}
	for j, end := range truth.SentEndNs {
		wi := contentWrite[j]
		if end < writes[wi].end {
			t.Errorf("chunk %d: sent_end_ns %d ns before its write returned; want it after", j, writes[wi].end-end)
		}
		if end > writes[wi+1].start {
			t.Errorf("chunk %d: sent_end_ns %d ns after the next write began; want it just after its own", j, end-writes[wi+1].start)
		}
		if end < truth.SentNs[j] {
			t.Errorf("chunk %d: sent_end_ns %d before sent_ns %d", j, end, truth.SentNs[j])
		}
	}
}
