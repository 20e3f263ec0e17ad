package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/internal/interval"
	"github.com/wirebench/wirebench/schemas"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in       string
		metric   string
		pct      string
		above    bool
		thresh   float64
		errToken string // a token the error must name; empty: valid
	}{
		{"ttft.p99>+5%", "ttft", "p99", true, 0.05, ""},
		{"ttft.p99>5%", "ttft", "p99", true, 0.05, ""},           // the sign is optional
		{" e2e.p50 < -10% ", "e2e", "p50", false, -0.10, ""},     // spaces are ignored
		{"NTPOT.P99.9>+2.5%", "ntpot", "p99.9", true, 0.025, ""}, // case-insensitive
		{"tpot.p999>+1%", "tpot", "p99.9", true, 0.01, ""},       // p999 is p99.9
		{"ttft.p99=+5%", "", "", false, 0, "no comparison"},
		{"ttft>+5%", "", "", false, 0, `"ttft" is not METRIC.PERCENTILE`},
		{"ttfx.p99>+5%", "", "", false, 0, `unknown metric "ttfx"`},
		{"itl.p99>+5%", "", "", false, 0, "itl cannot be gated"},
		{"ttft.p98>+5%", "", "", false, 0, `unknown percentile "p98"`},
		{"ttft.p99>+5", "", "", false, 0, `threshold "+5"`},
		{"ttft.p99>+five%", "", "", false, 0, `threshold "+five%"`},
		{"ttft.p99>-5%", "", "", false, 0, "points the other way"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in)
		if tt.errToken != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errToken) {
				t.Errorf("ParseRule(%q) = %v; want an error naming %s", tt.in, err, tt.errToken)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRule(%q) = %v; want nil", tt.in, err)
			continue
		}
		if Metrics[r.Metric].Key != tt.metric || Percentiles[r.Percentile].Name != tt.pct || r.Above != tt.above || math.Abs(r.Threshold-tt.thresh) > 1e-12 {
			t.Errorf("ParseRule(%q) = %s %s above %v %g; want %s %s above %v %g", tt.in, Metrics[r.Metric].Key,
				Percentiles[r.Percentile].Name, r.Above, r.Threshold, tt.metric, tt.pct, tt.above, tt.thresh)
		}
	}
}

func stage(i int32, name, mode string, rate float64, users int32) schemas.Stage {
	return schemas.Stage{Stage: i, Name: name, Mode: mode, TargetRate: rate, Concurrency: users}
}

func TestPair(t *testing.T) {
	base := []schemas.Stage{stage(0, "warm", "open", 5, 0), stage(1, "a", "open", 10, 0), stage(2, "b", "open", 20, 0), stage(3, "c", "closed", 0, 8)}
	new := []schemas.Stage{
		stage(0, "b", "open", 30, 0),   // by name, whatever its rate
		stage(1, "x", "open", 10, 0),   // by rate: a
		stage(2, "y", "closed", 0, 8),  // by concurrency: c
		stage(3, "z", "open", 99, 0),   // no partner
		stage(4, "y2", "closed", 0, 8), // c is taken: no partner
	}
	pairs, ub, un := Pair(base, new)
	want := []StagePair{{2, 0, "name"}, {1, 1, "rate"}, {3, 2, "rate"}}
	if len(pairs) != len(want) {
		t.Fatalf("Pair = %v; want %v", pairs, want)
	}
	for i := range want {
		if pairs[i] != want[i] {
			t.Errorf("pair %d = %v; want %v", i, pairs[i], want[i])
		}
	}
	if len(ub) != 1 || ub[0] != 0 || len(un) != 2 || un[0] != 3 || un[1] != 4 {
		t.Errorf("unmatched base %v, new %v; want [0] and [3 4]", ub, un)
	}
}

