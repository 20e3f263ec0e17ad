package sim

import (
	"context"
	"fmt"
	"net"
)

// Listen opens the TCP listener for Serve on addr with an accept queue of backlog connections
// (ListenBacklog; 0: the system's default, net.core.somaxconn on Linux, as net.Listen). The
// socket is opened as net.Listen opens it, then listen(2) is called again with backlog, which
// on a listening socket only changes the queue's length. Linux caps backlog at
// net.core.somaxconn (SomaxConn) without an error.
func Listen(ctx context.Context, addr string, backlog int) (net.Listener, error) {
	if backlog < 0 {
		return nil, fmt.Errorf("listen backlog %d is negative", backlog)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil || backlog == 0 {
		return ln, err
	}
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		ln.Close()
		return nil, fmt.Errorf("listen backlog: %T is not a TCP listener", ln)
	}
	rc, err := tl.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = setBacklog(fd, backlog) })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen backlog %d: %w", backlog, err)
	}
	return ln, nil
}
