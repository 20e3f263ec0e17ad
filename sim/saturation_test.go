package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU(t testing.TB) time.Duration {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		t.Skipf("no process CPU clock: %v", err)
	}
	return time.Duration(ts.Nano())
}

// cpuOfRequest sends one completions request to the server at addr and returns the process
// CPU time it took; its wall time must be at least minWall.
func cpuOfRequest(t *testing.T, addr, body string, minWall time.Duration) time.Duration {
	t.Helper()
	start := processCPU(t)
	w := rawPost(t, addr, "/v1/completions", body)
	used := processCPU(t) - start
	if w.status != 200 || !w.complete {
		t.Fatalf("%s: status %d, complete %v", addr, w.status, w.complete)
	}
	if w.elapsed < minWall {
		t.Errorf("a request took %v; the CPU work alone needs %v", w.elapsed, minWall)
	}
	return used
}

// checkExtraCPU sends n requests to each server, alternating (after one each to warm up), and
// compares the median process CPU of a request with the work (busy) and without it (plain).
// The client runs in this process too, so each figure holds its cost as well; alternating and
// medians keep a garbage collection or the race detector's bursts, which land on a few requests,
// out of the difference. The difference must be at least 90% of want (the spin runs until its
// thread has used want of CPU, whatever the load) and not far above it.
func checkExtraCPU(t *testing.T, plain, busy, body string, n int, want time.Duration) {
	t.Helper()
	cpuOfRequest(t, plain, body, 0)
	cpuOfRequest(t, busy, body, want)
	without := make([]time.Duration, n)
	with := make([]time.Duration, n)
	for i := range n {
		without[i] = cpuOfRequest(t, plain, body, 0)
		with[i] = cpuOfRequest(t, busy, body, want)
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	w, wo := median(with), median(without)
	extra := w - wo
	t.Logf("median process CPU per request: %v with the work, %v without: %v extra (want %v)",
		w, wo, extra, want)
	if extra < want*9/10 || extra > want*3/2+time.Millisecond {
		t.Errorf("extra CPU per request %v; want about %v", extra, want)
	}
}

const satRequests = 20

// TestCPUPerRequest: --cpu-per-request 2ms adds 2 ms of CPU time per request, through the fast
// server and net/http, in engine and fixed mode, and each request takes at least that long.
func TestCPUPerRequest(t *testing.T) {
	const d = 2 * time.Millisecond
	body := `{"model":"sim","prompt":"a b c","max_tokens":4,"stream":true}`
	for _, path := range []string{"fast", "net/http"} {
		for _, mode := range []string{"engine", "fixed"} {
			t.Run(path+"/"+mode, func(t *testing.T) {
				start := startServer
				if path == "net/http" {
					start = func(t testing.TB, cfg Config) (*Server, string) { return nil, startNetHTTP(t, cfg) }
				}
				cfg := zeroConfig()
				cfg.Mode = mode
				_, plain := start(t, cfg)
				cfg.CPUPerRequest = d
				_, busy := start(t, cfg)
				checkExtraCPU(t, plain, busy, body, satRequests, d)
			})
		}
	}
}

// TestCPUPerToken: --cpu-per-token 1ms adds 1 ms of CPU time per output token (4 here), in
// every way a response is written, and streamed tokens leave at least 1 ms apart.
func TestCPUPerToken(t *testing.T) {
	const d, tokens = time.Millisecond, 4
	stream := `{"model":"sim","prompt":"a b c","max_tokens":4,"stream":true}`
	for _, tc := range []struct {
		name    string
		body    string
		cfg     func(*Config)
		netHTTP bool
	}{
		{"events", stream, func(*Config) {}, false},
		{"coalesce-tail", stream, func(c *Config) { c.CoalesceTail = true }, false},
		{"non-streaming", `{"model":"sim","prompt":"a b c","max_tokens":4}`, func(*Config) {}, false},
		{"net/http-engine", stream, func(c *Config) { c.Mode = "engine" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := startServer
			if tc.netHTTP {
				start = func(t testing.TB, cfg Config) (*Server, string) { return nil, startNetHTTP(t, cfg) }
			}
			cfg := zeroConfig()
			tc.cfg(&cfg)
			_, plain := start(t, cfg)
			cfg.CPUPerToken = d
			_, busy := start(t, cfg)
			checkExtraCPU(t, plain, busy, tc.body, satRequests, tokens*d)
			if tc.name != "events" {
				return
			}
			// one event per write: each token's work comes before its write and its stamp
			evs, err := parseSSE(rawPost(t, busy, "/v1/completions", tc.body).body)
			if err != nil {
				t.Fatal(err)
			}
			sent := groundTruth(t, evs).SentNs
			if len(sent) != tokens {
				t.Fatalf("%d send stamps; want %d", len(sent), tokens)
			}
			for i := 1; i < len(sent); i++ {
				if gap := time.Duration(sent[i] - sent[i-1]); gap < d {
					t.Errorf("token %d left %v after token %d; want ≥ %v", i, gap, i-1, d)
				}
			}
		})
	}
}

// listenOverflows reads TcpExt ListenOverflows (SYNs and handshakes dropped because an accept
// queue was full, in this network namespace) from /proc/net/netstat.
func listenOverflows() (uint64, error) {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "TcpExt:" || len(values) != len(names) || values[0] != "TcpExt:" {
			continue
		}
		for j, n := range names {
			if n == "ListenOverflows" {
				return strconv.ParseUint(values[j], 10, 64)
			}
		}
	}
	return 0, errors.New("no TcpExt ListenOverflows in /proc/net/netstat")
}

