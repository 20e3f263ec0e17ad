package sim

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// CPU work on the request's path (CPUPerRequest, CPUPerToken): the goroutine serving the
// request computes a hash until it has used the asked CPU time, as a real server's parsing,
// validation, tokenization and detokenization would. It is real work on the simulator's own
// CPUs: it competes with everything else that runs there, the load generator included.

// spinSink keeps the hash alive, so the compiler cannot drop the work.
var spinSink atomic.Uint64

// spinRounds is one slice of work between two clock reads: a few microseconds of dependent
// multiply-xor rounds, long next to the clock read (a system call for the thread CPU clock).
const spinRounds = 8192

// spinSlice does one slice of work on x.
func spinSlice(x uint64) uint64 {
	for range spinRounds {
		hi, lo := bits.Mul64(x^0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9)
		x = hi ^ lo
	}
	return x
}

// spinWall works until d of wall time has passed (where no thread CPU clock is available; a
// spin that is preempted then burns less than d of CPU). It reports false when abort closed
// first.
func spinWall(d time.Duration, abort <-chan struct{}) bool {
	end := time.Now().Add(d)
	x := uint64(d)
	for i := 0; time.Now().Before(end); i++ {
		x = spinSlice(x)
		if i&15 == 15 && aborted(abort) {
			spinSink.Store(x)
			return false
		}
	}
	spinSink.Store(x)
	return true
}

func aborted(abort <-chan struct{}) bool {
	select {
	case <-abort:
		return true
	default:
		return false
	}
}

// spinTokens is the per-token work for n tokens; it reports false when the server aborted.
func (s *Server) spinTokens(n int) bool {
	if s.cfg.CPUPerToken <= 0 || n <= 0 {
		return true
	}
	return spinCPU(time.Duration(n)*s.cfg.CPUPerToken, s.abort)
}