func TestBlockBootstrap(t *testing.T) {
	qs := []float64{0.5, 0.9, 0.99}
	// 1,000 independent values: p50 and p90 have replicates, p99 (10 values beyond it) does not.
	rng := rand.New(rand.NewPCG(7, 7))
	s := interval.Sample{Values: make([]int64, 1000), Lo: make([]int64, 1000), Hi: make([]int64, 1000)}
	for i := range s.Values {
		v := rng.Int64N(1000)
		s.Values[i], s.Lo[i], s.Hi[i] = v, v, v+10
	}
	r, err := BlockBootstrap(s, qs, 200, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, h := r.Lo, r.Hi
	// The sample's own quantiles of the ends: the upper ends are the lower ones + 10.
	if r.PointHi[0] != r.PointLo[0]+10 || r.PointLo[0] < 400 || r.PointLo[0] > 600 {
		t.Errorf("p50 of the ends %d, %d; want hi = lo + 10, lo in [400, 600]", r.PointLo[0], r.PointHi[0])
	}
	if l[0] == nil || l[1] == nil || l[2] != nil || h[2] != nil {
		t.Fatalf("replicates present for p50, p90, p99: %v %v %v; want true true false", l[0] != nil, l[1] != nil, l[2] != nil)
	}
	for k := range 200 {
		// The upper ends are the lower ones + 10, so every replicate's quantiles are too.
		if h[0][k] != l[0][k]+10 || l[0][k] < 400 || l[0][k] > 600 {
			t.Fatalf("replicate %d: p50 lo %g hi %g; want hi = lo + 10, lo in [400, 600]", k, l[0][k], h[0][k])
		}
	}
	r2, _ := BlockBootstrap(s, qs, 200, 0, 1)
	for k := range 200 {
		if r2.Lo[1][k] != l[1][k] {
			t.Fatalf("replicate %d differs with the same seed: %g, %g", k, r2.Lo[1][k], l[1][k])
		}
	}
}

// TestCompareBlockFloor checks that each run's bootstrap gets its stage's block floor, as
// aggregate's intervals do: twice the requests in flight.
func TestCompareBlockFloor(t *testing.T) {
	base, new := drawRun("a", 1000, 100e6, 1, "green"), drawRun("b", 1000, 100e6, 2, "green")
	base.Stages[0].InflightMean, new.Stages[0].InflightMean = ptr(7.2), ptr(30.0)
	var got []int
	spy := func(s interval.Sample, qs []float64, b, minBlock int, seed uint64) (Reps, error) {
		got = append(got, minBlock)
		return BlockBootstrap(s, qs, b, minBlock, seed)
	}
	Compare(base, new, Options{Replicates: 50, Replicator: spy})
	if len(got) < 2 || got[0] != 15 || got[1] != 60 {
		t.Fatalf("block floors given to the bootstrap %v; want 15 (BASE: 7.2 in flight), 60 (NEW: 30), ...", got)
	}
}

// drawRun is a run of one stage whose TTFT values are drawn from a lognormal (median med ns),
// each known within ±1% (the client's error); its stage percentiles are the point values'.
func drawRun(label string, n int, med float64, seed uint64, trust string) *Run {
	rng := rand.New(rand.NewPCG(seed, 2))
	s := &Samples{}
	vals := make([]int64, n)
	for i := range n {
		v := med * math.Exp(0.3*rng.NormFloat64())
		vals[i] = int64(v)
		s.V[0] = append(s.V[0], int64(v))
		s.Lo[0] = append(s.Lo[0], int64(v*0.99))
		s.Hi[0] = append(s.Hi[0], int64(v*1.01))
	}
	sorted := append([]int64(nil), vals...)
	slicesSort(sorted)
	at := func(q float64) *int64 { v := sorted[interval.NearestRank(q, n)-1]; return &v }
	st := stage(0, "s", "open", 10, 0)
	st.TTFT = schemas.Dist{Count: int64(n), P50: at(0.5), P90: at(0.9), P99: at(0.99), P999: at(0.999)}
	return &Run{Label: label, Trust: trust, Stages: []schemas.Stage{st}, Samples: map[int32]*Samples{0: s}}
}

func TestCompareDetectsShiftOnly(t *testing.T) {
	rule, _ := ParseRule("ttft.p90>+5%")
	opt := Options{Rules: []Rule{rule}, Replicates: 200}
	// Same distribution, independent draws: no significant change, gate passes; in 20 seeded
	// pairs the 95% interval of the p50 change holds 0 at least 17 times.
	holds := 0
	for seed := range uint64(20) {
		c := Compare(drawRun("a", 1000, 100e6, seed*2, "green"), drawRun("b", 1000, 100e6, seed*2+1, "green"), opt)
		ch := c.Pairs[0].Changes[0]
		if *ch.Lo <= 0 && *ch.Hi >= 0 {
			holds++
		}
		if c.Gate.Verdict != "pass" {
			t.Errorf("seed %d: gate %s %+v on one distribution; want pass", seed, c.Gate.Verdict, c.Gate.Failures)
		}
	}
	if holds < 17 {
		t.Errorf("the p50 change's interval held 0 in %d of 20 same-distribution pairs; want ≥ 17", holds)
	}
	// 20% slower: TTFT p50 and p90 significant, about +20%, and the gate fails.
	c := Compare(drawRun("a", 1000, 100e6, 1, "green"), drawRun("b", 1000, 120e6, 2, "green"), opt)
	for _, ch := range c.Pairs[0].Changes[:2] {
		if !ch.Significant || *ch.Lo < 0.05 || *ch.Hi > 0.40 {
			t.Errorf("TTFT %s change %v [%v, %v] significant %v; want significant, about +20%%", ch.Percentile, *ch.Change, *ch.Lo, *ch.Hi, ch.Significant)
		}
	}
	if c.Gate.Verdict != "fail" || len(c.Gate.Failures) != 1 || !strings.Contains(c.Gate.Failures[0].Reason, "TTFT p90 of stage 0 (s)") {
		t.Errorf("gate %s %+v; want one failure naming TTFT p90 of stage 0 (s)", c.Gate.Verdict, c.Gate.Failures)
	}
	// p99 and p99.9 of 1,000 values have no interval: n too small, never significant.
	for _, ch := range c.Pairs[0].Changes[2:4] {
		if ch.Note != "n too small" || ch.Significant || ch.Lo != nil {
			t.Errorf("%s change %+v; want n too small", ch.Percentile, ch)
		}
	}
	// A red run cannot pass, with or without a regression.
	for _, trust := range [][2]string{{"red", "green"}, {"green", "red"}} {
		c := Compare(drawRun("a", 1000, 100e6, 1, trust[0]), drawRun("b", 1000, 100e6, 2, trust[1]), opt)
		if c.Gate.Verdict != "untrusted" || !strings.Contains(c.Gate.Failures[0].Reason, "trust is red") {
			t.Errorf("trust %v: gate %s %+v; want untrusted, trust is red", trust, c.Gate.Verdict, c.Gate.Failures)
		}
	}
}

func TestHolm(t *testing.T) {
	mk := func(p, lo float64) schemas.CompareChange {
		return schemas.CompareChange{P: &p, Lo: &lo, Hi: ptr(lo + 0.1)}
	}
	// m = 4: the smallest needs p ≤ 0.0125, the next 0.0167, then 0.025, 0.05.
	ch := []schemas.CompareChange{mk(0.012, 0.01), mk(0.06, 0.01), mk(0.016, 0.01), mk(0.001, -0.2)}
	holm(ch, 0.05)
	got := []bool{ch[0].Significant, ch[1].Significant, ch[2].Significant, ch[3].Significant}
	// 0.001 (its interval [−0.2, −0.1] excludes 0), 0.012, 0.016 pass; 0.06 > 0.05 does not.
	want := []bool{true, false, true, true}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("holm: significant %v; want %v", got, want)
			break
		}
	}
}

func slicesSort(v []int64) { slices.Sort(v) }

// TestCompareOverloadedStage: a pair with an overloaded stage has no interval, names which run's
// stage it was, and a gate on it cannot pass.
func TestCompareOverloadedStage(t *testing.T) {
	rule, _ := ParseRule("ttft.p50>+5%")
	opt := Options{Rules: []Rule{rule}, Replicates: 200}
	base, new := drawRun("a", 1000, 100e6, 1, "green"), drawRun("b", 1000, 100e6, 2, "green")
	new.Stages[0].Overloaded = true
	c := Compare(base, new, opt)
	ch := c.Pairs[0].Changes[0]
	if ch.Lo != nil || ch.Significant || !strings.Contains(ch.Note, "NEW's stage was overloaded") {
		t.Errorf("TTFT p50 change %+v; want no interval, NEW's stage overloaded", ch)
	}
	if c.Gate.Verdict != "untrusted" || !strings.Contains(c.Gate.Failures[0].Reason, "overloaded") {
		t.Errorf("gate %s %+v; want untrusted, naming the overload", c.Gate.Verdict, c.Gate.Failures)
	}
}