// servePaced serves cfg on ln and returns a stop function that checks Serve returns promptly.
func servePaced(t *testing.T, cfg Config, ln net.Listener) (stop func()) {
	t.Helper()
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return within 5 s of cancel (accept pace %v)", cfg.AcceptPace)
		}
		srv.Close()
	}
}

// TestListenBacklog: with --listen-backlog 4 and an accept loop that accepts once and then
// waits a minute (--accept-pace 1m), the first connection is accepted and the queue holds 5
// more (Linux admits backlog + 1); later SYNs are dropped, so their connects time out, and
// the kernel counts ListenOverflows. With the default backlog every connect succeeds.
func TestListenBacklog(t *testing.T) {
	const backlog, dials = 4, 20
	const dialTimeout = 150 * time.Millisecond
	dialAll := func(t *testing.T, backlog int) (ok int) {
		cfg := zeroConfig()
		cfg.AcceptPace = time.Minute
		ln, err := Listen(context.Background(), "127.0.0.1:0", backlog)
		if err != nil {
			t.Fatal(err)
		}
		stop := servePaced(t, cfg, ln)
		defer stop()
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		var errs []string
		for i := 0; i < dials; i++ {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), dialTimeout)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			conns = append(conns, c)
		}
		if len(errs) > 0 {
			t.Logf("backlog %d: %d of %d connects failed; first error: %s", backlog, len(errs), dials, errs[0])
		}
		return len(conns)
	}

	t.Run("small", func(t *testing.T) {
		before, nerr := listenOverflows()
		ok := dialAll(t, backlog)
		if ok < backlog+1 || ok > backlog+4 {
			t.Errorf("%d of %d connects succeeded with backlog %d and one accept; want %d (1 accepted, backlog+1 queued)",
				ok, dials, backlog, backlog+2)
		}
		if nerr != nil {
			t.Logf("ListenOverflows not checked: %v", nerr)
			return
		}
		after, err := listenOverflows()
		if err != nil {
			t.Fatal(err)
		}
		if after-before < uint64(dials-ok) {
			t.Errorf("ListenOverflows rose by %d; want at least %d (one per dropped SYN)", after-before, dials-ok)
		}
	})
	t.Run("default", func(t *testing.T) {
		if m := SomaxConn(); m > 0 && m < dials+2 {
			t.Skipf("net.core.somaxconn is %d", m)
		}
		if ok := dialAll(t, 0); ok != dials {
			t.Errorf("%d of %d connects succeeded with the default backlog; want all", ok, dials)
		}
	})
}

// TestListenBacklogNegative: Listen refuses a negative backlog, Validate a negative setting.
func TestListenBacklogNegative(t *testing.T) {
	if ln, err := Listen(context.Background(), "127.0.0.1:0", -1); err == nil {
		ln.Close()
		t.Error("Listen with backlog -1 succeeded")
	}
	for name, mod := range map[string]func(*Config){
		"listen-backlog":  func(c *Config) { c.ListenBacklog = -1 },
		"cpu-per-request": func(c *Config) { c.CPUPerRequest = -1 },
		"cpu-per-token":   func(c *Config) { c.CPUPerToken = -1 },
		"accept-pace":     func(c *Config) { c.AcceptPace = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate with negative %s = %v; want an error naming it", name, err)
		}
	}
}

// TestAcceptPace: with --accept-pace D, N connections made at once are accepted at least D
// apart: the k-th response to complete (k = 1..N) cannot complete before (k-1)·D after the
// first connect, since k connections had to be accepted by then.
func TestAcceptPace(t *testing.T) {
	const pace, n = 60 * time.Millisecond, 5
	cfg := zeroConfig()
	cfg.AcceptPace = pace
	ln, err := Listen(context.Background(), "127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	stop := servePaced(t, cfg, ln)
	defer stop()
	start := time.Now()
	var mu sync.Mutex
	var done []time.Duration
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				errc <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n"); err != nil {
				errc <- err
				return
			}
			resp, err := io.ReadAll(c)
			if err != nil {
				errc <- err
				return
			}
			if !strings.HasPrefix(string(resp), "HTTP/1.1 200 ") {
				errc <- fmt.Errorf("response %q", resp)
				return
			}
			mu.Lock()
			done = append(done, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	t.Logf("responses completed at %v (pace %v)", done, pace)
	for k, at := range done {
		if min := time.Duration(k) * pace; at < min {
			t.Errorf("response %d of %d completed %v after the first connect; want ≥ %v", k+1, n, at, min)
		}
	}
	if last := done[n-1]; last > (n-1)*pace+5*time.Second {
		t.Errorf("last response after %v; want about %v", last, (n-1)*pace)
	}
}
