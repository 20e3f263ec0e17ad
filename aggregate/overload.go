package aggregate

import (
	"fmt"
	"slices"

	"github.com/wirebench/wirebench/schemas"
)

// Overload rule thresholds (docs/design/intervals.md#overloaded-stages).
const (
	overloadRatio = 1.25 // the last third's median TTFT over 1.25× the first third's ...
	overloadSlope = 0.02 // ... and above it by more than 2% of the time between the thirds
)

// overloaded reports whether the server fell behind the stage's offered load, its queue growing
// through the stage, and if so why. The stage's first tokens are split by time (the 100 ms
// buckets from the first to the last that holds one) into thirds; it is overloaded when the
// median TTFT of the last third exceeds the first third's by more than overloadRatio times and by
// more than overloadSlope of the time between the thirds' centres: a server that completes a
// share s fewer requests than arrive adds about s seconds of queue per second. Closed-loop and
// warmup stages are never overloaded (a closed loop bounds its queue), nor are stages under 3
// buckets. It reads the buckets' TTFTs before timeseries sorts them (order does not matter).
func (a *stageAcc) overloaded() (bool, string) {
	if a.info.Mode == schemas.ModeClosed || a.info.Warmup {
		return false, ""
	}
	first, last := -1, -1
	for i := range a.ts {
		if len(a.ts[i].ttft) > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	n := last - first + 1
	if first < 0 || n < 3 {
		return false, ""
	}
	third := n / 3
	m1 := bucketMedian(a.ts[first : first+third])
	m3 := bucketMedian(a.ts[last-third+1 : last+1])
	span := int64(n-third) * bucketNs // between the thirds' centres
	if float64(m3) <= overloadRatio*float64(m1) || float64(m3-m1) <= overloadSlope*float64(span) {
		return false, ""
	}
	return true, fmt.Sprintf("median TTFT rose from %s in the stage's first third to %s in its last, %.1f s later: the server fell behind and its queue grew",
		fmtMs(m1), fmtMs(m3), float64(span)/1e9)
}

// bucketMedian is the nearest-rank median of the TTFTs of buckets bs.
func bucketMedian(bs []tsBucket) int64 {
	var v []int64
	for i := range bs {
		v = append(v, bs[i].ttft...)
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[NearestRank(0.5, int64(len(v)))-1]
}
