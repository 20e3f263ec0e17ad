// Package interval gives sampling intervals for the percentiles of a time-ordered sample: a
// circular block bootstrap (Politis & Romano 1992) of nearest-rank quantiles, with the block
// length chosen by the automatic rule of Politis & White (2004, corrected by Patton, Politis &
// White 2009), seeded and deterministic. Values may carry the client's own error as lower and
// upper ends; those are resampled with the same indices, and one interval covers both errors:
// from the α/2 point of the lower ends' replicate quantiles to the 1−α/2 point of the upper ends'.
//
// Observations may be grouped into units (the inter-token latencies of one request): blocks are
// then runs of consecutive units, and a unit's values always go together.
//
// A percentile whose sample is too small (see [TooSmall]) gets no interval, never a made-up one.
// The reasoning, with its references, is in docs/design/intervals.md.
//
// Cost: sorting each end once (O(n log n)), the block length (O(n) per lag examined), then per
// replicate and quantile O(k + w): the sum of precomputed prefix counts over the k blocks drawn
// (at most MaxBlocks), plus a counting select among the values of a window of ranks around the
// quantile (w, 12 bootstrap standard deviations of the count below it, O(√n)); a replicate whose
// quantile falls outside the window (rare) is counted in full, O(n). Memory: O(n) words.
package interval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Defaults of [Options].
const (
	DefaultB     = 1000 // replicates: enough for the 2.5% and 97.5% points (Davison & Hinkley 1997, §5.2)
	DefaultLevel = 0.95
)

// MinBeyond is how many observations a percentile needs on its far side (n·(1−q) for the upper
// percentiles, n·q for the lower ones): with fewer, the tail the percentile sits in is a handful
// of values and no resampling can say how far off it is. p99 needs 2,000 values, p99.9 20,000.
const MinBeyond = 20

// MaxBlocks bounds the blocks of a resample, hence its cost: a sample of more than MaxBlocks·b
// units gets blocks of ⌈units/MaxBlocks⌉. A block longer than the dependence needs costs some
// precision of the bootstrap's variance (its relative error grows as 1/√blocks: about 6% at
// 256 blocks, 3% on the interval's width), not its consistency.
const MaxBlocks = 256

// MinBlocks is the fewest blocks a resample may be made of: with fewer, the sample is too short
// for its own dependence and every percentile is "n too small".
const MinBlocks = 8

// Sample is a time-ordered sample of int64 values (latencies in ns).
type Sample struct {
	// Values in time order (e.g. by send time).
	Values []int64
	// Lo and Hi are the lower and upper ends of each value's client-error interval, in the same
	// order; both nil when the values have no such error.
	Lo, Hi []int64
	// Units, when not nil, groups the values: unit i holds Values[Units[i]:Units[i+1]], so
	// Units[0] = 0 and the last entry is len(Values). Nil: every value is its own unit.
	Units []int
}

// Options tune the bootstrap; the zero value gives the defaults.
type Options struct {
	B        int     // replicates; 0: DefaultB
	Level    float64 // confidence level of intervals; 0: DefaultLevel
	Seed     uint64  // the same seed and sample give the same replicates
	BlockLen int     // block length in units; 0: automatic (BlockLength)
	// MinBlockLen is the shortest automatic block, in units: what the caller knows of the
	// sample's dependence that its autocorrelations may not show (aggregate: twice the requests
	// in flight, the requests that share a server's state with each one). 0: none.
	MinBlockLen int
}

// BlockFloor is the shortest block for a sample of requests (one unit each) of which
// inflightMean were in flight on average: twice that (Little's law: a request overlaps those sent
// within one latency before or after it, which share the server's batch and queue with it), so
// that a block never cuts the dependence the automatic rule, reading a few lags of the
// autocorrelation, may miss (docs/design/intervals.md#block-length). 0 when unknown (nil).
func BlockFloor(inflightMean *float64) int {
	if inflightMean == nil {
		return 0
	}
	return int(math.Ceil(2 * *inflightMean))
}

// Interval is the interval of one percentile; OK false means "n too small" (Lo and Hi are 0).
type Interval struct {
	Lo, Hi int64
	OK     bool
}

