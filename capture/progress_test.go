package capture

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/schemas"
)

// TestProgressLogLine: the periodic progress line rounds rates for people and, once a stage's
// sends are all out, says it is draining instead of repeating a falling rate.
func TestProgressLogLine(t *testing.T) {
	sec := int64(time.Second)
	stages := []schemas.StageInfo{
		{Index: 0, Name: "poisson-20rps", Mode: "open", Rate: 20.000000000000004, DurationNs: 10 * sec},
		{Index: 1, Name: "closed-c4", Mode: "closed", Concurrency: 4, OffsetNs: 10 * sec, DurationNs: 10 * sec},
	}
	for _, tc := range []struct {
		name             string
		stage            int32
		sent             []int64
		now              int64
		want, wantAbsent []string
	}{
		// halfway through an open stage: rate and target, the target without float noise
		{"sending", 0, []int64{100, 0}, 5 * sec,
			[]string{"name=poisson-20rps phase=sending", "rate=20.0", "target_rate=20 "}, []string{"20.0000"}},
		// every planned send out, answers still coming: no rate that only falls
		{"draining", 0, []int64{200, 0}, 12 * sec,
			[]string{"phase=draining", "sent=200", "inflight=3"}, []string{"rate="}},
		// a closed-loop stage past its duration drains too
		{"closed over", 1, []int64{200, 50}, 21 * sec,
			[]string{"stage=1 name=closed-c4 phase=draining"}, []string{"rate="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tr := newTracker(stages, map[int32]int64{0: 200, 1: 400}, 1, nil, slog.New(slog.NewTextHandler(&b, nil)))
			tr.update(0, &worker.Progress{Stage: tc.stage, Sent: tc.sent, Done: []int64{0, 0}, Errors: []int64{0, 0}, Inflight: 3, NowNs: tc.now})
			tr.render(tc.now)
			line := b.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("progress line lacks %q:\n%s", w, line)
				}
			}
			for _, w := range tc.wantAbsent {
				if strings.Contains(line, w) {
					t.Errorf("progress line has %q:\n%s", w, line)
				}
			}
		})
	}
}

// TestSig3: TTFTs in the progress line have three significant digits, not the microsecond's
// (ttft_p50=6.258687s).
func TestSig3(t *testing.T) {
	for _, tc := range []struct{ d, want time.Duration }{
		{6258687 * time.Microsecond, 6260 * time.Millisecond},
		{21375 * time.Microsecond, 21400 * time.Microsecond},
		{1003519 * time.Microsecond, 1 * time.Second},
		{987 * time.Microsecond, 987 * time.Microsecond},
		{1234 * time.Nanosecond, 1 * time.Microsecond},
		{0, 0},
	} {
		if got := sig3(tc.d); got != tc.want {
			t.Errorf("sig3(%v) = %v; want %v", tc.d, got, tc.want)
		}
	}
}

func TestPeople(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{20.000000000000004, "20"}, // float noise above
		{39.99999999999999, "40"},  // float noise below
		{5.7432, "5.74"},           // two decimals at most
		{0, "0"},
	} {
		if got := people(tc.v); got != tc.want {
			t.Errorf("people(%v) = %q; want %q", tc.v, got, tc.want)
		}
	}
}
