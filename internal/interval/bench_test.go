package interval

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkReplicates is one latency of one large stage in aggregate: 131,072 values (the most a
// stage's sample keeps) with client-error ends, in units of 16 (ITL), p50/p90/p99/p99.9, B = 1,000.
func BenchmarkReplicates(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	vals := draw(rng, 1<<17, 0.5)
	lo, hi := make([]int64, len(vals)), make([]int64, len(vals))
	for i, v := range vals {
		lo[i], hi[i] = v-rng.Int64N(50_000), v+rng.Int64N(50_000)
	}
	units := []int{0}
	for u := 16; u <= len(vals); u += 16 {
		units = append(units, u)
	}
	s := Sample{Values: vals, Lo: lo, Hi: hi, Units: units}
	qs := []float64{0.5, 0.9, 0.99, 0.999}
	for b.Loop() {
		if _, err := Replicates(s, qs, Options{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
