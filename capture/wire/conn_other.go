//go:build !linux

package wire

import "net"

// sysConn reads with the plain net.Conn Read: no kernel timestamps off Linux.
type sysConn struct{}

func newConn(nc net.Conn, stamp, track bool, st *counters) *Conn {
	return &Conn{Conn: nc, track: track, stats: st}
}

func (s *sysConn) read(c *Conn, p []byte) (int, int64, error) {
	n, err := c.Conn.Read(p)
	return n, 0, err
}

func holdTimestamps() (closeFn func()) { return func() {} }
