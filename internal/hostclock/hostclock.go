// Package hostclock reads what the kernel says of this host's CLOCK_REALTIME discipline:
// whether NTP, chrony or PTP keeps it synchronised, and the kernel's bound on its error. Every
// manifest records it, so that times from several hosts are compared with the bound their own
// synchronisation daemon keeps, not a guess (docs/design/clocks.md).
package hostclock

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/schemas"
)

// Adjtimex is the read of the kernel's clock state: unix.Adjtimex, or a fake in tests. Read
// calls it with modes 0, which changes nothing.
type Adjtimex func(*unix.Timex) (state int, err error)

// bootIDPath names the running kernel: every process under it reads one CLOCK_REALTIME.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// Read returns this host's clock state from unix.Adjtimex.
func Read() schemas.Clock { return ReadWith(unix.Adjtimex) }

// ReadWith returns the clock state as adj reports it. The kernel keeps maxerror and esterror
// in microseconds; they are recorded in nanoseconds. The clock is synchronised when the
// daemon has cleared STA_UNSYNC and the call does not return TIME_ERROR (which the kernel also
// returns when a PPS signal it was told to follow is lost).
func ReadWith(adj Adjtimex) schemas.Clock {
	c := schemas.Clock{Source: "adjtimex", ReadAt: time.Now().UTC()}
	if b, err := os.ReadFile(bootIDPath); err == nil {
		c.BootID = strings.TrimSpace(string(b))
	}
	var tx unix.Timex
	state, err := adj(&tx)
	if err != nil {
		c.Error = "adjtimex: " + err.Error()
		return c
	}
	c.State = StateName(state)
	c.Status = tx.Status
	c.Synchronized = state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0
	c.MaxErrorNs = int64(tx.Maxerror) * 1000
	c.EstErrorNs = int64(tx.Esterror) * 1000
	return c
}

// StateName names adjtimex's return value.
func StateName(state int) string {
	switch state {
	case unix.TIME_OK:
		return "TIME_OK"
	case unix.TIME_INS:
		return "TIME_INS"
	case unix.TIME_DEL:
		return "TIME_DEL"
	case unix.TIME_OOP:
		return "TIME_OOP"
	case unix.TIME_WAIT:
		return "TIME_WAIT"
	case unix.TIME_ERROR:
		return "TIME_ERROR"
	}
	return "unknown"
}

// Worse combines two readings of one host (a capture reads at its start and at its end): not
// synchronised if either was not, the larger errors, the later time, the first error.
func Worse(a, b schemas.Clock) schemas.Clock {
	if a.Error != "" || b.Error != "" {
		if a.Error == "" {
			return b
		}
		return a
	}
	out := b
	out.Synchronized = a.Synchronized && b.Synchronized
	if !a.Synchronized && b.Synchronized {
		out.State, out.Status = a.State, a.Status
	}
	out.MaxErrorNs = max(a.MaxErrorNs, b.MaxErrorNs)
	out.EstErrorNs = max(a.EstErrorNs, b.EstErrorNs)
	return out
}
