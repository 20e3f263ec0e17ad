//go:build linux

package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysConn reads with recvmsg through RawConn.Read, so the goroutine parks on the netpoller on
// EAGAIN and deadlines and Close keep working. Msghdr, iovec and control buffer are preallocated
// and the read function is a cached method value: a read allocates nothing.
type sysConn struct {
	rc     syscall.RawConn
	fn     func(fd uintptr) bool
	msg    unix.Msghdr
	iov    unix.Iovec
	oob    [256]byte
	n      int
	errno  syscall.Errno
	kernel int64
	// Read coalescing (ClientConfig.Coalesce): batching is on while the socket's SO_RCVLOWAT
	// is batchLowat; lastData is the user time of the latest read that returned bytes; laterFn
	// and nowFn are cached method values of recvLater and recvNow, waited recvLater's state.
	laterFn  func(fd uintptr) bool
	nowFn    func(fd uintptr)
	waited   bool
	batching bool
	lastData int64
}

// batchLowat is the SO_RCVLOWAT of a batching socket: the netpoller is woken once this much
// is queued (or on FIN, an error, or a closing window), not for each segment. It is small on
// purpose: a read empties the queue and acknowledges what it took, and Linux's own ACKs from
// the softirq wait until more than rcv_mss bytes (up to several KiB on loopback) are
// unacknowledged, so a larger mark lets a burst outrun the sender's congestion window and
// holds the server back (docs/design/footprint.md).
const batchLowat = 1 << 10

// tsFlags asks for software receive timestamps; both flags are needed or nothing is reported.
const tsFlags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE

// newConn wraps a dialed connection; stamp enables SO_TIMESTAMPING before any request is written.
func newConn(nc net.Conn, stamp, track bool, st *counters) *stampedConn {
	c := wrap(nc, track, st)
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		c.sys.rc = nil
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	c.sys.rc = rc
	c.sys.fn = c.sys.recv
	c.sys.laterFn, c.sys.nowFn = c.sys.recvLater, c.sys.recvNow
	capRetransmit(rc)
	if stamp {
		var serr error
		err = rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, tsFlags)
		})
		c.stamping = err == nil && serr == nil
	}
	return c
}

func (s *sysConn) recv(fd uintptr) bool {
	for {
		s.msg.SetControllen(len(s.oob))
		s.msg.Flags = 0
		n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.msg)), unix.MSG_DONTWAIT)
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN {
			return false // park on the netpoller until the socket is readable
		}
		s.n, s.errno = int(n), e
		return true
	}
}

// recvLater is recv for a batching socket: its first call parks the reader on the netpoller
// without a system call, so it wakes only once batchLowat bytes are queued (or the deadline).
func (s *sysConn) recvLater(fd uintptr) bool {
	if !s.waited {
		s.waited = true
		return false
	}
	return s.recv(fd)
}

// recvNow is recv that never parks: EAGAIN is left in s.errno.
func (s *sysConn) recvNow(fd uintptr) {
	if !s.recv(fd) {
		s.n, s.errno = 0, unix.EAGAIN
	}
}

// setLowat sets the socket's SO_RCVLOWAT; batching follows it.
func (s *sysConn) setLowat(n int) {
	_ = s.rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, n) })
	s.batching = n > 1
}

// arrived notes a read that returned bytes at user time now: a read that came within one
// window of the one before starts batching.
func (s *sysConn) arrived(c *stampedConn, now int64) {
	if c.coalesce > 0 && !s.batching && s.rc != nil && s.lastData > 0 && now-s.lastData < int64(c.coalesce) {
		s.setLowat(batchLowat)
	}
	s.lastData = now
}

// readBatch is a batching socket's read: it waits until batchLowat bytes are queued or one
// window has passed, then takes what is there. A window that brought nothing means the stream
// has slowed or ended: the socket wakes on each segment again (a later read within a window
// of this one batches anew) and the read waits as any other.
func (s *sysConn) readBatch(c *stampedConn) error {
	c.readBy(time.Now().Add(c.coalesce))
	s.waited = false
	err := s.rc.Read(s.laterFn)
	if !errors.Is(err, os.ErrDeadlineExceeded) || c.killed.Load() {
		return err
	}
	c.readBy(time.Time{})
	if err = s.rc.Control(s.nowFn); err != nil || s.errno != unix.EAGAIN {
		return err
	}
	s.setLowat(1)
	s.n, s.errno = 0, 0
	return s.rc.Read(s.fn)
}

