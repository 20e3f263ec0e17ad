package capture

import (
	"testing"

	"github.com/wirebench/wirebench/internal/colocate"
)

// TestMachineBusyAtLeastTheClient: beside a keep-awake spinner, /proc/stat's busy time less the
// spinner's (both in clock ticks) can come out below the client's own CPU on a light stage; the
// stage's machine busy time is then the client's, never less, and never negative.
func TestMachineBusyAtLeastTheClient(t *testing.T) {
	for _, tc := range []struct {
		name               string
		busy, spin, client int64
		want               int64
	}{
		{"ticks below the client", 2_000e6, 1_990e6, 38e6, 38e6},
		{"spin past busy", 1_000e6, 1_010e6, 0, 0},
		{"others busy too", 2_000e6, 1_000e6, 38e6, 1_000e6},
	} {
		u := &usageClock{cur: 0, begin: usageSample{ok: true, m: colocate.CPUTimes{CPUs: 2}}}
		u.closeStage(usageSample{ok: true, wallNs: 2e9, clientNs: tc.client, spinNs: tc.spin,
			m: colocate.CPUTimes{CPUs: 2, BusyNs: tc.busy, TotalNs: 4e9}})
		if got := u.out[0].MachineBusyNs; got != tc.want {
			t.Errorf("%s: machine busy %d ns; want %d", tc.name, got, tc.want)
		}
	}
}
