package hostclock

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/schemas"
)

// fake returns an Adjtimex that reports state and the given status, maxerror and esterror (µs).
func fake(state int, status int32, maxUs, estUs int64, err error) Adjtimex {
	return func(tx *unix.Timex) (int, error) {
		if tx.Modes != 0 {
			panic("hostclock must only read the clock state (modes 0)")
		}
		tx.Status, tx.Maxerror, tx.Esterror = status, maxUs, estUs
		return state, err
	}
}

func TestReadWith(t *testing.T) {
	tests := []struct {
		name     string
		adj      Adjtimex
		sync     bool
		state    string
		maxNs    int64
		estNs    int64
		hasError bool
	}{
		// chrony synchronised: TIME_OK, STA_PLL, maxerror 1.2 ms, esterror 40 µs
		{"synchronised", fake(unix.TIME_OK, unix.STA_PLL, 1200, 40, nil), true, "TIME_OK", 1_200_000, 40_000, false},
		// a leap second pending is still synchronised
		{"leap insert", fake(unix.TIME_INS, unix.STA_PLL|unix.STA_INS, 300, 10, nil), true, "TIME_INS", 300_000, 10_000, false},
		// no daemon: the kernel sets STA_UNSYNC and returns TIME_ERROR; maxerror at its 16 s cap
		{"no daemon", fake(unix.TIME_ERROR, unix.STA_UNSYNC, 16_000_000, 16_000_000, nil), false, "TIME_ERROR", 16e9, 16e9, false},
		// STA_UNSYNC alone (a daemon that has not locked yet) is unsynchronised
		{"unsync bit", fake(unix.TIME_OK, unix.STA_UNSYNC, 500, 500, nil), false, "TIME_OK", 500_000, 500_000, false},
		// TIME_ERROR alone (PPS signal lost) is unsynchronised
		{"time error", fake(unix.TIME_ERROR, unix.STA_PPSSIGNAL, 100, 1, nil), false, "TIME_ERROR", 100_000, 1_000, false},
		// the call fails (seccomp): nothing is known
		{"call fails", fake(0, 0, 0, 0, errors.New("operation not permitted")), false, "", 0, 0, true},
	}
	for _, tt := range tests {
		c := ReadWith(tt.adj)
		if c.Synchronized != tt.sync || c.State != tt.state || c.MaxErrorNs != tt.maxNs || c.EstErrorNs != tt.estNs || (c.Error != "") != tt.hasError {
			t.Errorf("%s: ReadWith = %+v; want synchronized %v, state %q, max %d ns, est %d ns, error %v", tt.name, c, tt.sync, tt.state, tt.maxNs, tt.estNs, tt.hasError)
		}
		if c.Source != "adjtimex" || c.ReadAt.IsZero() {
			t.Errorf("%s: source %q read at %v; want adjtimex and a time", tt.name, c.Source, c.ReadAt)
		}
	}
}

func TestReadThisHost(t *testing.T) {
	c := Read()
	if c.Error != "" {
		t.Skipf("adjtimex not readable here: %s", c.Error)
	}
	if c.State == "unknown" || c.MaxErrorNs < 0 || c.BootID == "" {
		t.Errorf("Read() = %+v; want a known state, max error >= 0 and a boot id", c)
	}
	if c.Synchronized && c.MaxErrorNs >= 16e9 {
		t.Errorf("Read() = %+v: synchronised with the unsynchronised cap as max error", c)
	}
}

func TestWorse(t *testing.T) {
	sync := schemas.Clock{Synchronized: true, State: "TIME_OK", MaxErrorNs: 1e6, EstErrorNs: 1e4}
	unsync := schemas.Clock{Synchronized: false, State: "TIME_ERROR", Status: unix.STA_UNSYNC, MaxErrorNs: 5e5, EstErrorNs: 2e4}
	if w := Worse(sync, unsync); w.Synchronized || w.State != "TIME_ERROR" || w.MaxErrorNs != 1e6 || w.EstErrorNs != 2e4 {
		t.Errorf("Worse(sync, unsync) = %+v; want unsynchronised, TIME_ERROR, the larger errors 1e6 and 2e4", w)
	}
	if w := Worse(unsync, sync); w.Synchronized || w.State != "TIME_ERROR" || w.Status != unix.STA_UNSYNC {
		t.Errorf("Worse(unsync, sync) = %+v; want the unsynchronised reading's state", w)
	}
	failed := schemas.Clock{Error: "adjtimex: x"}
	if w := Worse(sync, failed); w.Error == "" {
		t.Errorf("Worse(sync, failed) = %+v; want the error kept", w)
	}
}