func (s *sysConn) read(c *stampedConn, p []byte) (int, int64, error) {
	if s.rc == nil || len(p) == 0 {
		n, err := c.Conn.Read(p)
		return n, 0, err
	}
	s.iov.Base = &p[0]
	s.iov.SetLen(len(p))
	s.msg.Iov = &s.iov
	s.msg.SetIovlen(1)
	s.msg.Control = &s.oob[0]
	s.n, s.errno = 0, 0
	var err error
	if s.batching {
		err = s.readBatch(c)
	} else {
		err = s.rc.Read(s.fn)
	}
	s.iov.Base = nil // do not keep the caller's buffer alive
	if err != nil {
		return 0, 0, wrapNetErr(c, err)
	}
	if s.errno != 0 {
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: s.errno}
	}
	if s.n == 0 {
		return 0, 0, io.EOF
	}
	var kernel int64
	if c.stamping && s.msg.Flags&unix.MSG_CTRUNC == 0 {
		kernel = parseTimestamp(s.oob[:min(int(s.msg.Controllen), len(s.oob))])
	}
	return s.n, kernel, nil
}

// parseTimestamp returns the software time (the first of three timespecs) of an SCM_TIMESTAMPING
// control message, or 0. Hand-written: unix.ParseSocketControlMessage allocates.
func parseTimestamp(b []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	for len(b) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdr || l > len(b) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPING && l >= hdr+3*int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[hdr]))
			if ns := ts.Nano(); ns > 0 {
				return ns
			}
			return 0
		}
		al := (l + int(unsafe.Sizeof(uintptr(0))) - 1) &^ (int(unsafe.Sizeof(uintptr(0))) - 1)
		if al >= len(b) {
			return 0
		}
		b = b[al:]
	}
	return 0
}

// wrapNetErr turns a RawConn error into what net.Conn.Read returns.
func wrapNetErr(c *stampedConn, err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		return err
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// holdTimestamps opens a loopback UDP socket with RX software timestamps on and keeps it for
// the client's life. Linux turns receive timestamping on host-wide (net_enable_timestamp) from a
// deferred work item when the first socket asks for it and off when the last one closes, so
// without a holder the first packets of a fresh connection arrive unstamped. It waits (at most
// ~100 ms) until a datagram it sends to itself comes back stamped.
func holdTimestamps() (closeFn func()) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return func() {}
	}
	closeFn = func() { unix.Close(fd) }
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, tsFlags); err != nil {
		return closeFn
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return closeFn
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		return closeFn
	}
	var buf [1]byte
	oob := make([]byte, 256)
	for range 200 {
		if err := unix.Sendto(fd, buf[:], 0, self); err != nil {
			return closeFn
		}
		time.Sleep(500 * time.Microsecond)
		for {
			_, oobn, _, _, err := unix.Recvmsg(fd, buf[:], oob, 0)
			if err != nil {
				break
			}
			if parseTimestamp(oob[:oobn]) > 0 {
				return closeFn
			}
		}
	}
	return closeFn
}

// writev writes a and b with one non-blocking writev, as a raw syscall: a pacer calling it keeps
// its P. It returns the bytes written.
func writev(fd uintptr, a, b []byte) (int, syscall.Errno) {
	var iov [2]unix.Iovec
	n := 0
	for _, p := range [][]byte{a, b} {
		if len(p) > 0 {
			iov[n].Base = &p[0]
			iov[n].SetLen(len(p))
			n++
		}
	}
	w, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	if e != 0 {
		return 0, e
	}
	return int(w), 0
}

// synRetransmits returns how many segments the connection has retransmitted (TCP_INFO
// tcpi_total_retrans): right after connect, its SYN retransmissions; -1 when unknown.
func synRetransmits(rc syscall.RawConn) int32 {
	n := int32(-1)
	_ = rc.Control(func(fd uintptr) {
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = int32(ti.Total_retrans)
		}
	})
	return n
}
