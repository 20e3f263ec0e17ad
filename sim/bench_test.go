package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// childEnv makes the test binary run as a bare simulator process for the benchmarks, so that
// getrusage measures the server alone, not the load-generating client.
const childEnv = "WIREBENCH_SIM_BENCH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		runChild()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild serves a zero-latency simulator until stdin closes: through Serve (the fast
// server), or through net/http with srv.Handler() (WIREBENCH_SIM_BENCH_CHILD_SERVER=net-http),
// or a bare net/http handler writing a canned stream (..._SERVER=net-http-floor);
// WIREBENCH_SIM_BENCH_CHILD_COALESCE_TAIL=1 sets CoalesceTail. A second listener answers
// GET /_rusage (user+system CPU µs of this process).
func runChild() {
	srv, err := New(Config{ShutdownGrace: 1, CoalesceTail: os.Getenv(childEnv+"_COALESCE_TAIL") == "1"}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lnUsage, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr(), lnUsage.Addr())
	go http.Serve(lnUsage, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		us := ru.Utime.Sec*1e6 + int64(ru.Utime.Usec) + ru.Stime.Sec*1e6 + int64(ru.Stime.Usec)
		fmt.Fprint(w, us)
	}))
	if path := os.Getenv(childEnv + "_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	switch os.Getenv(childEnv + "_SERVER") {
	case "net-http":
		go http.Serve(ln, srv.Handler())
	case "net-http-floor":
		// net/http's own floor: read the body, write a canned one-token stream, no engine
		canned := []byte(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"sim","choices":[{"index":0,"text":"the ","logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\ndata: [DONE]\n\n")
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header()["Content-Type"] = sseContentType
			w.Header()["Transfer-Encoding"] = chunked
			w.Write(canned)
		}))
	default:
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go srv.Serve(ctx, ln)
	}
	io.Copy(io.Discard, os.Stdin)
}

type child struct {
	url, usageURL string
	client        *http.Client
}

func startChild(b *testing.B, conns int, env ...string) *child {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("benchmark server: %v", err)
	}
	addrs := strings.Fields(line)
	if len(addrs) != 2 {
		b.Fatalf("benchmark server printed %q; want two addresses", line)
	}
	return &child{
		url:      "http://" + addrs[0],
		usageURL: "http://" + addrs[1] + "/_rusage",
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}},
	}
}

func (c *child) cpuMicros(b *testing.B) float64 {
	resp, err := c.client.Get(c.usageURL)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	s, _ := io.ReadAll(resp.Body)
	v, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		b.Fatalf("rusage %q: %v", s, err)
	}
	return v
}

