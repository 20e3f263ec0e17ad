// Command readpath measures the floor of the client's read path: what reading streamed responses
// costs a process pinned to one CPU, with no decoding and no rows, in two designs. "goroutine" is
// wirebench's plain path: a goroutine per connection that reads with recvmsg through
// RawConn.Read and parks on Go's netpoller when the socket is empty. "epoll" is one thread that
// owns an epoll set of the connections (edge-triggered; their descriptors taken out of Go's
// netpoller) and reads each ready socket until a read comes back short, so that it never makes
// a read that finds the socket empty. Both send the same constant-rate requests (a fresh
// `wirebench sim` each run) and count only the end of each chunked response.
//
// It answers one question of issue 24 (docs/design/footprint.md): how much of wirebench's client
// CPU per request at 64 tokens a reader that owns its epoll loop would save. Figures in
// docs/measurements.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/simproc"
)

func main() {
	bin := flag.String("wirebench", "bin/wirebench", "the wirebench binary (its simulator serves the requests)")
	sim := flag.String("sim", "--mode fixed --ttft 0 --itl 0", "simulator flags")
	rates := flag.String("rates", "2000,5000", "comma-separated request rates (req/s)")
	tokens := flag.Int("tokens", 64, "output tokens per request")
	d := flag.Duration("duration", 6*time.Second, "length of each run")
	conns := flag.Int("conns", 128, "connections, opened before the run")
	cpu := flag.Int("cpu", 1, "the CPU the client runs on (the simulator is left to the scheduler)")
	repeat := flag.Int("repeat", 3, "runs of each design per rate, alternating")
	child := flag.String("child", "", "internal: run one design (goroutine or epoll) against -url")
	target := flag.String("url", "", "internal: the simulator's base URL")
	rate := flag.Int("rate", 0, "internal: the child's rate")
	flag.Parse()
	log.SetFlags(0)
	if *child != "" {
		r, err := runClient(*child, *target, *rate, *tokens, *d, *conns, *cpu)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %d %d %d %d\n", r.requests, r.cpuNs, r.recvs, r.empty, r.waits)
		return
	}
	var rs []int
	for _, f := range strings.Split(*rates, ",") {
		var r int
		if _, err := fmt.Sscan(f, &r); err != nil || r <= 0 {
			log.Fatalf("-rates %q: %q is not a positive rate", *rates, f)
		}
		rs = append(rs, r)
	}
	fmt.Printf("<!-- %d CPUs, %s, %s, client on CPU %d, %d connections, %d tokens, %v runs, %d runs a design, %s -->\n",
		runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339), *cpu, *conns, *tokens, *d, *repeat, *sim)
	fmt.Println("| rate/s | design | CPU per request (median, range) | recvmsg per request | of them empty | epoll_wait per request |")
	fmt.Println("|---:|---|---|---:|---:|---:|")
	for _, r := range rs {
		res := map[string][]result{}
		for i := range *repeat {
			for _, design := range []string{"goroutine", "epoll"} {
				x, err := runOnce(*bin, strings.Fields(*sim), design, r, *tokens, *d, *conns, *cpu)
				if err != nil {
					log.Fatalf("rate %d %s run %d: %v", r, design, i, err)
				}
				log.Printf("rate %d %s run %d: %.1f µs a request", r, design, i, x.perReq(x.cpuNs)/1e3)
				res[design] = append(res[design], x)
			}
		}
		for _, design := range []string{"goroutine", "epoll"} {
			row(r, design, res[design])
		}
	}
}

// result is one run's count of requests done, client CPU (ns) and system calls.
type result struct {
	requests, cpuNs, recvs, empty, waits int64
}

func (r result) perReq(v int64) float64 { return float64(v) / float64(r.requests) }

func row(rate int, design string, rs []result) {
	med := func(f func(result) float64) (m, lo, hi float64) {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2], v[0], v[len(v)-1]
	}
	m, lo, hi := med(func(r result) float64 { return r.perReq(r.cpuNs) / 1e3 })
	recv, _, _ := med(func(r result) float64 { return r.perReq(r.recvs) })
	empty, _, _ := med(func(r result) float64 { return r.perReq(r.empty) })
	waits, _, _ := med(func(r result) float64 { return r.perReq(r.waits) })
	fmt.Printf("| %d | %s | %.1f µs (%.1f–%.1f) | %.1f | %.1f | %.1f |\n", rate, design, m, lo, hi, recv, empty, waits)
}

// runOnce starts a fresh simulator and runs one design against it in a child process (so that
// each run's CPU and threads are its own).
func runOnce(bin string, simArgs []string, design string, rate, tokens int, d time.Duration, conns, cpu int) (result, error) {
	args := append([]string{"sim", "--listen", "127.0.0.1:0"}, simArgs...)
	base, stop, err := simproc.Start(bin, args, -1, io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		return result{}, err
	}
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	out, err := execOut(self, "-child", design, "-url", base, "-rate", fmt.Sprint(rate), "-tokens", fmt.Sprint(tokens),
		"-duration", d.String(), "-conns", fmt.Sprint(conns), "-cpu", fmt.Sprint(cpu))
	if err != nil {
		return result{}, err
	}
	var r result
	if _, err := fmt.Sscan(out, &r.requests, &r.cpuNs, &r.recvs, &r.empty, &r.waits); err != nil {
		return result{}, fmt.Errorf("child's output %q: %w", out, err)
	}
	return r, nil
}

