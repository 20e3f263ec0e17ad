package sim

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// spinChunk is the most CPU a spin uses with its goroutine locked to its thread. Between
// chunks it unlocks and yields: a goroutine that runs 10 ms is preempted, and a preempted
// locked goroutine parks its thread, so long spins of many requests at once would otherwise
// need a thread each.
const spinChunk = time.Millisecond

// spinCPU works on the calling goroutine until it has used d of CPU time, read on its thread's
// CPU clock (CLOCK_THREAD_CPUTIME_ID) with the goroutine locked to the thread meanwhile: a
// spin that the scheduler or the kernel preempts still consumes d of CPU in all, as real work
// would, so under contention it takes longer than d. It reports false when abort closed first.
func spinCPU(d time.Duration, abort <-chan struct{}) bool {
	for left := d; left > 0; {
		used, ok := spinLocked(min(left, spinChunk), abort)
		if !ok {
			return false
		}
		if used < 0 { // no thread CPU clock
			return spinWall(left, abort)
		}
		if left -= used; left > 0 {
			runtime.Gosched()
		}
	}
	return true
}

// spinLocked works until its thread has used d of CPU and returns the CPU it used (-1: no
// thread CPU clock); ok is false when abort closed first.
func spinLocked(d time.Duration, abort <-chan struct{}) (used time.Duration, ok bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return -1, true
	}
	start := ts.Nano()
	x := uint64(start)
	defer func() { spinSink.Store(x) }()
	for i := 0; ; i++ {
		x = spinSlice(x)
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
			return -1, true
		}
		if used = time.Duration(ts.Nano() - start); used >= d {
			return used, true
		}
		if i&15 == 15 && aborted(abort) {
			return used, false
		}
	}
}
