package main

// Liveness: nothing a server, the machine or the operator does makes a command hang. Dials are
// bounded, dripped headers are cut, every request has a default overall timeout, a stopped
// worker is killed by the coordinator's watchdog, and SIGTERM stops every command.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// blackHole listens on 127.0.0.1 with the shortest accept queue, never accepts, and fills the
// queue: the kernel then drops every SYN to it, as a firewall that drops packets would.
func blackHole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 4 { // fill the accept queue; the dials after it time out
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	if c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); err == nil {
		c.Close()
		t.Fatalf("%s still answers SYNs; want its accept queue full", addr)
	}
	return "http://" + addr
}

// TestDialBoundedByConnectTimeout: a target whose SYNs go unanswered fails each request as
// connect after --connect-timeout (2s here; the kernel's SYN retries take over two minutes), so
// the run stops on the dead target (every request of its first second failed) within seconds
// instead of queueing requests behind long dials.
func TestDialBoundedByConnectTimeout(t *testing.T) {
	url := blackHole(t)
	run := captureRun(t, url, construn.Stage{Rate: 2, Duration: 6 * time.Second, MaxTokens: 4})
	t0 := time.Now()
	_, stderr, err := wirebench(t, 60*time.Second, "capture", run, "--quiet", "--workers", "1", "--connections", "1", "--tap", "off", "--connect-timeout", "2s")
	took := time.Since(t0)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || took > 20*time.Second {
		t.Fatalf("capture against a black hole: %v after %v; want exit status 1 (target down) within 20s\n%s", err, took, stderr)
	}
	m, reqs, _ := rawFiles(t, run)
	if m.Status != schemas.StatusFailed || len(reqs) == 0 {
		t.Fatalf("manifest status %q, %d requests; want failed with the requests sent recorded", m.Status, len(reqs))
	}
	for _, r := range reqs {
		if r.ErrorKind != schemas.ErrConnect || !strings.Contains(r.ErrorMessage, "timeout") {
			t.Errorf("seq %d: %s %q; want connect, a dial timeout", r.Seq, r.ErrorKind, r.ErrorMessage)
		}
	}
	t.Logf("%d requests, capture took %v", len(reqs), took.Round(time.Millisecond))
}

// dripHeaders is a server that begins a 200 and then sends its headers one byte every 2 s (for
// up to 40 s): each byte comes well within --gap-timeout, but the body never begins.
var dripHeaders = hostile.Case{Name: "headers dripped a byte every 2s", Hold: true,
	Respond: func(w io.Writer) {
		if _, err := io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"); err != nil {
			return
		}
		for range 20 {
			time.Sleep(2 * time.Second)
			if _, err := io.WriteString(w, "X"); err != nil {
				return
			}
		}
	}}

// TestDrippedHeadersCutByTTFTTimeout: response headers dripped a byte every 2 s are cut by
// --ttft-timeout 3s although no gap reaches --gap-timeout 3s (before, on plain http, only
// --timeout cut them), over plain http and https; the requests around it are answered.
func TestDrippedHeadersCutByTTFTTimeout(t *testing.T) {
	overPlainAndTLS(t, func(t *testing.T, srvTLS *tls.Config) {
		srv, err := hostile.Start([]hostile.Case{dripHeaders}, srvTLS)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		const planned = 4
		run := captureRun(t, srv.URL, construn.Stage{Rate: planned, Duration: time.Second, MaxTokens: 4})
		cmd := exec.Command(binary, "capture", run, "--workers", "1", "--connections", "2", "--quiet", "--tap", "off",
			"--ttft-timeout", "3s", "--gap-timeout", "3s")
		t0 := time.Now()
		out, err := runBounded(t, cmd, 30*time.Second)
		if err != nil {
			t.Fatalf("capture: %v\n%s", err, out)
		}
		m, reqs, _ := rawFiles(t, run)
		if m.Status != schemas.StatusComplete {
			t.Errorf("manifest status %q; want complete", m.Status)
		}
		var cut int
		for _, r := range reqs {
			switch {
			case r.ErrorKind == schemas.ErrTTFTTimeout && strings.Contains(r.ErrorMessage, "(ttft_timeout 3s)"):
				cut++
			case r.ErrorKind != "":
				t.Errorf("seq %d: %s %q; want ok, or ttft_timeout for the dripped headers", r.Seq, r.ErrorKind, r.ErrorMessage)
			}
		}
		if len(reqs) != planned || cut != 1 {
			t.Errorf("%d requests, %d cut by ttft_timeout 3s; want %d, the one with dripped headers cut", len(reqs), cut, planned)
		}
		t.Logf("%d requests in %v", len(reqs), time.Since(t0).Round(time.Millisecond))
	})
}

