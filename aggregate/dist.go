package aggregate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"

	"github.com/wirebench/wirebench/internal/interval"
	"github.com/wirebench/wirebench/schemas"
)

// quantiles are the percentiles every Dist reports, in the order of its fields.
var quantiles = [...]float64{0.50, 0.90, 0.95, 0.99, 0.999}

// NearestRank returns the nearest rank of quantile q among n (weighted) values: ceil(q*n), at least 1.
// The percentile is the value at that rank in ascending order (1-based). Nearest rank always
// returns an observed value and needs no interpolation, so it is exact and reproducible in SQL:
// quantile_disc(q) in DuckDB.
func NearestRank(q float64, n int64) int64 { return int64(interval.NearestRank(q, int(n))) }

// memValues is how many values a dist keeps in memory before it spills the rest to a temporary
// file. It bounds aggregate's memory to about (dists open) * memValues * 16 bytes whatever the
// size of the run.
var memValues = 1 << 14

// dist accumulates int64 values (with optional integer weights) for exact nearest-rank
// percentiles with bounded memory. Up to memValues values stay in memory; beyond that they go to
// a spill file. finish then selects exactly in two passes over the spill: a log-linear histogram
// of counts (1024 sub-buckets per power of two) locates the bucket of each wanted rank, and only
// the values of those few buckets are collected and sorted. The result is the same as sorting
// every value.
type dist struct {
	weighted bool
	n        int64 // total weight (count when unweighted)
	sumHi    int64 // 128-bit sum of v*w: high word
	sumLo    uint64
	min, max int64
	vals     []int64
	wts      []int64
	dir      string // where to spill
	spill    *os.File
	bw       *bufio.Writer
	err      error
}

func newDist(dir string, weighted bool) *dist {
	return &dist{dir: dir, weighted: weighted, min: math.MaxInt64, max: math.MinInt64}
}

// bounded is a dist of values that carry the client's error, with the dists of their lower and
// upper ends: its percentile bounds are the same percentiles of those (see schemas.Dist).
type bounded struct {
	*dist
	lo, hi *dist
}

func newBounded(dir string, weighted bool) bounded {
	return bounded{newDist(dir, weighted), newDist(dir, weighted), newDist(dir, weighted)}
}

// addB adds value v with its interval [lo, hi] and weight w.
func (b bounded) addB(v, lo, hi, w int64) {
	b.addW(v, w)
	b.lo.addW(lo, w)
	b.hi.addW(hi, w)
}

// finish returns the distribution with its percentile bounds.
func (b bounded) finish() (schemas.Dist, error) {
	out, err := b.dist.finish()
	lo, err1 := b.lo.finish()
	hi, err2 := b.hi.finish()
	if err = errors.Join(err, err1, err2); err != nil {
		return out, err
	}
	out.P50Lo, out.P90Lo, out.P99Lo = lo.P50, lo.P90, lo.P99
	out.P50Hi, out.P90Hi, out.P99Hi = hi.P50, hi.P90, hi.P99
	return out, nil
}

func (b bounded) close() {
	b.dist.close()
	b.lo.close()
	b.hi.close()
}

func (d *dist) add(v int64) { d.addW(v, 1) }

// addW adds value v with weight w (> 0): it counts as w values equal to v.
func (d *dist) addW(v, w int64) {
	if w <= 0 {
		return
	}
	d.n += w
	hi, lo := bits.Mul64(uint64(abs(v)), uint64(w))
	if v < 0 {
		// two's complement negate of the 128-bit product
		lo, hi = ^lo, ^hi
		var c uint64
		lo, c = bits.Add64(lo, 1, 0)
		hi += c
	}
	var c uint64
	d.sumLo, c = bits.Add64(d.sumLo, lo, 0)
	d.sumHi += int64(hi) + int64(c)
	d.min = min(d.min, v)
	d.max = max(d.max, v)
	if len(d.vals) < memValues || d.err != nil {
		if d.err == nil {
			d.vals = append(d.vals, v)
			if d.weighted {
				d.wts = append(d.wts, w)
			}
		}
		return
	}
	if d.spill == nil {
		d.spill, d.err = os.CreateTemp(d.dir, "spill-*")
		if d.err != nil {
			d.err = fmt.Errorf("spill values: %w", d.err)
			return
		}
		d.bw = bufio.NewWriterSize(d.spill, 32<<10)
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(v))
	if d.weighted {
		binary.LittleEndian.PutUint64(b[8:], uint64(w))
		_, d.err = d.bw.Write(b[:])
	} else {
		_, d.err = d.bw.Write(b[:8])
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// mean returns the rounded mean sum(v*w)/n.
func (d *dist) mean() int64 {
	if d.n == 0 {
		return 0
	}
	s := float64(d.sumHi)*math.Ldexp(1, 64) + float64(d.sumLo)
	return int64(math.Round(s / float64(d.n)))
}

// close removes the spill file.
func (d *dist) close() {
	if d.spill != nil {
		d.spill.Close()
		os.Remove(d.spill.Name())
		d.spill = nil
	}
	d.vals, d.wts = nil, nil
}

// bucketOf maps x (a value minus the dist's minimum) to a log-linear bucket: exact below 1024,
// then 1024 sub-buckets per power of two. It is monotonic in x.
func bucketOf(x uint64) int {
	if x < 1024 {
		return int(x)
	}
	shift := bits.Len64(x) - 11
	return 1024 + shift*1024 + int(x>>shift) - 1024
}

// each calls f for every value: first the in-memory ones, then the spilled ones.
func (d *dist) each(f func(v, w int64)) error {
	for i, v := range d.vals {
		w := int64(1)
		if d.weighted {
			w = d.wts[i]
		}
		f(v, w)
	}
	if d.spill == nil {
		return nil
	}
	if _, err := d.spill.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read spill: %w", err)
	}
	br := bufio.NewReaderSize(d.spill, 64<<10)
	size := 8
	if d.weighted {
		size = 16
	}
	var b [16]byte
	for {
		if _, err := io.ReadFull(br, b[:size]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read spill: %w", err)
		}
		w := int64(1)
		if d.weighted {
			w = int64(binary.LittleEndian.Uint64(b[8:]))
		}
		f(int64(binary.LittleEndian.Uint64(b[:8])), w)
	}
}

// finish returns the distribution and releases the dist's memory and spill file.
func (d *dist) finish() (schemas.Dist, error) {
	defer d.close()
	if d.err != nil {
		return schemas.Dist{}, d.err
	}
	if d.n == 0 {
		return schemas.Dist{}, nil // every figure null: there is none
	}
	out := schemas.Dist{Count: d.n, Max: ptr(d.max), Mean: ptr(d.mean())}
	var ranks [len(quantiles)]int64
	for i, q := range quantiles {
		ranks[i] = NearestRank(q, d.n)
	}
	var res [len(quantiles)]int64
	if d.spill == nil {
		sel(d.vals, d.wts, ranks[:], res[:])
	} else {
		if err := d.bw.Flush(); err != nil {
			return out, fmt.Errorf("spill values: %w", err)
		}
		if err := d.selectSpilled(ranks[:], res[:]); err != nil {
			return out, err
		}
	}
	out.P50, out.P90, out.P95, out.P99, out.P999 = &res[0], &res[1], &res[2], &res[3], &res[4]
	// Values without client error: the bounds are the percentiles themselves.
	out.P50Lo, out.P90Lo, out.P99Lo = out.P50, out.P90, out.P99
	out.P50Hi, out.P90Hi, out.P99Hi = out.P50, out.P90, out.P99
	return out, nil
}

// sel sorts vals (with weights wts, nil for all 1) and stores the value at each 1-based rank
// (counted within vals) in res. ranks must be ascending.
func sel(vals, wts []int64, ranks, res []int64) {
	if wts == nil {
		slices.Sort(vals)
		for i, r := range ranks {
			res[i] = vals[r-1]
		}
		return
	}
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case vals[a] < vals[b]:
			return -1
		case vals[a] > vals[b]:
			return 1
		}
		return 0
	})
	var cum int64
	k := 0
	for _, i := range idx {
		cum += wts[i]
		for k < len(ranks) && ranks[k] <= cum {
			res[k] = vals[i]
			k++
		}
	}
}

