package interval

import (
	"math/rand/v2"
)

// resampler draws circular-block resamples of units; the same seed gives the same resamples, so
// each quantile and each end is resampled with the same indices, one after the other, without
// keeping the indices.
type resampler struct {
	units []int // unit offsets into the values
	b, nb int   // block length in units, resamples
	seed  uint64
	segs  [][2]int // the value ranges of the current resample
}

func newResampler(units []int, b, nb int, seed uint64) *resampler {
	return &resampler{units: units, b: b, nb: nb, seed: seed}
}

// draw sets r.segs to the value ranges of the next resample: ceil(u/b) blocks of b consecutive
// units starting at uniform units, wrapping around the end (circular), the last block cut so the
// resample has u units like the sample.
func (r *resampler) draw(rng *rand.Rand) {
	u := len(r.units) - 1
	r.segs = r.segs[:0]
	for left := u; left > 0; left -= r.b {
		s, l := rng.IntN(u), min(r.b, left)
		if s+l <= u {
			r.segs = append(r.segs, [2]int{r.units[s], r.units[s+l]})
			continue
		}
		r.segs = append(r.segs, [2]int{r.units[s], r.units[u]}, [2]int{0, r.units[s+l-u]})
	}
}

// window holds, for a window [a, c) of ranks of one end, the prefix counts that give in O(1) per
// block how many of a block's values rank below the window, and where its values in the window are.
type window struct {
	a, c  int
	below []int32 // below[i]: values at positions < i ranked under a
	in    []int32 // in[i]: values at positions < i ranked in [a, c)
	pos   []int32 // positions of the values ranked in [a, c), ascending
}

func newWindow(e *end, a, c int) *window {
	n := len(e.rank)
	w := &window{a: a, c: c, below: make([]int32, n+1), in: make([]int32, n+1)}
	for i, rk := range e.rank {
		w.below[i+1], w.in[i+1] = w.below[i], w.in[i]
		switch {
		case int(rk) < a:
			w.below[i+1]++
		case int(rk) < c:
			w.in[i+1]++
			w.pos = append(w.pos, int32(i))
		}
	}
	return w
}

// quantile returns the nb replicates of quantile q of end e, in resample order. sd is the
// expected spread of a resample's count below the quantile: the window of ranks spans 6 of them
// on either side, and a replicate outside it is counted in full, so the result is exact anyway.
func (r *resampler) quantile(e *end, q, sd float64) []int64 {
	n := len(e.vals)
	r0 := NearestRank(q, n) - 1
	half := int(6*sd) + 64
	w := newWindow(e, max(r0-half, 0), min(r0+half+1, n))
	cnt := make([]int32, w.c-w.a)
	var full []int32 // counts over every rank, for a replicate outside the window
	rng := rand.New(rand.NewPCG(r.seed, 0x626f6f74))
	out := make([]int64, r.nb)
	for j := range out {
		r.draw(rng)
		total, below, in := 0, 0, 0
		for _, s := range r.segs {
			total += s[1] - s[0]
			below += int(w.below[s[1]] - w.below[s[0]])
			in += int(w.in[s[1]] - w.in[s[0]])
		}
		rank := NearestRank(q, total) // 1-based, within the resample
		if rank > below && rank <= below+in {
			for _, s := range r.segs {
				for _, p := range w.pos[w.in[s[0]]:w.in[s[1]]] {
					cnt[int(e.rank[p])-w.a]++
				}
			}
			out[j] = e.sorted[w.a+kth(cnt, rank-below)]
			clear(cnt)
			continue
		}
		if full == nil {
			full = make([]int32, n)
		}
		for _, s := range r.segs {
			for _, rk := range e.rank[s[0]:s[1]] {
				full[rk]++
			}
		}
		out[j] = e.sorted[kth(full, rank)]
		clear(full)
	}
	return out
}

// kth returns the index at which the running sum of cnt reaches k (1-based).
func kth(cnt []int32, k int) int {
	acc := 0
	for i, c := range cnt {
		acc += int(c)
		if acc >= k {
			return i
		}
	}
	return len(cnt) - 1
}
