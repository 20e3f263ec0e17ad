package replay

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// arrivals generates the send offsets of an open-loop stage, in nanoseconds from the stage start,
// until the stage duration. It never waits on anything: it is a pure function of its seed.
//   - constant: offset_i = round(i · 1e9 / rate), i = 0, 1, ...: exactly evenly spaced.
//   - poisson: exponential gaps with mean 1/rate (the first request goes at the stage start).
//   - gamma: gamma gaps with shape k = burstiness and scale 1/(rate·k): mean 1/rate, coefficient
//     of variation 1/√k (k = 1 is Poisson; k < 1 is burstier).
type arrivals struct {
	kind   string // schemas.ArrivalConstant, ArrivalPoisson or ArrivalGamma
	rate   float64
	shape  float64
	endNs  int64
	i      int64
	t      float64 // seconds since the stage start, for random gaps
	rng    *rand.Rand
	period float64 // constant: ns between sends
}

func newArrivals(kind string, rate, burstiness float64, d time.Duration, rng *rand.Rand) *arrivals {
	return &arrivals{kind: kind, rate: rate, shape: burstiness, endNs: int64(d), rng: rng, period: 1e9 / rate}
}

// next returns the next offset and false when the stage has ended.
func (a *arrivals) next() (int64, bool) {
	var off int64
	switch a.kind {
	case schemas.ArrivalConstant:
		off = int64(math.Round(float64(a.i) * a.period))
	case schemas.ArrivalPoisson:
		if a.i > 0 {
			a.t += a.rng.ExpFloat64() / a.rate
		}
		off = int64(a.t * 1e9)
	case schemas.ArrivalGamma:
		if a.i > 0 {
			a.t += gammaRand(a.rng, a.shape) / (a.shape * a.rate)
		}
		off = int64(a.t * 1e9)
	}
	if off >= a.endNs {
		return 0, false
	}
	a.i++
	return off, true
}

// gammaRand draws from Gamma(shape k, scale 1) by Marsaglia and Tsang (2000); for k < 1 it uses
// Gamma(k+1) · U^(1/k).
func gammaRand(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaRand(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
