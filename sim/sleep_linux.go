package sim

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep sleeps d in one nanosleep system call: the kernel wakes the thread within its
// timer slack (50 µs by default; see preciseThread), whereas a Go timer may fire up to 1 ms
// late when the scheduler is idle (its poller waits in whole milliseconds).
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

// preciseThread locks the calling goroutine to its thread and sets the thread's timer slack to
// 1 µs, so that its preciseSleeps end closer to their deadline: with the default 50 µs the
// kernel may end a sleep anywhere in the 50 µs after it (at the first other timer due on that
// CPU), which made every engine step, and every TTFT, late by that much more.
func preciseThread() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) // ns; best effort
}
