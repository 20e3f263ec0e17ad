package colocate

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestJudge(t *testing.T) {
	local := map[netip.Addr]string{netip.MustParseAddr("192.0.2.2"): "eth0", netip.MustParseAddr("fd00::2"): "eth0"}
	for _, c := range []struct {
		addrs []string
		local bool
		rule  string
	}{
		{[]string{"127.0.0.1"}, true, "127.0.0.1 is a loopback address"},
		{[]string{"127.0.0.53"}, true, "127.0.0.53 is a loopback address"},                     // all of 127/8
		{[]string{"::1"}, true, "::1 is a loopback address"},                                   // IPv6 loopback
		{[]string{"::ffff:127.0.0.1"}, true, "127.0.0.1 is a loopback address"},                // v4-mapped
		{[]string{"192.0.2.2"}, true, "192.0.2.2 is an address of this host's interface eth0"}, // own interface
		{[]string{"fd00::2"}, true, "fd00::2 is an address of this host's interface eth0"},
		{[]string{"192.0.2.3"}, false, "no address"},                                 // a neighbour on the same subnet
		{[]string{"10.0.0.5", "127.0.0.1"}, true, "127.0.0.1 is a loopback address"}, // any resolved address
		{nil, false, "no address"},
	} {
		var addrs []netip.Addr
		for _, a := range c.addrs {
			addrs = append(addrs, netip.MustParseAddr(a))
		}
		p := judge(addrs, 8000, local)
		if p.Local != c.local || !strings.HasPrefix(p.Rule, c.rule) {
			t.Errorf("judge(%v) = (%v, %q); want (%v, %q...)", c.addrs, p.Local, p.Rule, c.local, c.rule)
		}
	}
}

func TestLocateLoopbackName(t *testing.T) {
	p, err := Locate(context.Background(), "http://localhost:8000")
	if err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	if !p.Local || p.Addr.Port() != 8000 {
		t.Errorf("Locate(http://localhost:8000) = %+v; want local, port 8000", p)
	}
	if _, err := Locate(context.Background(), "http://no-such-host.invalid:80"); err == nil {
		t.Errorf("Locate of an unresolvable name: no error")
	}
}

const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0
   1: 00000000:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0 0 10 0
   2: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0
   3: 0200000A:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0 100 0 0 10 0
`

func TestListening(t *testing.T) {
	for _, c := range []struct {
		addr string
		want []string
	}{
		{"127.0.0.1:8000", []string{"111"}},          // bound to loopback (the established row 2 is not a listener)
		{"10.0.0.2:8001", []string{"222"}},           // the wildcard address takes any
		{"10.0.0.2:8000", []string{"444"}},           // 10.0.0.2, stored little-endian
		{"127.0.0.1:9999", nil},                      // no listener on the port
		{"[::ffff:127.0.0.1]:8000", []string{"111"}}, // a v4-mapped target
	} {
		got := listening(table, netip.MustParseAddrPort(c.addr))
		if !slices.Equal(got, c.want) {
			t.Errorf("listening(%s) = %v; want %v", c.addr, got, c.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	s := "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 0 25 400 10 1 1 5 0 0\ncpu1 50 5 25 400 10 2 1 5 7 0\nintr 1\n"
	got, err := parseStat(s)
	want := CPUTimes{CPUs: 2, IdleNs: 820 * 1e7}
	if err != nil || got != want {
		t.Errorf("parseStat = %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseStat("intr 1\n"); err == nil {
		t.Errorf("parseStat without a cpu line: no error")
	}
}

func TestStatNice(t *testing.T) {
	// The command may hold spaces and parentheses; nice is field 19.
	stat := "42 (my (odd) server) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 -5 4 0 100 0 0"
	if got := statNice(stat); got != -5 {
		t.Errorf("statNice = %d; want -5", got)
	}
}

// TestListenerFindsProcess starts a child process listening on loopback and finds it by its port.
func TestListenerFindsProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=TestHelperListen")
	cmd.Env = append(os.Environ(), "COLOCATE_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("helper printed no address")
	}
	ap := netip.MustParseAddrPort(strings.TrimSpace(sc.Text()))
	p := Listener(ap)
	if p == nil {
		t.Fatalf("Listener(%s) = nil; want the helper process %d", ap, cmd.Process.Pid)
	}
	if p.PID != cmd.Process.Pid || len(p.CPUs) == 0 || p.Comm == "" {
		t.Errorf("Listener(%s) = %+v; want pid %d with its CPUs and command", ap, p, cmd.Process.Pid)
	}
	if q := Listener(netip.AddrPortFrom(ap.Addr(), 1)); q != nil {
		t.Errorf("Listener on port 1 = %+v; want nil", q)
	}
}

// TestHelperListen is the child of TestListenerFindsProcess: it listens until its stdin closes.
func TestHelperListen(t *testing.T) {
	if os.Getenv("COLOCATE_HELPER") != "1" {
		t.Skip("helper process only")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fmt.Println(ln.Addr().String())
	done := make(chan struct{})
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadByte(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
}

func TestProcessCPU(t *testing.T) {
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Errorf("ProcessCPU(self): %v", err)
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Errorf("ProcessCPU of no process: no error")
	}
}

// TestBusySinceSeesShortBursts: work in bursts of a fraction of a clock tick, with idle time
// between them, is busy time: the machine's busy time over the window is at least what this
// process used (its own CPU, counted exactly), whatever else runs.
func TestBusySinceSeesShortBursts(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	self := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	a, err := ReadCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	cpu0 := self()
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		for burst := time.Now().Add(200 * time.Microsecond); time.Now().Before(burst); {
		}
		time.Sleep(300 * time.Microsecond)
	}
	used := self() - cpu0
	b, err := ReadCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	busy, total := b.BusySince(a)
	t.Logf("busy %v of %v; this process used %v", time.Duration(busy), time.Duration(total), time.Duration(used))
	// Idle time is counted in 10 ms units per CPU: allow that much.
	if slack := int64(b.CPUs) * 10e6; busy+slack < used {
		t.Errorf("machine busy %v over the window; this process alone used %v", time.Duration(busy), time.Duration(used))
	}
}
