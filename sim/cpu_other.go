//go:build !linux

package sim

import "time"

// spinCPU works on the calling goroutine for d of wall time (no thread CPU clock here). It
// reports false when abort closed first.
func spinCPU(d time.Duration, abort <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	return spinWall(d, abort)
}
