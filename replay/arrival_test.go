package replay

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func offsets(kind string, rate, burst float64, d time.Duration, seed uint64) []int64 {
	a := newArrivals(kind, rate, burst, d, rand.New(rand.NewPCG(seed, 7)))
	var out []int64
	for {
		off, ok := a.next()
		if !ok {
			return out
		}
		out = append(out, off)
	}
}

func gaps(offs []int64) []float64 {
	g := make([]float64, 0, len(offs))
	for i := 1; i < len(offs); i++ {
		g = append(g, float64(offs[i]-offs[i-1])/1e9)
	}
	return g
}

func TestConstantSpacingIsExact(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		d    time.Duration
		n    int
		gap  int64 // ns, exact
	}{
		{20, 5 * time.Second, 100, 50_000_000},
		{50, 5 * time.Second, 250, 20_000_000},
		{1000, time.Second, 1000, 1_000_000},
		{4, 10 * time.Second, 40, 250_000_000},
	} {
		offs := offsets("constant", tc.rate, 0, tc.d, 1)
		if len(offs) != tc.n {
			t.Errorf("constant %g/s over %v: %d requests; want %d", tc.rate, tc.d, len(offs), tc.n)
		}
		for i, off := range offs {
			if want := int64(i) * tc.gap; off != want {
				t.Errorf("constant %g/s: offset[%d] = %d; want %d", tc.rate, i, off, want)
				break
			}
		}
	}
	// A rate whose period is not a whole number of ns: offsets are round(i·1e9/rate), so they
	// never drift.
	offs := offsets("constant", 3, 0, 100*time.Second, 1)
	if got, want := offs[299], int64(math.Round(299*1e9/3.0)); got != want {
		t.Errorf("constant 3/s: offset[299] = %d; want %d", got, want)
	}
}

func TestMeanRate(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		rate  float64
		burst float64
	}{
		{"poisson", 100, 0},
		{"poisson", 5000, 0},
		{"gamma", 100, 1},
		{"gamma", 100, 0.25},
		{"gamma", 500, 4},
	} {
		d := 200 * time.Second
		n := float64(len(offsets(tc.kind, tc.rate, tc.burst, d, 3)))
		want := tc.rate * d.Seconds()
		// The count of a renewal process has std ≈ √want · CV (CV = 1 for Poisson, 1/√k for
		// gamma); allow 5 of them.
		cv := 1.0
		if tc.kind == "gamma" {
			cv = 1 / math.Sqrt(tc.burst)
		}
		tol := 5 * math.Sqrt(want) * cv
		if math.Abs(n-want) > tol {
			t.Errorf("%s(rate %g, burstiness %g) over %v: %g requests; want %g ± %.0f", tc.kind, tc.rate, tc.burst, d, n, want, tol)
		}
	}
}

// ksExponential returns the Kolmogorov–Smirnov statistic of xs against Exp(rate).
func ksExponential(xs []float64, rate float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := float64(len(s))
	d := 0.0
	for i, x := range s {
		f := 1 - math.Exp(-rate*x)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	return d
}

func TestPoissonGapsPassKS(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		g := gaps(offsets("poisson", 50, 0, 100*time.Second, seed))
		d := ksExponential(g, 50)
		// Critical value at α = 0.001: 1.95/√n.
		if crit := 1.95 / math.Sqrt(float64(len(g))); d > crit {
			t.Errorf("seed %d: KS statistic of Poisson gaps vs Exp(50) = %.4f; want < %.4f (n=%d)", seed, d, crit, len(g))
		}
	}
	// The test must be able to fail: constant gaps are far from exponential.
	g := gaps(offsets("constant", 50, 0, 100*time.Second, 1))
	if d := ksExponential(g, 50); d < 0.2 {
		t.Errorf("KS statistic of constant gaps vs Exp(50) = %.4f; want a clear rejection", d)
	}
}

func TestGammaCoefficientOfVariation(t *testing.T) {
	for _, burst := range []float64{0.25, 0.5, 1, 2, 4} {
		g := gaps(offsets("gamma", 100, burst, 500*time.Second, 11))
		var sum, sq float64
		for _, x := range g {
			sum += x
		}
		mean := sum / float64(len(g))
		for _, x := range g {
			sq += (x - mean) * (x - mean)
		}
		cv := math.Sqrt(sq/float64(len(g)-1)) / mean
		want := 1 / math.Sqrt(burst)
		if math.Abs(cv-want)/want > 0.05 {
			t.Errorf("gamma(burstiness %g): CV of gaps = %.3f; want %.3f ± 5%%", burst, cv, want)
		}
		if math.Abs(mean-0.01)/0.01 > 0.03 {
			t.Errorf("gamma(burstiness %g): mean gap = %.5fs; want 0.01s ± 3%%", burst, mean)
		}
	}
}
