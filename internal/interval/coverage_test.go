package interval

import (
	"math"
	"math/rand/v2"
	"testing"
)

// draw returns n values exp(σ·z_t)·1e6 of a stationary AR(1) z (ρ = 0: independent) with a
// standard normal marginal: a lognormal, right-skewed sample whose q quantile is
// exp(σ·Φ⁻¹(q))·1e6.
func draw(rng *rand.Rand, n int, rho float64) []int64 {
	out := make([]int64, n)
	z := rng.NormFloat64()
	s := math.Sqrt(1 - rho*rho)
	for i := range out {
		z = rho*z + s*rng.NormFloat64()
		out[i] = int64(math.Exp(0.5*z) * 1e6)
	}
	return out
}

var normQ = map[float64]float64{0.5: 0, 0.99: 2.3263478740408408}

func coverage(t *testing.T, n, draws, b int, rho float64) map[float64]float64 {
	qs := []float64{0.5, 0.99}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(rho*1000)))
	hits := map[float64]int{}
	blk := 0
	for d := range draws {
		iv, err := Intervals(Sample{Values: draw(rng, n, rho)}, qs, Options{B: b, Seed: uint64(d)})
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			truth := int64(math.Exp(0.5*normQ[q]) * 1e6)
			if !iv[i].OK {
				t.Fatalf("n=%d q=%v: too small", n, q)
			}
			if iv[i].Lo <= truth && truth <= iv[i].Hi {
				hits[q]++
			}
		}
		_ = blk
	}
	out := map[float64]float64{}
	for _, q := range qs {
		out[q] = float64(hits[q]) / float64(draws)
	}
	return out
}

func testCoverageExplore(t *testing.T) {
	for _, rho := range []float64{0, 0.8} {
		for _, n := range []int{2000, 5000} {
			t.Logf("rho=%v n=%d: %v", rho, n, coverage(t, n, 1000, 300, rho))
		}
	}
}
