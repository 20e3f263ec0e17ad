package aggregate

import (
	"hash/fnv"

	"github.com/wirebench/wirebench/internal/interval"
	"github.com/wirebench/wirebench/schemas"
)

// ciQuantiles are the percentiles that get a sampling interval, in the order of schemas.CI.
var ciQuantiles = []float64{0.50, 0.90, 0.99, 0.999}

// ciMaxValues bounds the values a ciSample keeps (3 × 8 bytes each, plus a unit offset): 131,072
// values, about 4 MB per latency and stage. Beyond it the sample keeps every k-th request (k
// doubling as needed): its percentiles' spread is then wider than the full stage's, so the
// interval errs wide, never narrow. A variable for tests.
var ciMaxValues = 1 << 17

// ciSample keeps one latency's values of a stage with their client-error ends, grouped by
// request in the order the requests were read (their send order within a part), for the block
// bootstrap of internal/interval.
type ciSample struct {
	vals, lo, hi []int64
	units        []int // offsets of the kept requests' values; starts with 0
	every        int64 // keep request i (counted from 0) when i % every == 0
	seen         int64 // requests offered
}

func newCISample() *ciSample { return &ciSample{units: []int{0}, every: 1} }

// add adds a request with one value.
func (c *ciSample) add(v, lo, hi int64) {
	if c.keep() {
		c.vals, c.lo, c.hi = append(c.vals, v), append(c.lo, lo), append(c.hi, hi)
		c.endUnit()
	}
}

// addUnit adds a request with its values vs (triples value, lower end, upper end).
func (c *ciSample) addUnit(vs []int64) {
	if len(vs) == 0 || !c.keep() {
		return
	}
	for i := 0; i+2 < len(vs); i += 3 {
		c.vals, c.lo, c.hi = append(c.vals, vs[i]), append(c.lo, vs[i+1]), append(c.hi, vs[i+2])
	}
	c.endUnit()
}

// keep counts a request and reports whether the sample keeps it.
func (c *ciSample) keep() bool {
	c.seen++
	return (c.seen-1)%c.every == 0
}

// endUnit closes the request just added and halves the sample when it is over its bound.
func (c *ciSample) endUnit() {
	c.units = append(c.units, len(c.vals))
	if len(c.vals) <= ciMaxValues {
		return
	}
	// Keep every other kept request: those whose index is a multiple of 2·every.
	c.every *= 2
	n, u := 0, []int{0}
	for i := 0; i < len(c.units)-1; i += 2 {
		a, b := c.units[i], c.units[i+1]
		copy(c.vals[n:], c.vals[a:b])
		copy(c.lo[n:], c.lo[a:b])
		copy(c.hi[n:], c.hi[a:b])
		n += b - a
		u = append(u, n)
	}
	c.vals, c.lo, c.hi, c.units = c.vals[:n], c.lo[:n], c.hi[:n], u
}

// interval returns the sample's intervals; seed names the stage and the latency, so that the
// same run gives the same intervals. Blocks hold at least minBlock requests (interval.BlockFloor).
func (c *ciSample) interval(seed string, minBlock int) (schemas.CI, error) {
	h := fnv.New64a()
	h.Write([]byte(seed))
	s := interval.Sample{Values: c.vals, Lo: c.lo, Hi: c.hi, Units: c.units}
	if c.every > 1 { // a subsample of every k-th request: the same time span in fewer requests
		minBlock = (minBlock + int(c.every) - 1) / int(c.every)
	}
	b, err := interval.Replicates(s, ciQuantiles, interval.Options{Seed: h.Sum64(), MinBlockLen: minBlock})
	if err != nil {
		return schemas.CI{}, err
	}
	out := schemas.CI{Values: int64(len(c.vals))}
	ends := [][2]**int64{{&out.P50Lo, &out.P50Hi}, {&out.P90Lo, &out.P90Hi}, {&out.P99Lo, &out.P99Hi}, {&out.P999Lo, &out.P999Hi}}
	for i := range ciQuantiles {
		if iv := b.Interval(i, 0); iv.OK {
			*ends[i][0], *ends[i][1] = ptr(iv.Lo), ptr(iv.Hi)
			out.BlockLen = int32(b.BlockLen)
		}
	}
	c.release()
	return out, nil
}

// withheld is the sample's record without intervals (an overloaded stage): its size, no ends.
func (c *ciSample) withheld() schemas.CI {
	out := schemas.CI{Values: int64(len(c.vals))}
	c.release()
	return out
}

// release lets the values go once the stage's record is made.
func (c *ciSample) release() { c.vals, c.lo, c.hi, c.units = nil, nil, nil, nil }
