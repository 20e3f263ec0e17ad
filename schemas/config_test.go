package schemas

import (
	"math"
	"testing"
)

func TestSweepRates(t *testing.T) {
	for _, tc := range []struct {
		s    Sweep
		want []float64
	}{
		{Sweep{MinRate: 10, MaxRate: 50, Stages: 5, Scale: "linear"}, []float64{10, 20, 30, 40, 50}},
		{Sweep{MinRate: 5, MaxRate: 160, Stages: 6, Scale: "geometric"}, []float64{5, 10, 20, 40, 80, 160}},
		{Sweep{MinRate: 7, MaxRate: 9, Stages: 1, Scale: "linear"}, []float64{7}},
	} {
		got := tc.s.Rates()
		if len(got) != len(tc.want) {
			t.Fatalf("%+v.Rates() = %v; want %v", tc.s, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("%+v.Rates() = %v; want %v", tc.s, got, tc.want)
				break
			}
		}
	}
}
