//go:build !linux

package sim

import "time"

func preciseSleep(d time.Duration) { time.Sleep(d) }

func preciseThread() {}
