//go:build linux

package wire

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// capRetransmit caps the connected socket's retransmission timeout at maxRTO (TCP_RTO_MAX_MS,
// Linux 6.15 and later; an older kernel refuses it and keeps its own cap of 120 s). It is set
// after the connect, so the SYNs keep the kernel's schedule (1 s, 3 s, 7 s, ...). The kernel
// gives a connection up after tcp_retries2 retransmissions, which the cap would bring forward
// (from 15 minutes to 14 s): TCP_USER_TIMEOUT keeps the time it would have given it up at.
func capRetransmit(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS, int(maxRTO/time.Millisecond)) == nil {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(defaultGiveUp()/time.Millisecond))
		}
	})
}

// defaultGiveUp is giveUp for this host's tcp_retries2 (15 when it cannot be read).
var defaultGiveUp = sync.OnceValue(func() time.Duration {
	n := 15
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_retries2"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			n = v
		}
	}
	return giveUp(n)
})

// synCountControl returns a net.Dialer Control that sets TCP_SYNCNT: the kernel gives the
// connect up after n SYN retransmissions.
func synCountControl(n int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_SYNCNT, n) }); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("set TCP_SYNCNT %d: %w", n, serr)
		}
		return nil
	}
}