// Boot holds the bootstrap replicates of a sample's quantiles.
type Boot struct {
	Qs []float64
	// Point, PointLo and PointHi are the sample's own quantiles of the values, the lower ends and
	// the upper ends (all equal without client error).
	Point, PointLo, PointHi []int64
	// Lo[i] and Hi[i] are the B replicates of quantile Qs[i] of the lower ends and of the upper
	// ends, paired: replicate j of both comes from resample j. Nil when Qs[i] is too small for
	// the sample (Small[i]).
	Lo, Hi [][]int64
	Small  []bool
	// BlockLen is the block length used, in units; Units and N the sample's units and values.
	BlockLen, Units, N int
	// Deff[i] is the design effect of the sample around Qs[i]: n/Deff[i] independent values
	// would carry as much information on it (its effective size, to which the small-sample rule
	// applies too). 1 for independent values; more with dependence or units of several values.
	Deff []float64
}

// Errors of malformed samples.
var (
	ErrBounds = errors.New("interval: Lo and Hi must both be nil or as long as Values")
	ErrUnits  = errors.New("interval: Units must rise from 0 to len(Values)")
	ErrQ      = errors.New("interval: quantile outside (0, 1)")
)

// NearestRank returns the nearest rank of quantile q among n values: ceil(q*n), at least 1 (as
// aggregate.NearestRank: the percentile is the value of that 1-based rank in ascending order).
func NearestRank(q float64, n int) int {
	r := int(math.Ceil(q * float64(n)))
	// q*n may carry a tiny floating error above an integer (0.95*20 = 19.000000000000004).
	if f := q * float64(n); r > 1 && float64(r-1) >= f-1e-9 {
		r--
	}
	return max(r, 1)
}

// TooSmall reports whether n values are too few for quantile q: fewer than MinBeyond values
// beyond it on either side. Replicates applies it to n and to the effective size n/Deff of a
// dependent sample (Boot.Deff).
func TooSmall(q float64, n int) bool {
	return float64(n)*(1-q) < MinBeyond-1e-9 || float64(n)*q < MinBeyond-1e-9
}

// Intervals returns the combined interval of each quantile in qs at o.Level.
func Intervals(s Sample, qs []float64, o Options) ([]Interval, error) {
	b, err := Replicates(s, qs, o)
	if err != nil {
		return nil, err
	}
	out := make([]Interval, len(qs))
	for i := range qs {
		out[i] = b.Interval(i, o.Level)
	}
	return out, nil
}

// Interval returns quantile i's interval at level (0: DefaultLevel): from the (1−level)/2 point of
// the lower ends' replicates to the (1+level)/2 point of the upper ends', widened if need be to
// hold the sample's own percentile bounds [PointLo, PointHi].
func (b *Boot) Interval(i int, level float64) Interval {
	if b.Small[i] {
		return Interval{}
	}
	a := (1 - orDefault(level, DefaultLevel)) / 2
	lo := Point(sorted(b.Lo[i]), a)
	hi := Point(sorted(b.Hi[i]), 1-a)
	return Interval{Lo: min(lo, b.PointLo[i]), Hi: max(hi, b.PointHi[i]), OK: true}
}

// Point returns the p point of sorted replicates (ascending): the nearest-rank quantile, so that
// with B = 1000 the 2.5% point is the 25th smallest and the 97.5% point the 975th.
func Point[T int64 | float64](sorted []T, p float64) T {
	return sorted[NearestRank(p, len(sorted))-1]
}

// Change returns the interval of new/base − 1 for quantile i of two independent samples (two
// runs), pairing replicate j of one with replicate j of the other: the (1−level)/2 point of
// newLo/baseHi − 1 to the (1+level)/2 point of newHi/baseLo − 1, so that it covers both
// runs' client error too. ok is false when either is too small or a base replicate is not positive.
func Change(base, new *Boot, i int, level float64) (lo, hi float64, ok bool) {
	if base.Small[i] || new.Small[i] || len(base.Lo[i]) != len(new.Lo[i]) {
		return 0, 0, false
	}
	if slices.Min(base.Lo[i]) <= 0 {
		return 0, 0, false
	}
	// The two runs may have been resampled with the same seed, hence the same block starts:
	// pair them through a fixed shuffle of one side so that no resample is paired with itself.
	n := len(base.Lo[i])
	perm := rand.New(rand.NewPCG(uint64(n), 0x636f6d70)).Perm(n)
	los, his := make([]float64, n), make([]float64, n)
	for j := range n {
		k := perm[j]
		los[j] = float64(new.Lo[i][j])/float64(base.Hi[i][k]) - 1
		his[j] = float64(new.Hi[i][j])/float64(base.Lo[i][k]) - 1
	}
	slices.Sort(los)
	slices.Sort(his)
	a := (1 - orDefault(level, DefaultLevel)) / 2
	return Point(los, a), Point(his, 1-a), true
}

