package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt")

// zeroConfig is a simulator with no latency at all: responses depend on nothing but the request.
func zeroConfig() Config {
	return Config{Models: []string{"sim", "other"}, FaultSeed: 1, ShutdownGrace: time.Second}
}

// startServer serves cfg on 127.0.0.1 and returns the server and its address; it is shut down
// when the test ends.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	ln := listenLocal(t)
	return serve(t, cfg, ln, false), ln.Addr().String()
}

// listenLocal listens on a free port of 127.0.0.1.
func listenLocal(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve serves cfg on ln through the fast server (Serve) or, with netHTTP, through net/http and
// Handler (the server Serve replaced); either stops when the test ends.
func serve(t testing.TB, cfg Config, ln net.Listener, netHTTP bool) *Server {
	t.Helper()
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if netHTTP {
		hs := &http.Server{Handler: srv.Handler(), ConnState: srv.ConnState}
		go hs.Serve(ln)
		t.Cleanup(func() { hs.Close(); srv.Close() })
		return srv
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		srv.Close()
	})
	return srv
}

// wire is what a client sees of one exchange over a raw TCP connection.
type wire struct {
	status   int
	head     string // status line and headers as sent
	body     []byte // de-chunked body
	complete bool   // the body ended properly (final zero chunk or full Content-Length)
	elapsed  time.Duration
}

// rawPost sends one HTTP/1.1 request with Connection: close and reads every byte until EOF.
func rawPost(t testing.TB, addr, path, body string, header ...string) wire {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", path, len(body))
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", header[i], header[i+1])
	}
	req.WriteString("\r\n" + body)
	start := time.Now()
	if _, err := io.WriteString(c, req.String()); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read response: %v", err)
	}
	w := wire{elapsed: time.Since(start)}
	i := bytes.Index(all, []byte("\r\n\r\n"))
	if i < 0 {
		t.Fatalf("no header end in %q", all)
	}
	w.head, all = string(all[:i+2]), all[i+4:]
	if _, err := fmt.Sscanf(w.head, "HTTP/1.1 %d", &w.status); err != nil {
		t.Fatalf("status line of %q: %v", w.head, err)
	}
	if strings.Contains(strings.ToLower(w.head), "transfer-encoding: chunked") {
		w.body, w.complete = dechunk(t, all)
	} else {
		w.body = all
		if m := regexp.MustCompile(`(?i)content-length: (\d+)`).FindStringSubmatch(w.head); m != nil {
			n, _ := strconv.Atoi(m[1])
			w.complete = n == len(all)
		}
	}
	return w
}

// dechunk decodes HTTP/1.1 chunked framing strictly; complete is false when the final
// zero-length chunk never came (a dropped connection).
func dechunk(t testing.TB, b []byte) (body []byte, complete bool) {
	t.Helper()
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 0 {
			return body, false
		}
		n, err := strconv.ParseInt(string(b[:i]), 16, 64)
		if err != nil {
			t.Fatalf("bad chunk size line %q", b[:i])
		}
		b = b[i+2:]
		if n == 0 {
			return body, bytes.Equal(b, []byte("\r\n"))
		}
		if int64(len(b)) < n+2 {
			return append(body, b...), false
		}
		if string(b[n:n+2]) != "\r\n" {
			t.Fatalf("chunk of %d bytes not followed by CRLF", n)
		}
		body, b = append(body, b[:n]...), b[n+2:]
	}
	return body, false
}

// event is one strictly parsed SSE event.
type event struct {
	name     string // the event: field (typed APIs), "" without one
	data     string
	comments []string
}

