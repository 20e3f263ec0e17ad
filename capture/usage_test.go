package capture

import (
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/colocate"
)

// TestMachineBusyAtLeastTheClient: beside a keep-awake spinner, the machine's busy time less the
// spinner's (idle and the spinner's time both in 10 ms units) can come out below the client's own
// CPU on a light stage; the stage's machine busy time is then the client's, never less, never
// negative and never more than all the window's CPU time.
func TestMachineBusyAtLeastTheClient(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name               string
		idle, spin, client int64
		want               int64
	}{
		{"ticks below the client", 2_000e6, 1_990e6, 38e6, 38e6},
		{"spin past busy", 3_000e6, 1_010e6, 0, 0},
		{"others busy too", 2_000e6, 1_000e6, 38e6, 1_000e6},
		{"idle counted past the window", 4_100e6, 0, 0, 0},
	} {
		u := &usageClock{cur: 0, begin: usageSample{ok: true, m: colocate.CPUTimes{CPUs: 2, At: t0}}}
		u.closeStage(usageSample{ok: true, wallNs: 2e9, clientNs: tc.client, spinNs: tc.spin,
			m: colocate.CPUTimes{CPUs: 2, IdleNs: tc.idle, At: t0.Add(2 * time.Second)}})
		if got := u.out[0].MachineBusyNs; got != tc.want {
			t.Errorf("%s: machine busy %d ns; want %d", tc.name, got, tc.want)
		}
		if got := u.out[0].MachineTotalNs; got != 4e9 {
			t.Errorf("%s: machine total %d ns; want 4e9 (2 CPUs × 2 s)", tc.name, got)
		}
	}
}