func sorted(xs []int64) []int64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs
}

func orDefault[T int | float64](v, d T) T {
	if v == 0 {
		return d
	}
	return v
}

// Replicates draws o.B circular-block resamples of s (the same for every quantile and for both
// ends) and returns each quantile's replicates.
func Replicates(s Sample, qs []float64, o Options) (*Boot, error) {
	units, err := check(s, qs)
	if err != nil {
		return nil, err
	}
	n, u := len(s.Values), len(units)-1
	b := &Boot{Qs: slices.Clone(qs), N: n, Units: u,
		Point: make([]int64, len(qs)), PointLo: make([]int64, len(qs)), PointHi: make([]int64, len(qs)),
		Lo: make([][]int64, len(qs)), Hi: make([][]int64, len(qs)), Small: make([]bool, len(qs))}
	if n == 0 {
		for i := range qs {
			b.Small[i] = true
		}
		b.Deff = make([]float64, len(qs))
		return b, nil
	}
	val := newEnd(s.Values)
	lo, hi := val, val
	if s.Lo != nil {
		lo, hi = newEnd(s.Lo), newEnd(s.Hi)
	}
	for i, q := range qs {
		r := NearestRank(q, n) - 1
		b.Point[i], b.PointLo[i], b.PointHi[i] = val.sorted[r], lo.sorted[r], hi.sorted[r]
	}
	bs, deffs := dependence(val, units, b.Point)
	b.Deff = deffs
	b.BlockLen = o.BlockLen
	if b.BlockLen <= 0 {
		b.BlockLen = max(slices.Max(bs), o.MinBlockLen)
	}
	b.BlockLen = min(max(b.BlockLen, (u+MaxBlocks-1)/MaxBlocks), u)
	boot := newResampler(units, b.BlockLen, orDefault(o.B, DefaultB), o.Seed)
	var ts []*target                                             // every target, for one pass over the resamples
	tl, th := make([]*target, len(qs)), make([]*target, len(qs)) // each quantile's, of each end
	for i, q := range qs {
		b.Small[i] = TooSmall(q, n) || TooSmall(q, int(float64(n)/deffs[i])) || u/b.BlockLen < MinBlocks
		if b.Small[i] {
			continue
		}
		// The spread of a resample's count below the quantile.
		sd := math.Sqrt(float64(n) * q * (1 - q) * deffs[i])
		tl[i] = newTarget(lo, q, sd, boot.nb)
		ts = append(ts, tl[i])
		th[i] = tl[i]
		if hi != lo {
			th[i] = newTarget(hi, q, sd, boot.nb)
			ts = append(ts, th[i])
		}
	}
	boot.run(ts)
	for i := range qs {
		if tl[i] != nil {
			b.Lo[i], b.Hi[i] = tl[i].out, th[i].out
		}
	}
	return b, nil
}

// check validates s and returns its unit offsets.
func check(s Sample, qs []float64) ([]int, error) {
	for _, q := range qs {
		if !(q > 0 && q < 1) {
			return nil, fmt.Errorf("%w: %v", ErrQ, q)
		}
	}
	n := len(s.Values)
	if (s.Lo == nil) != (s.Hi == nil) || (s.Lo != nil && (len(s.Lo) != n || len(s.Hi) != n)) {
		return nil, ErrBounds
	}
	if s.Units == nil {
		units := make([]int, n+1)
		for i := range units {
			units[i] = i
		}
		return units, nil
	}
	if len(s.Units) == 0 || s.Units[0] != 0 || s.Units[len(s.Units)-1] != n {
		return nil, ErrUnits
	}
	for i := 1; i < len(s.Units); i++ {
		if s.Units[i] < s.Units[i-1] {
			return nil, ErrUnits
		}
	}
	return s.Units, nil
}

// end is one series of values (the values, or their lower or upper ends) with its ranks.
type end struct {
	vals   []int64
	sorted []int64
	rank   []int32 // rank[i]: 0-based position of vals[i] in sorted (ties broken by index)
}

func newEnd(vals []int64) *end {
	idx := make([]int32, len(vals))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if vals[a] != vals[b] {
			if vals[a] < vals[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	e := &end{vals: vals, sorted: make([]int64, len(vals)), rank: make([]int32, len(vals))}
	for r, i := range idx {
		e.sorted[r] = vals[i]
		e.rank[i] = int32(r)
	}
	return e
}
