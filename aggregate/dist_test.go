package aggregate

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDistExact checks the spilling two-pass selection against sorting every value.
func TestDistExact(t *testing.T) {
	oldMem, oldCollect := memValues, collectLimit
	memValues, collectLimit = 100, 64 // spill early, and narrow buckets of more than 64 values
	defer func() { memValues, collectLimit = oldMem, oldCollect }()
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name     string
		n        int
		gen      func() int64
		weighted bool
	}{
		{"small in memory", 50, func() int64 { return rng.Int64N(1000) }, false},
		{"spilled lognormal-ish", 20000, func() int64 { return int64(rng.ExpFloat64() * 5e6) }, false},
		{"spilled all equal large", 5000, func() int64 { return 123_456_789 }, false},
		{"spilled negative", 5000, func() int64 { return rng.Int64N(2e6) - 1e6 }, false},
		{"weighted spilled", 5000, func() int64 { return rng.Int64N(1e9) }, true},
		// Clustered values: most in one log-linear bucket, so selection must narrow it.
		{"spilled clustered", 20000, func() int64 { return 10_000_000 + rng.Int64N(5000) }, false},
		{"spilled two values", 20000, func() int64 { return 10_000_000 + 7*rng.Int64N(2) }, false},
		{"weighted clustered", 5000, func() int64 { return 5_000_000 + rng.Int64N(3000) }, true},
	}
	for _, tt := range tests {
		d := newDist(t.TempDir(), tt.weighted)
		var all []int64
		for range tt.n {
			v, w := tt.gen(), int64(1)
			if tt.weighted {
				w = 1 + rng.Int64N(4)
			}
			d.addW(v, w)
			for range w {
				all = append(all, v)
			}
		}
		got, err := d.finish()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(all)
		n := int64(len(all))
		var sum float64
		for _, v := range all {
			sum += float64(v)
		}
		want := pointDist{Count: n, P50: all[NearestRank(0.5, n)-1], P90: all[NearestRank(0.9, n)-1], P95: all[NearestRank(0.95, n)-1],
			P99: all[NearestRank(0.99, n)-1], P999: all[NearestRank(0.999, n)-1], Max: all[n-1], Mean: int64(sum/float64(n) + 0.5)}
		// A plain dist's values carry no client error: its bounds are its percentiles.
		if !eq(got.P50Lo, got.P50) || !eq(got.P50Hi, got.P50) || !eq(got.P90Lo, got.P90) || !eq(got.P90Hi, got.P90) ||
			!eq(got.P99Lo, got.P99) || !eq(got.P99Hi, got.P99) {
			t.Errorf("%s: bounds %v; want the percentiles themselves", tt.name, got)
		}
		gp := point(got)
		if gp.Mean-want.Mean > 1 || want.Mean-gp.Mean > 1 {
			t.Errorf("%s: mean = %d; want %d", tt.name, gp.Mean, want.Mean)
		}
		gp.Mean = want.Mean
		if gp != want {
			t.Errorf("%s: dist = %+v; want %+v", tt.name, gp, want)
		}
	}
}

func TestRank(t *testing.T) {
	tests := []struct {
		q    float64
		n    int64
		want int64
	}{
		{0.5, 4, 2}, {0.5, 5, 3}, {0.95, 20, 19}, {0.99, 100, 99}, {0.999, 10, 10}, {0.5, 1, 1}, {0.9, 3, 3},
	}
	for _, tt := range tests {
		if got := NearestRank(tt.q, tt.n); got != tt.want {
			t.Errorf("rank(%v, %d) = %d; want %d", tt.q, tt.n, got, tt.want)
		}
	}
}
