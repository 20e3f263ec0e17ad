package sim

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep sleeps d in one nanosleep system call: the kernel wakes the thread within its
// timer slack (50 µs by default), whereas a Go timer may fire up to 1 ms late when the
// scheduler is idle (its poller waits in whole milliseconds).
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for {
		var rem unix.Timespec
		if err := unix.Nanosleep(&ts, &rem); err != unix.EINTR {
			return
		}
		ts = rem
	}
}