// runBounded runs cmd and returns its combined output; it fails the test when cmd is still
// running after limit (and kills it).
func runBounded(t *testing.T, cmd *exec.Cmd, limit time.Duration) (string, error) {
	t.Helper()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := waitExit(t, cmd, limit, &out)
	return out.String(), err
}

// TestRequestTimeoutDefault: every request has an overall timeout by default (30m), which a
// server that keeps a stream alive a byte at a time cannot escape; --timeout 0 and
// target.timeout: 0s mean none, said as such. The workers log the timeouts they apply.
func TestRequestTimeoutDefault(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	for _, tc := range []struct {
		name   string
		config string // target.timeout in the config, "" = absent
		args   []string
		want   string
	}{
		{"default", "", nil, "timeout=30m0s"},
		{"flag 0 is none", "", []string{"--timeout", "0"}, "timeout=0s"},
		{"config 0s is none", "0s", nil, "timeout=0s"},
		{"flag wins", "0s", []string{"--timeout", "90s"}, "timeout=1m30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			target := schemas.Target{URL: url, API: "completions", Model: "sim"}
			if tc.config != "" {
				d, err := time.ParseDuration(tc.config)
				if err != nil {
					t.Fatal(err)
				}
				target.Timeout = (*schemas.Duration)(&d)
			}
			if err := construn.Write(run, target, []construn.Stage{{Rate: 2, Duration: time.Second, MaxTokens: 2}}); err != nil {
				t.Fatal(err)
			}
			_, stderr, err := wirebench(t, 60*time.Second, append([]string{"capture", run, "--workers", "1", "--connections", "1", "--tap", "off", "--quiet"}, tc.args...)...)
			if err != nil {
				t.Fatalf("capture: %v\n%s", err, stderr)
			}
			if !strings.Contains(stderr, "msg=timeouts worker=0 "+tc.want+" ") {
				t.Errorf("worker log does not say %s:\n%s", tc.want, stderr)
			}
		})
	}
	out, _, err := wirebench(t, 30*time.Second, "capture", "--help")
	if out = strings.Join(strings.Fields(out), " "); err != nil || !strings.Contains(out, "0 = none (default: target.timeout, else 30m)") {
		t.Errorf("capture --help (%v) does not spell out --timeout's default and 0 = none:\n%s", err, out)
	}
}

// TestStoppedWorkerIsKilledByWatchdog: one of two workers is stopped (SIGSTOP) mid-run. It
// sends no progress, so after --watchdog (3s) the coordinator kills it and the other worker
// finishes; the run fails naming the stuck worker (before, capture waited for it forever and,
// once it was resumed, said complete).
func TestStoppedWorkerIsKilledByWatchdog(t *testing.T) {
	url := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	run := captureRun(t, url, construn.Stage{Rate: 20, Duration: 8 * time.Second, MaxTokens: 4})
	cmd, errb := startCapture(t, run, "--workers", "2", "--tap", "off", "--quiet", "--watchdog", "3s")
	kids := waitWorkers(t, cmd.Process.Pid, 2)
	stopped := kids[len(kids)-1] // started last: worker 1
	t.Cleanup(func() { syscall.Kill(stopped, syscall.SIGKILL) })
	if err := syscall.Kill(stopped, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err := waitExit(t, cmd, 40*time.Second, errb)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("capture: %v; want exit status 1\n%s", err, errb.String())
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	step := m.Steps[len(m.Steps)-1]
	if m.Status != schemas.StatusFailed || step.Status != schemas.StatusFailed || !strings.Contains(step.Error, "worker 1 (cpu") || !strings.Contains(step.Error, "stuck") {
		t.Errorf("manifest status %q, step %s %q; want failed, the error naming worker 1 as stuck", m.Status, step.Status, step.Error)
	}
	if len(m.Workers) != 2 || m.Workers[0].Exit != "ok" || !strings.Contains(m.Workers[1].Exit, "watchdog") {
		t.Errorf("workers %+v; want worker 0 ok, worker 1 killed by the watchdog", m.Workers)
	}
	if _, reqs, _ := rawFiles(t, run); len(reqs) < 80 { // worker 0's half of the 160
		t.Errorf("%d requests recorded; want at least the 80 of the worker that went on", len(reqs))
	}
}
