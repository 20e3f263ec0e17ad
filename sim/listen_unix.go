//go:build unix

package sim

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// setBacklog calls listen(2) again on a listening socket: the kernel keeps the socket and
// sets its accept queue's length.
func setBacklog(fd uintptr, backlog int) error { return unix.Listen(int(fd), backlog) }

// SomaxConn returns net.core.somaxconn, the kernel's cap on a listen backlog (0: unknown, as
// off Linux).
func SomaxConn() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}
