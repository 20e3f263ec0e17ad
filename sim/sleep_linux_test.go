package sim

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestPreciseThreadSlack: preciseThread leaves its goroutine on a thread whose timer slack is
// 1 µs (Linux's default is 50 µs).
func TestPreciseThreadSlack(t *testing.T) {
	type answer struct {
		ns  int
		err error
	}
	got := make(chan answer, 1)
	go func() {
		preciseThread() // the thread exits with the goroutine, locked
		ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		got <- answer{ns, err}
	}()
	if a := <-got; a.err != nil || a.ns != 1000 {
		t.Errorf("engine thread's timer slack = %d ns (%v); want 1000", a.ns, a.err)
	}
}
