package aggregate

import (
	"math/rand/v2"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

var replayNoSLO schemas.SLO

// TestBoundsHandMade checks the percentile bounds on small hand-made intervals, ties included.
func TestBoundsHandMade(t *testing.T) {
	tests := []struct {
		name              string
		v, lo, hi, w      []int64
		p50lo, p50, p50hi int64
		p99lo, p99, p99hi int64
	}{
		// Nearest rank over 4 values: p50 is rank 2, p99 rank 4.
		{"points", []int64{1, 2, 3, 4}, []int64{1, 2, 3, 4}, []int64{1, 2, 3, 4}, nil, 2, 2, 2, 4, 4, 4},
		// The intervals overlap and reorder the values: lows sorted 0 1 2 3, highs 4 5 6 7.
		{"overlapping", []int64{3, 1, 4, 2}, []int64{2, 0, 3, 1}, []int64{7, 5, 6, 4}, nil, 1, 2, 5, 3, 4, 7},
		// Ties in the values and in the ends.
		{"ties", []int64{5, 5, 5, 5}, []int64{5, 4, 4, 5}, []int64{5, 5, 9, 9}, nil, 4, 5, 5, 5, 5, 9},
		// Weights count on all three: 1 at [0, 10] weighs 3, 2 at [2, 2] weighs 1 -> p50 rank 2.
		{"weighted", []int64{1, 2}, []int64{0, 2}, []int64{10, 2}, []int64{3, 1}, 0, 1, 10, 2, 2, 10},
	}
	for _, tt := range tests {
		b := newBounded(t.TempDir(), tt.w != nil)
		for i := range tt.v {
			w := int64(1)
			if tt.w != nil {
				w = tt.w[i]
			}
			b.addB(tt.v[i], tt.lo[i], tt.hi[i], w)
		}
		d, err := b.finish()
		if err != nil {
			t.Fatal(err)
		}
		got := [6]int64{*d.P50Lo, *d.P50, *d.P50Hi, *d.P99Lo, *d.P99, *d.P99Hi}
		want := [6]int64{tt.p50lo, tt.p50, tt.p50hi, tt.p99lo, tt.p99, tt.p99hi}
		if got != want {
			t.Errorf("%s: (p50_lo, p50, p50_hi, p99_lo, p99, p99_hi) = %v; want %v", tt.name, got, want)
		}
	}
}

// TestBoundsContainTruth draws true values and intervals around them (many ties, some points,
// in memory and spilled) and checks that every bound holds the true percentile.
func TestBoundsContainTruth(t *testing.T) {
	defer func(n int) { memValues = n }(memValues)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 3, 10, 101, 5000} {
		for _, mem := range []int{1 << 14, 64} {
			memValues = mem
			b := newBounded(t.TempDir(), false)
			truth := newDist(t.TempDir(), false)
			for range n {
				x := rng.Int64N(50) // few distinct values: ties
				lo, hi := x-rng.Int64N(20), x+rng.Int64N(20)
				if rng.IntN(4) == 0 {
					lo, hi = x, x
				}
				v := lo + rng.Int64N(hi-lo+1) // the measured point lies anywhere in the interval
				b.addB(v, lo, hi, 1)
				truth.add(x)
			}
			d, err := b.finish()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := truth.finish()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name         string
				lo, x, hi, v int64
			}{{"p50", *d.P50Lo, *tr.P50, *d.P50Hi, *d.P50}, {"p90", *d.P90Lo, *tr.P90, *d.P90Hi, *d.P90}, {"p99", *d.P99Lo, *tr.P99, *d.P99Hi, *d.P99}} {
				if c.x < c.lo || c.x > c.hi || c.v < c.lo || c.v > c.hi {
					t.Errorf("n=%d mem=%d: %s bound [%d, %d] misses the true %d or the measured %d", n, mem, c.name, c.lo, c.hi, c.x, c.v)
				}
			}
		}
	}
}

