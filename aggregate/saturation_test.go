package aggregate

import (
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestSaturation(t *testing.T) {
	mk := func(idx int32, rate float64, p50 int64, sends, done int64) (schemas.Stage, *stageAcc) {
		acc := newStageAcc(schemas.StageInfo{Index: idx, Mode: "open", Rate: rate}, 0, "")
		acc.requests, acc.firstSent, acc.lastSent = sends*10, 0, 1e9
		for range 10 {
			acc.ts = append(acc.ts, tsBucket{sends: sends, completions: done})
		}
		return schemas.Stage{Stage: idx, TargetRate: rate, Completed: 1, TTFT: schemas.Dist{Count: 1, P50: &p50}}, acc
	}
	tests := []struct {
		name string
		p50  [3]int64
		done [3]int64
		want int
	}{
		{"follows load", [3]int64{10 * ms, 11 * ms, 12 * ms}, [3]int64{1, 2, 4}, -1},
		{"completions fall behind at stage 2", [3]int64{10 * ms, 11 * ms, 12 * ms}, [3]int64{1, 2, 3}, 2},
		{"latency leaves plateau at stage 1", [3]int64{10 * ms, 25 * ms, 30 * ms}, [3]int64{1, 2, 4}, 1},
		{"doubling under 1 ms is noise", [3]int64{100_000, 300_000, 900_000}, [3]int64{1, 2, 4}, -1},
	}
	for _, tt := range tests {
		var rows []schemas.Stage
		var accs []*stageAcc
		for i, sends := range []int64{1, 2, 4} {
			r, a := mk(int32(i), float64(sends*10), tt.p50[i], sends, tt.done[i])
			rows, accs = append(rows, r), append(accs, a)
		}
		if got := saturation(rows, accs); got != tt.want {
			t.Errorf("%s: saturation = %d; want %d", tt.name, got, tt.want)
		}
	}
}
