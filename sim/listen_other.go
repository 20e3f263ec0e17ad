//go:build !unix

package sim

import "errors"

func setBacklog(fd uintptr, backlog int) error {
	return errors.New("setting the listen backlog is not supported on this system")
}

// SomaxConn returns the kernel's cap on a listen backlog: 0, unknown here.
func SomaxConn() int { return 0 }