func (c *child) stream(b *testing.B, path, body string) {
	resp, err := c.client.Post(c.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || n == 0 {
		b.Errorf("status %d, %d bytes, %v", resp.StatusCode, n, err)
	}
}

// BenchmarkServerCPU streams requests at zero latency from 16 concurrent clients and reports
// the simulator process's own CPU time (getrusage: user + system) per request and per token.
func BenchmarkServerCPU(b *testing.B) {
	const conns = 16
	for _, tt := range []struct {
		name   string
		tokens int
		env    []string
		api    api
	}{
		{"tokens=1", 1, nil, apiCompletions}, {"tokens=64", 64, nil, apiCompletions}, {"tokens=1024", 1024, nil, apiCompletions},
		// the typed-event APIs: about three times the events of a completions stream at 1 token,
		// the same per token
		{"responses/tokens=64", 64, nil, apiResponses}, {"messages/tokens=64", 64, nil, apiMessages},
		// --coalesce-tail: the events ready at once in one write (here, the whole stream)
		{"coalesce-tail/tokens=64", 64, []string{childEnv + "_COALESCE_TAIL=1"}, apiCompletions},
		// the simulator behind net/http (Handler) instead of its own server, for comparison
		{"net-http/tokens=1", 1, []string{childEnv + "_SERVER=net-http"}, apiCompletions},
		{"net-http/tokens=64", 64, []string{childEnv + "_SERVER=net-http"}, apiCompletions},
		// the same exchange answered by a bare net/http handler: net/http's own floor
		{"net-http-floor", 1, []string{childEnv + "_SERVER=net-http-floor"}, apiCompletions},
	} {
		tokens := tt.tokens
		b.Run(tt.name, func(b *testing.B) {
			c := startChild(b, conns, tt.env...)
			body := fmt.Sprintf(`{"model":"sim","prompt":"a short prompt of some eight words","max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, tokens)
			switch tt.api {
			case apiResponses:
				body = fmt.Sprintf(`{"model":"sim","input":"a short prompt of some eight words","max_output_tokens":%d,"stream":true}`, tokens)
			case apiMessages:
				body = fmt.Sprintf(`{"model":"sim","messages":[{"role":"user","content":"a short prompt of some eight words"}],"max_tokens":%d,"stream":true}`, tokens)
			}
			path := apiPaths[tt.api]
			run := func(n int) {
				var next atomic.Int64
				var wg sync.WaitGroup
				for range conns {
					wg.Go(func() {
						for next.Add(1) <= int64(n) {
							c.stream(b, path, body)
						}
					})
				}
				wg.Wait()
			}
			run(200) // warm up connections and pools
			cpu0 := c.cpuMicros(b)
			b.ResetTimer()
			run(b.N)
			b.StopTimer()
			cpu := c.cpuMicros(b) - cpu0
			b.ReportMetric(cpu/float64(b.N), "cpu-µs/request")
			b.ReportMetric(cpu/float64(b.N*tokens), "cpu-µs/token")
		})
	}
}

// benchRenders is one render per API, and per answer kind, for the formatting benchmarks:
// every delta they append must cost no allocation.
func benchRenders() map[string]*render {
	out := map[string]*render{}
	for _, a := range []api{apiCompletions, apiChat, apiResponses, apiMessages} {
		for _, tool := range []string{"", `"get_weather"`} {
			if tool != "" && a == apiCompletions {
				continue
			}
			j := &job{api: a, model: `"sim"`, maxTokens: 1024, reasoning: 16, tool: tool}
			if a == apiCompletions {
				j.reasoning = 0
			}
			j.bh.tokens = 8
			name := strings.TrimPrefix(apiPaths[a], "/v1/")
			if tool != "" {
				name += "/tool"
			}
			out[name] = newRender(j, 1, reasoningContent)
		}
	}
	return out
}

// BenchmarkAppendChunk is the per-token formatting cost of each API's deltas; it must not
// allocate.
func BenchmarkAppendChunk(b *testing.B) {
	for name, rd := range benchRenders() {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tok := i % 1024
				buf = rd.appendDelta(buf[:0], rd.segOf(tok), tok, 1, true)
				i++
			}
		})
	}
}

// TestHotPathAllocatesNothing: appending a delta of every segment of every API (and the
// Responses API's and Anthropic's per-segment events), plus a histogram observation,
// allocates nothing.
func TestHotPathAllocatesNothing(t *testing.T) {
	h := newHistogram("x", "x", itlBuckets)
	for name, rd := range benchRenders() {
		buf := make([]byte, 0, 64<<10)
		if n := testing.AllocsPerRun(100, func() {
			buf = rd.appendDelta(buf[:0], segReasoning, 3, 2, true)
			buf = rd.appendDelta(buf[:0], rd.answer(), 20, 2, true)
			for _, k := range rd.opens(rd.answer()) {
				buf = rd.appendEvent(buf[:0], k, rd.answer())
			}
			for _, k := range rd.closes(segReasoning) {
				buf = rd.appendEvent(buf[:0], k, segReasoning)
			}
			h.observe(12345)
		}); n != 0 {
			t.Errorf("%s: appendDelta, the segment events and observe allocate %v times per chunk; want 0", name, n)
		}
	}
}
