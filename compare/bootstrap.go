package compare

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Replicator draws b bootstrap replicates of the quantiles qs of one stage's sample, its values
// in the order the requests were sent, value i lying in [lo[i], hi[i]]. loReps[j][k] and
// hiReps[j][k] are quantile qs[j] of the lower and of the upper ends in replicate k (both over
// the same resampled requests); loReps[j] and hiReps[j] are nil when the sample is too small
// for qs[j]. seed makes the draws reproducible.
type Replicator func(lo, hi []int64, qs []float64, b int, seed uint64) (loReps, hiReps [][]float64)

// MinTail is how many values a sample needs beyond a quantile for BlockBootstrap to give it
// replicates: n × (1 − q) ≥ MinTail (p99: 500 values, p99.9: 5,000). Below, a bootstrap of
// an extreme quantile redraws the same few largest values and its interval is too narrow.
const MinTail = 5

// BlockBootstrap is a circular moving-block bootstrap: a replicate is ⌈n / L⌉ blocks of L
// consecutive requests (L = ⌈n^(1/3)⌉, wrapping at the end) from uniform starts, truncated to n,
// so that requests sent close together, which a queue makes alike, stay together (Künsch 1989;
// Politis & Romano 1994 for the circular form). Its quantiles are nearest rank, found by
// counting the replicate's values per rank of the sorted sample: O(n) per replicate, no sort.
func BlockBootstrap(lo, hi []int64, qs []float64, b int, seed uint64) (loReps, hiReps [][]float64) {
	n := len(lo)
	loReps, hiReps = make([][]float64, len(qs)), make([][]float64, len(qs))
	ok := false
	for j, q := range qs {
		if n > 0 && float64(n)*(1-q) >= MinTail-1e-9 {
			loReps[j], hiReps[j] = make([]float64, b), make([]float64, b)
			ok = true
		}
	}
	if !ok {
		return loReps, hiReps
	}
	rl, sl := ranks(lo)
	rh, sh := ranks(hi)
	block := int(math.Ceil(math.Cbrt(float64(n))))
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	cl, ch := make([]int32, n), make([]int32, n)
	for k := range b {
		clear(cl)
		clear(ch)
		for drawn := 0; drawn < n; {
			start := rng.IntN(n)
			for o := 0; o < block && drawn < n; o++ {
				i := (start + o) % n
				cl[rl[i]]++
				ch[rh[i]]++
				drawn++
			}
		}
		quantilesOf(cl, sl, qs, loReps, k)
		quantilesOf(ch, sh, qs, hiReps, k)
	}
	return loReps, hiReps
}

// ranks returns each value's rank in the sorted values (ties get distinct ranks) and the
// sorted values.
func ranks(v []int64) (rank []int32, sorted []int64) {
	idx := make([]int32, len(v))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		switch {
		case v[a] < v[b]:
			return -1
		case v[a] > v[b]:
			return 1
		}
		return 0
	})
	rank, sorted = make([]int32, len(v)), make([]int64, len(v))
	for r, i := range idx {
		rank[i] = int32(r)
		sorted[r] = v[i]
	}
	return rank, sorted
}

// quantilesOf sets reps[j][k], for each quantile with replicates, to the nearest-rank quantile
// of the replicate whose count per rank is counts (qs ascending).
func quantilesOf(counts []int32, sorted []int64, qs []float64, reps [][]float64, k int) {
	n := int64(len(counts))
	cum, r := int64(0), 0
	for j, q := range qs {
		if reps[j] == nil {
			continue
		}
		want := nearestRank(q, n)
		for cum+int64(counts[r]) < want {
			cum += int64(counts[r])
			r++
		}
		reps[j][k] = float64(sorted[r])
	}
}

// nearestRank is the 1-based nearest rank of quantile q among n values: ⌈q·n⌉, at least 1 (as
// aggregate's percentiles, allowing for q·n's floating error just above an integer).
func nearestRank(q float64, n int64) int64 {
	f := q * float64(n)
	r := int64(math.Ceil(f))
	if r > 1 && float64(r-1) >= f-1e-9 {
		r--
	}
	return max(r, 1)
}
