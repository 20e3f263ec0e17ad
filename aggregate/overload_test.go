package aggregate

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestOverloaded: a stage whose median TTFT grows through it is overloaded; a steady one, a
// noisy short one and a closed loop are not.
// fms is a millisecond in float64 nanoseconds.
const fms = float64(ms)

func TestOverloaded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// stage fills buckets (100 ms each) with 20 TTFTs drawn around ttft(bucket).
	stage := func(mode string, buckets int, ttft func(i int) float64) *stageAcc {
		a := newStageAcc(schemas.StageInfo{Mode: mode, Rate: 200}, 0, "")
		a.ts = make([]tsBucket, buckets+2) // an empty bucket on either side
		for i := range buckets {
			for range 20 {
				a.ts[i+1].ttft = append(a.ts[i+1].ttft, int64(ttft(i)*(0.8+0.4*rng.Float64())))
			}
		}
		return a
	}
	tests := []struct {
		name string
		a    *stageAcc
		want bool
	}{
		// 60 s past capacity by 10%: the queue adds ~0.1 s per second.
		{"queue grows 0.1 s/s", stage("open", 600, func(i int) float64 { return 20*fms + float64(i)*10*fms }), true},
		// a queue carried in from an earlier stage, still growing: the ratio is small, the slope not.
		{"long queue still growing", stage("open", 600, func(i int) float64 { return 60e9 + float64(i)*50*fms }), true},
		{"steady near capacity", stage("open", 600, func(i int) float64 { return 23 * fms }), false},
		// doubling within 0.5 s but by less than 2% of the time: a wobble, not a queue.
		{"short wobble", stage("open", 5, func(i int) float64 { return float64(1+i) * 100_000 }), false},
		{"closed loop", stage("closed", 600, func(i int) float64 { return 20*fms + float64(i)*10*fms }), false},
		{"too short", stage("open", 2, func(i int) float64 { return float64(1+10*i) * fms }), false},
	}
	for _, tt := range tests {
		got, why := tt.a.overloaded()
		if got != tt.want || got != (why != "") {
			t.Errorf("%s: overloaded = %v (%q); want %v", tt.name, got, why, tt.want)
		}
		if got && !strings.Contains(why, "median TTFT rose from") {
			t.Errorf("%s: reason %q does not give the figures", tt.name, why)
		}
	}
}

// TestOverloadedStageHasNoIntervals: finishDists gives an overloaded stage's percentiles no
// interval (the values are still counted), and the same sample an interval otherwise.
func TestOverloadedStageHasNoIntervals(t *testing.T) {
	for _, over := range []bool{false, true} {
		a := newStageAcc(schemas.StageInfo{Mode: "open"}, 0, "")
		rng := rand.New(rand.NewPCG(3, 4))
		for range 500 {
			v := 20*ms + int64(rng.Float64()*fms)
			a.ttftCI.add(v, v, v)
		}
		st := schemas.Stage{Overloaded: over}
		if err := a.finishDists(&st); err != nil {
			t.Fatal(err)
		}
		if st.TTFTCI.Values != 500 {
			t.Errorf("overloaded %v: values = %d; want 500", over, st.TTFTCI.Values)
		}
		if has := st.TTFTCI.P50Lo != nil; has == over {
			t.Errorf("overloaded %v: p50 interval given = %v", over, has)
		}
	}
}
