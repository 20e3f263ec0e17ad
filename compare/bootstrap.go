package compare

import (
	"github.com/wirebench/wirebench/internal/interval"
)

// Reps are the bootstrap replicates of the quantiles qs of one stage's sample: Lo[j][k] and
// Hi[j][k] are quantile qs[j] of the lower and of the upper ends in replicate k (both over the
// same resampled requests), nil when the sample is too small for qs[j]; PointLo[j] and
// PointHi[j] are the sample's own quantile qs[j] of its lower and upper ends.
type Reps struct {
	Lo, Hi           [][]float64
	PointLo, PointHi []int64
}

// Replicator draws b bootstrap replicates of the quantiles qs of one stage's sample (values in
// the order the requests were sent, each with its client-error ends). Blocks hold at least
// minBlock requests (interval.BlockFloor of the stage); seed makes the draws reproducible.
type Replicator func(s interval.Sample, qs []float64, b, minBlock int, seed uint64) (Reps, error)

// BlockBootstrap is internal/interval's circular block bootstrap (block length by the rule of
// Politis & White with the floor minBlock, "n too small" by interval.TooSmall on the effective
// sample size): the bootstrap of the intervals of stages.parquet.
func BlockBootstrap(s interval.Sample, qs []float64, b, minBlock int, seed uint64) (Reps, error) {
	boot, err := interval.Replicates(s, qs, interval.Options{B: b, Seed: seed, MinBlockLen: minBlock})
	if err != nil {
		return Reps{}, err
	}
	r := Reps{Lo: make([][]float64, len(qs)), Hi: make([][]float64, len(qs)), PointLo: boot.PointLo, PointHi: boot.PointHi}
	for j := range qs {
		if boot.Small[j] {
			continue
		}
		r.Lo[j], r.Hi[j] = floats(boot.Lo[j]), floats(boot.Hi[j])
	}
	return r, nil
}

func floats(xs []int64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
