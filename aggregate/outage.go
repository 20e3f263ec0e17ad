package aggregate

import (
	"sort"

	"github.com/wirebench/wirebench/schemas"
)

// outageScan finds the spans during which the target could not be reached (schemas.Outage has
// the rule) from every request's outcome. It keeps three bit sets over time since the run start,
// one bit per ResolutionNs: answered (a response byte arrived, or a response was under way),
// connect failed, and reset. Memory is bounded by the run's length, not its requests: at most
// maxOutageBits bits a set, the resolution doubling (1 ms, 2 ms, ...) when a run is longer.
type outageScan struct {
	base                 int64 // the run start: bit 0
	res                  int64 // ns per bit
	life, connect, reset []uint64
}

// maxOutageBits bounds each set: 2 MiB, 4.6 hours at 1 ms.
const maxOutageBits = 1 << 24

func newOutageScan(startNs int64) *outageScan {
	return &outageScan{base: startNs, res: 1_000_000}
}

// add records one request.
func (o *outageScan) add(s *reqState) {
	last := s.endNs()
	if s.headersNs != 0 {
		o.setRange(&o.life, s.headersNs, max(s.headersNs, last))
	}
	switch s.errorKind {
	case schemas.ErrConnect:
		o.setRange(&o.connect, s.sendStartNs, s.sendStartNs)
	case schemas.ErrReset:
		at := s.sentNs
		if s.headersNs != 0 {
			at = max(s.headersNs, last) + o.res // after its last byte
		}
		o.setRange(&o.reset, at, at)
	}
}

// bit returns t's bit index, growing the resolution when t lies beyond maxOutageBits. Times
// before the run start (a host whose clock offset puts it earlier) fall on bit 0; without a
// run start the first time seen is bit 0.
func (o *outageScan) bit(t int64) int64 {
	if o.base == 0 {
		o.base = t
	}
	for (t-o.base)/o.res >= maxOutageBits {
		o.coarsen()
	}
	return max(0, (t-o.base)/o.res)
}

// setRange sets the bits of [t0, t1] in set.
func (o *outageScan) setRange(set *[]uint64, t0, t1 int64) {
	i, j := o.bit(t0), o.bit(t1)
	if need := int(j/64 + 1); need > len(*set) {
		*set = append(*set, make([]uint64, need-len(*set))...)
	}
	for k := i; k <= j; k++ {
		if k%64 == 0 && k+63 <= j {
			(*set)[k/64] = ^uint64(0)
			k += 63
			continue
		}
		(*set)[k/64] |= 1 << (k % 64)
	}
}

// coarsen doubles the resolution: bit k of the new sets is bit 2k or 2k+1 of the old.
func (o *outageScan) coarsen() {
	for _, set := range []*[]uint64{&o.life, &o.connect, &o.reset} {
		old := *set
		n := (len(old) + 1) / 2
		out := make([]uint64, n)
		for k := range int64(len(old)) * 64 {
			if old[k/64]&(1<<(k%64)) != 0 {
				out[k/128] |= 1 << ((k / 2) % 64)
			}
		}
		*set = out
	}
	o.res *= 2
}

func has(set []uint64, k int64) bool { return k/64 < int64(len(set)) && set[k/64]&(1<<(k%64)) != 0 }

// windows returns the outages, in time order, with Requests and Errors still zero.
func (o *outageScan) windows() []schemas.Outage {
	n := int64(max(len(o.life), len(o.connect), len(o.reset))) * 64
	var out []schemas.Outage
	lastLife := int64(-1)
	open := false
	var cur schemas.Outage
	var fails, connects int
	at := func(k int64) int64 { return o.base + k*o.res }
	closeAt := func(back int64) {
		if open && connects > 0 && fails >= 2 {
			if back >= 0 {
				cur.EndNs, cur.Back = at(back), true
			}
			out = append(out, cur)
		}
		open = false
	}
	for k := range n {
		switch {
		case has(o.life, k):
			closeAt(k)
			lastLife = k
		case has(o.connect, k) || has(o.reset, k):
			if !open {
				open, fails, connects = true, 0, 0
				cur = schemas.Outage{StartNs: at(k), ResolutionNs: o.res, Errors: map[string]int64{}}
				if lastLife >= 0 {
					cur.LastSeenNs = at(lastLife)
				}
			}
			fails++
			if has(o.connect, k) {
				connects++
			}
		}
	}
	closeAt(-1)
	return out
}

// countOutage adds a request row to the outage whose span holds its send (start).
func countOutage(outs []schemas.Outage, m *schemas.MetricRequest) {
	i := sort.Search(len(outs), func(i int) bool { return !outs[i].Back || outs[i].EndNs > m.SentNs })
	if i == len(outs) || m.SentNs < outs[i].StartNs {
		return
	}
	outs[i].Requests++
	if m.ErrorKind != "" {
		outs[i].Errors[m.ErrorKind]++
	}
}