// collectLimit is the most values selectSpilled gathers in memory to sort for one rank; a
// histogram bucket holding more is narrowed by further passes first. A variable for tests.
var collectLimit int64 = 1 << 18

// narrowBuckets is how many equal-width sub-buckets a narrowing pass splits a range into.
const narrowBuckets = 4096

// selectSpilled is the exact selection over the in-memory and spilled values. A first pass
// counts the values of each log-linear bucket, with each bucket's smallest and largest value,
// and locates each wanted rank's bucket. A bucket whose values are all equal answers at once;
// one holding at most collectLimit values is gathered and sorted in a second pass; a bigger one
// (latencies that cluster, e.g. a fixed inter-token gap) is narrowed by equal-width histogram
// passes over its range until one of those holds. Memory stays bounded by collectLimit whatever
// the run's size.
func (d *dist) selectSpilled(ranks, res []int64) error {
	lo := d.min
	nb := bucketOf(uint64(d.max-lo)) + 1
	counts := make([]int64, nb)
	bmin, bmax := make([]int64, nb), make([]int64, nb)
	if err := d.each(func(v, w int64) {
		b := bucketOf(uint64(v - lo))
		if counts[b] == 0 || v < bmin[b] {
			bmin[b] = v
		}
		if counts[b] == 0 || v > bmax[b] {
			bmax[b] = v
		}
		counts[b] += w
	}); err != nil {
		return err
	}
	var cum int64
	k := 0
	for b, c := range counts {
		for k < len(ranks) && ranks[k] <= cum+c {
			v, err := d.selectRange(bmin[b], bmax[b], c, ranks[k]-cum)
			if err != nil {
				return err
			}
			res[k] = v
			k++
		}
		cum += c
	}
	return nil
}

// selectRange returns the value at 1-based rank r among the n (weighted) values in [lo, hi].
func (d *dist) selectRange(lo, hi, n, r int64) (int64, error) {
	for {
		if lo == hi {
			return lo, nil
		}
		if n <= collectLimit {
			var vals, wts []int64
			if err := d.each(func(v, w int64) {
				if v >= lo && v <= hi {
					vals = append(vals, v)
					if d.weighted {
						wts = append(wts, w)
					}
				}
			}); err != nil {
				return 0, err
			}
			var one [1]int64
			sel(vals, wts, []int64{r}, one[:])
			return one[0], nil
		}
		// Equal-width sub-buckets of [lo, hi]; width >= 1, so each pass shrinks the range.
		width := uint64(hi-lo)/narrowBuckets + 1
		var counts [narrowBuckets]int64
		var smin, smax [narrowBuckets]int64
		if err := d.each(func(v, w int64) {
			if v < lo || v > hi {
				return
			}
			b := uint64(v-lo) / width
			if counts[b] == 0 || v < smin[b] {
				smin[b] = v
			}
			if counts[b] == 0 || v > smax[b] {
				smax[b] = v
			}
			counts[b] += w
		}); err != nil {
			return 0, err
		}
		var cum int64
		for b, c := range counts {
			if r <= cum+c {
				lo, hi, n, r = smin[b], smax[b], c, r-cum
				break
			}
			cum += c
		}
	}
}
