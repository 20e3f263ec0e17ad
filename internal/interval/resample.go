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

// target is one quantile of one end to replicate: the window of ranks around it and its
// replicates.
type target struct {
	e   *end
	q   float64
	w   *window
	cnt []int32 // counts of the window's ranks in the current resample
	out []int64
}

// newTarget prepares quantile q of end e. sd is the expected spread of a resample's count below
// the quantile: the window of ranks spans 6 of them on either side, and a replicate outside it
// is counted in full, so the result is exact anyway.
func newTarget(e *end, q, sd float64, nb int) *target {
	n := len(e.vals)
	r0 := NearestRank(q, n) - 1
	half := int(6*sd) + 64
	w := newWindow(e, max(r0-half, 0), min(r0+half+1, n))
	return &target{e: e, q: q, w: w, cnt: make([]int32, w.c-w.a), out: make([]int64, 0, nb)}
}

// run draws the nb resamples, each once, and appends each target's replicate of each.
func (r *resampler) run(ts []*target) {
	var full []int32 // counts over every rank, for a replicate outside a window
	rng := rand.New(rand.NewPCG(r.seed, 0x626f6f74))
	for range r.nb {
		r.draw(rng)
		total := 0
		for _, s := range r.segs {
			total += s[1] - s[0]
		}
		for _, t := range ts {
			v, ok := t.replicate(r.segs, total)
			if !ok {
				if full == nil {
					full = make([]int32, len(t.e.vals))
				}
				v = t.counted(r.segs, total, full)
			}
			t.out = append(t.out, v)
		}
	}
}

// replicate returns the target's quantile of the resample segs (total values) from its window;
// false when the quantile lies outside the window.
func (t *target) replicate(segs [][2]int, total int) (int64, bool) {
	w := t.w
	below, in := 0, 0
	for _, s := range segs {
		below += int(w.below[s[1]] - w.below[s[0]])
		in += int(w.in[s[1]] - w.in[s[0]])
	}
	rank := NearestRank(t.q, total) // 1-based, within the resample
	if rank <= below || rank > below+in {
		return 0, false
	}
	for _, s := range segs {
		for _, p := range w.pos[w.in[s[0]]:w.in[s[1]]] {
			t.cnt[int(t.e.rank[p])-w.a]++
		}
	}
	v := t.e.sorted[w.a+kth(t.cnt, rank-below)]
	clear(t.cnt)
	return v, true
}

// counted returns the target's quantile of the resample by counting every rank (full: a zeroed
// scratch of one count per value, left zeroed).
func (t *target) counted(segs [][2]int, total int, full []int32) int64 {
	for _, s := range segs {
		for _, rk := range t.e.rank[s[0]:s[1]] {
			full[rk]++
		}
	}
	v := t.e.sorted[kth(full, NearestRank(t.q, total))]
	clear(full)
	return v
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
