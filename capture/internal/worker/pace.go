package worker

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Go's timers wake up to about 1 ms late (the netpoller waits in whole milliseconds), which alone
// would break a 1 ms send-lag budget. The pacer therefore runs on its own locked OS thread,
// sleeps with clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME) and a 1 µs timer slack, and writes
// each request itself (wire.Client.Send), so nothing else has to be scheduled between its wake-up
// and the write.
//
// On a busy CPU a woken thread can still wait behind others for milliseconds, so the pacer thread
// asks for a 0.1 ms scheduler slice (EEVDF lets a task with a shorter slice preempt on wake-up)
// and, when the server is on another machine, nice -20 (the coordinator chooses: beside the
// server the pacer is not raised above the server's priority, see capture's colocated.go). A
// raise needs CAP_SYS_NICE; without it the thread keeps its priority and the worker says so.
// Real-time scheduling (SCHED_FIFO) is not used: the Go runtime's spin-waits (stack scans,
// stop-the-world) on a real-time thread can starve the thread they wait for, and a trial
// stalled sends for a whole second.

// pacerSlice is the scheduler slice lockPacerThread asks for.
const pacerSlice = 100 * time.Microsecond

// lockPacerThread must be called on the pacer goroutine before sleepUntil. It asks for nice
// (when that is a higher priority than the thread's own; a lower one is never taken) and
// pacerSlice, and returns a warning when the priority could not be raised.
func lockPacerThread(nice int) (warn string) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) // ns; best effort
	own := int32(0)
	if cur, err := unix.SchedGetAttr(0, 0); err == nil {
		own = cur.Nice
	}
	raise := int32(nice) < own
	attr := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: min(int32(nice), own), Runtime: uint64(pacerSlice)}
	err := unix.SchedSetAttr(0, &attr, 0)
	if err == unix.EINVAL { // a kernel without custom slices: the nice value alone
		attr.Runtime = 0
		err = unix.SchedSetAttr(0, &attr, 0)
	}
	if err != nil && raise {
		return fmt.Sprintf("pacer thread priority not raised (nice %d: %v; needs CAP_SYS_NICE): send lag may be higher on a busy machine", nice, err)
	}
	return ""
}

// maxNap bounds one clock_nanosleep, so a stop request is seen within this long.
const maxNap = 20 * time.Millisecond

// sleepUntil sleeps until the wall-clock time ns (CLOCK_REALTIME nanoseconds) or for at most
// maxNap, and reports whether ns was reached.
func sleepUntil(ns int64) bool {
	now := time.Now().UnixNano()
	if now >= ns {
		return true
	}
	target := ns
	if ns-now > int64(maxNap) {
		target = now + int64(maxNap)
	}
	ts := unix.NsecToTimespec(target)
	for unix.ClockNanosleep(unix.CLOCK_REALTIME, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
	return target == ns
}
