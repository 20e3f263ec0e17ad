//go:build linux

package wire

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// capRetransmit caps the connected socket's retransmission timeout at maxRTO (TCP_RTO_MAX_MS,
// Linux 6.15 and later; an older kernel refuses it and keeps its own cap of 120 s). It is set
// after the connect, so the SYNs keep the kernel's schedule (1 s, 3 s, 7 s, ...).
func capRetransmit(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS, int(maxRTO/time.Millisecond))
	})
}

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
