//go:build !linux

package wire

import (
	"net"
	"syscall"
)

// sysConn reads with the plain net.Conn Read: no kernel timestamps off Linux.
type sysConn struct{}

func newConn(nc net.Conn, stamp, track bool, st *counters) *stampedConn {
	return wrap(nc, track, st)
}

// Read coalescing is Linux's (SO_RCVLOWAT): elsewhere each event is read as it comes.
func (s *sysConn) arrived(*stampedConn, int64) {}

func (s *sysConn) read(c *stampedConn, p []byte) (int, int64, error) {
	n, err := c.Conn.Read(p)
	return n, 0, err
}

func holdTimestamps() (closeFn func()) { return func() {} }

// writev writes a, then b (no writev off Linux).
func writev(fd uintptr, a, b []byte) (int, syscall.Errno) {
	p := a
	if len(p) == 0 {
		p = b
	}
	n, err := syscall.Write(int(fd), p)
	if err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return 0, e
		}
		return 0, syscall.EIO
	}
	return n, 0
}

// synRetransmits is unknown off Linux.
func synRetransmits(syscall.RawConn) int32 { return -1 }