// TestEventSpan checks each timestamp's interval: exact, upper_bound and user events, with and
// without rx_after_ns, and the in-order tightening.
func TestEventSpan(t *testing.T) {
	const S, allow = 1000, 20
	tests := []struct {
		name   string
		prevLo int64 // lower end of the previous event (0: none)
		t      int64
		q      string
		kernel bool
		after  int64
		want   span
	}{
		{"exact: stamp less the allowance", 0, 5000, schemas.QualityExact, true, 0, span{4980, 5000}},
		{"exact after an empty read: still the allowance", 0, 5000, schemas.QualityExact, true, 4990, span{4990, 5000}},
		{"upper_bound: from the send", 0, 5000, schemas.QualityUpperBound, true, 0, span{S, 5000}},
		{"upper_bound: from the read that found the socket empty", 0, 5000, schemas.QualityUpperBound, true, 3000, span{3000, 5000}},
		{"user: from the previous event's lower end", 4000, 6000, schemas.QualityUser, false, 3000, span{4000, 6000}},
		{"exact without a kernel time is a user time", 0, 6000, schemas.QualityExact, false, 0, span{S, 6000}},
		{"a stamp before the send keeps lo <= hi", 0, 900, schemas.QualityExact, true, 0, span{900, 900}},
	}
	for _, tt := range tests {
		s := reqState{sentNs: S, sNs: S}
		s.latest.lo = tt.prevLo
		if got := s.eventSpan(tt.t, tt.q, tt.kernel, tt.after, allow); got != tt.want {
			t.Errorf("%s: eventSpan(%d, %s, %v, %d) = %v; want %v", tt.name, tt.t, tt.q, tt.kernel, tt.after, got, tt.want)
		}
	}
}

// TestRequestIntervals checks a request's metric intervals against hand computation.
func TestRequestIntervals(t *testing.T) {
	// Sent in [1000, 1100]; content events at [1980, 2000] (exact), [2000, 3000] (upper_bound,
	// the previous read found the socket empty at 2000) and [3980, 4000]; final event [3980, 4000].
	s := reqState{sentNs: 1000, sentEndNs: 1100, sNs: 1000, sEndNs: 1100, plannedNs: 900, sendStartNs: 950, connectNs: -1,
		status: 200, hasDone: true, doneNs: 4000, lastIndex: 3, hasUOut: true, usageOut: 3}
	for _, e := range []struct {
		t   int64
		q   string
		aft int64
	}{{2000, schemas.QualityExact, 0}, {3000, schemas.QualityUpperBound, 2000}, {4000, schemas.QualityExact, 3000}} {
		sp := s.eventSpan(e.t, e.q, true, e.aft, 20)
		s.addEvent(sp, true, true)
		if s.content == 0 {
			s.firstNs = e.t
		} else {
			g := e.t - s.lastNs
			s.gaps++
			s.gapSum += g
			s.gapMax = max(s.gapMax, g)
		}
		s.lastNs = e.t
		s.content++
	}
	m := s.metric(replayNoSLO)
	for _, c := range []struct {
		name         string
		lo, v, hi    *int64
		wlo, wv, whi int64
	}{
		{"ttft", m.TTFTLoNs, m.TTFTNs, m.TTFTHiNs, 1980 - 1100, 1000, 2000 - 1000},
		{"e2e", m.E2ELoNs, m.E2ENs, m.E2EHiNs, 3980 - 1100, 3000, 4000 - 1000},
		{"tpot", m.TPOTLoNs, m.TPOTNs, m.TPOTHiNs, (3980 - 2000) / 2, 1000, (4000 - 1980) / 2},
		// Gaps: [0, 3000-1980] then [3980-3000, 4000-2000]; the largest ends 980 and 2000.
		{"itl_max", m.ITLMaxLoNs, m.ITLMaxNs, m.ITLMaxHiNs, 980, 1000, 2000},
		{"ntpot", m.NTPOTLoNs, m.NTPOTNs, m.NTPOTHiNs, (3980 - 1100) / 3, 1000, (4000 - 1000) / 3},
	} {
		if *c.lo != c.wlo || *c.v != c.wv || *c.hi != c.whi {
			t.Errorf("%s = [%d] %d [%d]; want [%d] %d [%d]", c.name, *c.lo, *c.v, *c.hi, c.wlo, c.wv, c.whi)
		}
	}
	if m.PacerLagNs != 50 || m.SendLagNs != 100 {
		t.Errorf("pacer lag %d, send lag %d; want 50, 100", m.PacerLagNs, m.SendLagNs)
	}
}