// conn is one connection of the client: its descriptor and what it has read.
type conn struct {
	fd    int
	rc    syscall.RawConn
	buf   []byte
	tail  []byte // the last bytes read, up to len(endOfBody)
	msg   unix.Msghdr
	iov   unix.Iovec
	ended chan<- *conn
}

// endOfBody ends a chunked body without trailers: the last chunk and the blank line.
var endOfBody = []byte("0\r\n\r\n")

// counters of the child's system calls and finished responses.
var recvs, empty, waits, done atomic.Int64

// recv reads once, without blocking.
func (c *conn) recv() (int, syscall.Errno) {
	c.iov.Base = &c.buf[0]
	c.iov.SetLen(len(c.buf))
	c.msg.Iov = &c.iov
	c.msg.SetIovlen(1)
	n, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&c.msg)), unix.MSG_DONTWAIT)
	recvs.Add(1)
	if e == unix.EAGAIN {
		empty.Add(1)
	}
	return int(n), e
}

// consume looks for the end of a response in p (one response in flight per connection; the
// simulator's SSE events end in "\n\n", so no chunk's data ends like endOfBody).
func (c *conn) consume(p []byte) {
	c.tail = append(c.tail, p[max(0, len(p)-len(endOfBody)):]...)
	c.tail = c.tail[max(0, len(c.tail)-len(endOfBody)):]
	if bytes.Equal(c.tail, endOfBody) {
		c.tail = c.tail[:0]
		done.Add(1)
		c.ended <- c
	}
}

// readGoroutine is the goroutine design's reader of one connection.
func (c *conn) readGoroutine() {
	var n int
	var e syscall.Errno
	fn := func(uintptr) bool {
		n, e = c.recv()
		return e != unix.EAGAIN
	}
	for {
		if err := c.rc.Read(fn); err != nil || e != 0 || n == 0 {
			return
		}
		c.consume(c.buf[:n])
	}
}

// readEpoll is the epoll design's reader: one locked thread for every connection.
func readEpoll(ep int, byFd map[int32]*conn) {
	runtime.LockOSThread()
	evs := make([]unix.EpollEvent, 256)
	for {
		k, err := unix.EpollWait(ep, evs, -1)
		waits.Add(1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range evs[:k] {
			c := byFd[ev.Fd]
			for {
				n, e := c.recv()
				if e != 0 || n <= 0 {
					break
				}
				c.consume(c.buf[:n])
				if n < len(c.buf) {
					break // the socket was emptied: the next data raises a new edge
				}
			}
		}
	}
}

// runClient is the child: it pins itself to cpu, opens the connections and sends rate requests a
// second for d, each on an idle connection, then waits (at most 10 s) for the last response.
func runClient(design, base string, rate, tokens int, d time.Duration, nconns, cpu int) (result, error) {
	if err := cpuset.PinProcess(cpu); err != nil {
		return result{}, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return result{}, err
	}
	body := fmt.Sprintf(`{"model":"sim","prompt":"one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen","max_tokens":%d,"stream":true,"ignore_eos":true}`, tokens)
	req := fmt.Appendf(nil, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(body), body)
	idle := make(chan *conn, nconns)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return result{}, err
	}
	byFd := map[int32]*conn{}
	for range nconns {
		c, err := dial(u.Host, design, ep, idle)
		if err != nil {
			return result{}, err
		}
		byFd[int32(c.fd)] = c
		idle <- c
	}
	if design == "epoll" {
		go readEpoll(ep, byFd)
	}
	cpu0 := processCPU()
	start := time.Now()
	total := int64(float64(rate) * d.Seconds())
	for i := range total {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		c := <-idle
		if _, err := unix.Write(c.fd, req); err != nil {
			return result{}, fmt.Errorf("write: %w", err)
		}
	}
	for done.Load() < total && time.Since(start) < d+10*time.Second {
		time.Sleep(time.Millisecond)
	}
	r := result{requests: done.Load(), cpuNs: processCPU() - cpu0, recvs: recvs.Load(), empty: empty.Load(), waits: waits.Load()}
	if r.requests < total {
		return r, fmt.Errorf("%d of %d responses ended", r.requests, total)
	}
	return r, nil
}

// dial opens one connection for design: goroutine keeps it in Go's netpoller with its own
// reader; epoll takes a duplicate of its descriptor into ep and closes the original (Go removes
// that from its netpoller), so that only the epoll thread wakes for its data.
func dial(host, design string, ep int, idle chan<- *conn) (*conn, error) {
	nc, err := net.Dial("tcp", host)
	if err != nil {
		return nil, err
	}
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &conn{rc: rc, buf: make([]byte, 32<<10), ended: idle}
	var derr error
	if err := rc.Control(func(fd uintptr) {
		c.fd = int(fd)
		if design == "epoll" {
			c.fd, derr = unix.Dup(int(fd))
		}
	}); err != nil {
		return nil, err
	}
	switch {
	case derr != nil:
		return nil, derr
	case design == "goroutine":
		go c.readGoroutine()
		return c, nil
	case design != "epoll":
		return nil, fmt.Errorf("design %q: want goroutine or epoll", design)
	}
	nc.Close()
	if err := unix.SetNonblock(c.fd, true); err != nil {
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd)}
	return c, unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, c.fd, &ev)
}

// processCPU is this process's user and system CPU time in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// execOut runs a command and returns its standard output; its standard error is this process's.
func execOut(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	return string(out), err
}
