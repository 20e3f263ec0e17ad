package interval

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/wirebench/wirebench/internal/race"
)

// draw returns n values exp(σ·z_t)·1e6, σ = 0.5, of a stationary AR(1) series z (ρ = 0:
// independent) with a standard normal marginal: a lognormal, right-skewed sample whose q
// quantile is exp(σ·Φ⁻¹(q))·1e6.
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

// trueQuantile is draw's q quantile for the quantiles the coverage test uses.
func trueQuantile(q float64) int64 {
	z := map[float64]float64{0.5: 0, 0.99: 2.3263478740408408}[q]
	return int64(math.Exp(0.5*z) * 1e6)
}

// coverage returns, per quantile, the share of draws whose interval holds the true quantile,
// and the share of draws that were "n too small" for it; the draws run on two goroutines, each
// draw seeded by its index.
func coverage(t *testing.T, n, draws, b int, rho float64, qs []float64) (cover, small []float64) {
	hits, smalls := make([]int, len(qs)), make([]int, len(qs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for d := g; d < draws; d += 2 {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
				iv, err := Intervals(Sample{Values: draw(rng, n, rho)}, qs, Options{B: b, Seed: uint64(d)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, q := range qs {
					switch truth := trueQuantile(q); {
					case !iv[i].OK:
						smalls[i]++
					case iv[i].Lo <= truth && truth <= iv[i].Hi:
						hits[i]++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range qs {
		cover = append(cover, float64(hits[i])/float64(draws))
		small = append(small, float64(smalls[i])/float64(draws))
	}
	return cover, small
}

// TestCoverage draws 1,000 seeded samples from known distributions, independent and
// autocorrelated (AR(1) with ρ = 0.5 under a lognormal marginal), and checks that the 95%
// intervals of p50 and p99 hold the true quantile in 93% to 97% of them, and that none is "n too
// small". B = 250 keeps it to a few seconds; docs/design/intervals.md has the figures at
// B = 1,000 and for ρ = 0.8.
func TestCoverage(t *testing.T) {
	if race.Enabled {
		t.Skip("3.5 M resamples under the race detector take minutes; make test runs this test plain")
	}
	qs := []float64{0.5, 0.99}
	for _, c := range []struct {
		name string
		n    int
		rho  float64
	}{
		{"independent", 3000, 0},
		{"AR(1) 0.5", 5000, 0.5},
	} {
		cover, small := coverage(t, c.n, 1000, 250, c.rho, qs)
		t.Logf("%s, n = %d: p50 and p99 covered in %v of draws", c.name, c.n, cover)
		for i, q := range qs {
			if cover[i] < 0.93 || cover[i] > 0.97 || small[i] > 0 {
				t.Errorf("%s, n = %d: q%v covered in %.3f of draws (n too small in %.3f); want 0.93-0.97 (and never too small)",
					c.name, c.n, q, cover[i], small[i])
			}
		}
	}
}