// parseSSE parses an SSE body strictly: every line is "event: ...", "data: ..." or
// ": comment", every event ends with a blank line, every data payload other than [DONE] is a
// JSON object (whose "type" is the event's name when it has one), and an event has at most
// one event and one data line.
func parseSSE(body []byte) ([]event, error) {
	var evs []event
	var cur event
	open := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case l == "":
			if !open {
				return evs, fmt.Errorf("line %d: empty event", line)
			}
			if cur.name != "" {
				var typed struct {
					Type string `json:"type"`
				}
				if cur.data == "" || json.Unmarshal([]byte(cur.data), &typed) != nil || typed.Type != cur.name {
					return evs, fmt.Errorf("line %d: event %q carries data %q; want a JSON object of that type", line, cur.name, cur.data)
				}
			}
			evs, cur, open = append(evs, cur), event{}, false
		case strings.HasPrefix(l, ": "):
			cur.comments, open = append(cur.comments, l[2:]), true
		case strings.HasPrefix(l, "event: "):
			if cur.name != "" || cur.data != "" {
				return evs, fmt.Errorf("line %d: an event line inside an event (missing blank line?)", line)
			}
			cur.name, open = l[7:], true
		case strings.HasPrefix(l, "data: "):
			if cur.data != "" {
				return evs, fmt.Errorf("line %d: second data line in one event (missing blank line?)", line)
			}
			cur.data, open = l[6:], true
			if cur.data != "[DONE]" && !json.Valid([]byte(cur.data)) {
				return evs, fmt.Errorf("line %d: invalid JSON %q", line, cur.data)
			}
		default:
			return evs, fmt.Errorf("line %d: not an SSE field: %q", line, l)
		}
	}
	if open {
		return evs, errors.New("last event has no blank line")
	}
	if !bytes.HasSuffix(body, []byte("\n")) && len(body) > 0 {
		return evs, errors.New("body does not end with a newline")
	}
	return evs, nil
}

// xsim is the ground-truth comment.
type xsim struct {
	QueueNs   int64   `json:"queue_ns"`
	PrefillNs int64   `json:"prefill_ns"`
	DecodeNs  int64   `json:"decode_ns"`
	SentNs    []int64 `json:"sent_ns"`
	SentEndNs []int64 `json:"sent_end_ns"`
	Model     string  `json:"model"`
}

// groundTruth finds the x-sim comment in events.
func groundTruth(t testing.TB, evs []event) xsim {
	t.Helper()
	for _, e := range evs {
		for _, c := range e.comments {
			if rest, ok := strings.CutPrefix(c, "x-sim "); ok {
				var x xsim
				d := json.NewDecoder(strings.NewReader(rest))
				d.DisallowUnknownFields()
				if err := d.Decode(&x); err != nil {
					t.Fatalf("x-sim comment %q: %v", rest, err)
				}
				return x
			}
		}
	}
	t.Fatalf("no x-sim comment in %d events", len(evs))
	return xsim{}
}

var (
	reCreated = regexp.MustCompile(`"(created|created_at)":\d+`)
	reID      = regexp.MustCompile(`"(id|item_id|call_id)":"(chatcmpl-|cmpl-|resp_|msg_|rs_|fc_|call_|toolu_)[0-9a-f]+"`)
	reXsim    = regexp.MustCompile(`: x-sim \{[^\n]*\}`)
	reHeader  = regexp.MustCompile(`(?m)^(Date|X-Sim-[A-Za-z-]+): .*\r$`)
)

// normalize removes what varies between runs: wall-clock stamps and the server's timings.
func normalize(w wire) string {
	head := reHeader.ReplaceAllString(w.head, "$1: <varies>\r")
	lines := strings.Split(strings.TrimSuffix(head, "\r\n"), "\r\n")
	sort.Strings(lines[1:])
	body := reCreated.ReplaceAllString(string(w.body), `"$1":0`)
	body = reID.ReplaceAllString(body, `"$1":"${2}ID"`)
	body = reXsim.ReplaceAllString(body, `: x-sim {<varies>}`)
	return fmt.Sprintf("%s\n\ncomplete=%v\n\n%s", strings.Join(lines, "\n"), w.complete, body)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
