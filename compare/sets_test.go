package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/internal/race"
)

// drawSet is k runs of one config whose whole-run speed varies: each run's TTFT median is
// med·exp(drift·z), z standard normal, as a machine whose speed changes from one run to the
// next; within a run the values are drawRun's (lognormal, σ 0.3, ±1% client error).
func drawSet(label string, k, n int, med, drift float64, rng *rand.Rand) Set {
	s := Set{Dir: label}
	for j := range k {
		r := drawRun(label+string(rune('a'+j)), n, med*math.Exp(drift*rng.NormFloat64()), rng.Uint64(), "green")
		r.Dir, r.Stages[0].Requests = r.Label, int64(n)
		s.Runs = append(s.Runs, r)
	}
	return s
}

// TestCompareSetsCoverRunDrift: runs whose speed varies by 3% from run to run, more than one
// run's sampling error of its median (about 1.2% with 1,000 values). Two single runs of one
// config then differ "significantly" far more often than 5% of the time; sets of three runs a
// side do not: their 95% interval holds 0 in about 95% of 100 seeded comparisons.
func TestCompareSetsCoverRunDrift(t *testing.T) {
	if race.Enabled {
		t.Skip("700 comparisons take half a minute under the race detector; make test runs this test plain")
	}
	rng := rand.New(rand.NewPCG(11, 27))
	opt := Options{Replicates: 200}
	const trials, drift = 100, 0.03
	setHolds, runHolds := 0, 0
	for range trials {
		b, n := drawSet("base", 3, 1000, 100e6, drift, rng), drawSet("new", 3, 1000, 100e6, drift, rng)
		c, err := CompareSets(b, n, opt)
		if err != nil {
			t.Fatal(err)
		}
		if c.Method != "between" || len(c.Base.Runs) != 3 || c.Pairs[0].Base.Requests != 3*b.Runs[0].Stages[0].Requests {
			t.Fatalf("method %q, BASE runs %v, requests %d; want between, 3 runs, all their requests", c.Method, c.Base.Runs, c.Pairs[0].Base.Requests)
		}
		if ch := c.Pairs[0].Changes[0]; *ch.Lo <= 0 && *ch.Hi >= 0 {
			setHolds++
		}
		if ch := Compare(b.Runs[0], n.Runs[0], opt).Pairs[0].Changes[0]; *ch.Lo <= 0 && *ch.Hi >= 0 {
			runHolds++
		}
	}
	t.Logf("TTFT p50 intervals holding 0: sets of 3 runs %d/%d, single runs %d/%d", setHolds, trials, runHolds, trials)
	if setHolds < 90 {
		t.Errorf("sets of 3 runs: the TTFT p50 change's interval held 0 in %d of %d same-config comparisons; want ≥ 90", setHolds, trials)
	}
	if runHolds > 75 {
		t.Errorf("single runs held 0 in %d of %d; the drift (3%%) should make one run's interval too narrow (want ≤ 75)", runHolds, trials)
	}
}

// TestCompareSetsDetectRegression: three runs a side with the same 3% drift, NEW 20% slower:
// TTFT p50 and p90 are significant and about +20%, and a gate at +5% fails.
func TestCompareSetsDetectRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	rule, _ := ParseRule("ttft.p50>+5%")
	c, err := CompareSets(drawSet("base", 3, 1000, 100e6, 0.03, rng), drawSet("new", 3, 1000, 120e6, 0.03, rng),
		Options{Replicates: 200, Rules: []Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range c.Pairs[0].Changes[:2] {
		if !ch.Significant || *ch.Change < 0.12 || *ch.Change > 0.28 || *ch.Lo > *ch.Change || *ch.Hi < *ch.Change {
			t.Errorf("TTFT %s change %+.3f [%v, %v] significant %v; want about +20%%, significant, inside its interval",
				ch.Percentile, *ch.Change, *ch.Lo, *ch.Hi, ch.Significant)
		}
	}
	if c.Gate.Verdict != "fail" {
		t.Errorf("gate %s %+v; want fail", c.Gate.Verdict, c.Gate.Failures)
	}
}

// TestCompareSetsRefuse: one run against several is refused, as are runs of a set whose stages
// differ; a red run makes its set red and the gate untrusted.
func TestCompareSetsRefuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	one, three := drawSet("one", 1, 500, 100e6, 0, rng), drawSet("three", 3, 500, 100e6, 0, rng)
	if _, err := CompareSets(one, three, Options{}); err == nil || !strings.Contains(err.Error(), "1 run and NEW three 3 runs") {
		t.Errorf("1 run against 3: %v; want an error naming both counts", err)
	}
	odd := drawSet("odd", 2, 500, 100e6, 0, rng)
	odd.Runs[1].Stages[0].Name = "other"
	odd.Runs[1].Stages[0].TargetRate = 99
	if _, err := CompareSets(three, odd, Options{}); err == nil || !strings.Contains(err.Error(), "stage 0 (other) only in oddb") {
		t.Errorf("a set whose runs' stages differ: %v; want an error naming the stage", err)
	}
	red := drawSet("red", 2, 500, 100e6, 0, rng)
	red.Runs[1].Trust, red.Runs[1].TrustSentence = "red", "load not delivered"
	rule, _ := ParseRule("ttft.p50>+5%")
	c, err := CompareSets(three, red, Options{Replicates: 100, Rules: []Rule{rule}})
	if err != nil {
		t.Fatal(err)
	}
	if c.New.Trust != "red" || !strings.Contains(c.New.TrustSentence, "redb red: load not delivered") || c.Gate.Verdict != "untrusted" {
		t.Errorf("set with a red run: trust %q (%q), gate %s; want red naming the run, untrusted", c.New.Trust, c.New.TrustSentence, c.Gate.Verdict)
	}
}

// TestBetweenRuns checks the interval's arithmetic on hand-made runs: identical runs without
// sampling error give the change itself; the variance is never below the runs' own.
func TestBetweenRuns(t *testing.T) {
	same := []runStat{{lo: math.Log(100), hi: math.Log(100)}, {lo: math.Log(100), hi: math.Log(100)}}
	lo, hi := between(same, same).interval(0.05)
	if lo != 0 || hi != 0 || between(same, same).p() != 1 {
		t.Errorf("identical exact runs: [%g, %g] p %g; want [0, 0], p 1", lo, hi, between(same, same).p())
	}
	// Two runs that agree exactly but each with a sampling variance of 0.01 (10% sd): the set's
	// variance is the floor 0.01/2, not 0.
	agree := []runStat{{lo: 0, hi: 0, v: 0.01}, {lo: 0, hi: 0, v: 0.01}}
	b := between(agree, agree)
	if math.Abs(b.se-0.1) > 1e-12 || math.Abs(b.df-2) > 1e-12 {
		t.Errorf("se %g df %g; want 0.1 (sqrt of 0.005 + 0.005), 2", b.se, b.df)
	}
	// Client error: NEW's ends [log 110, log 120] against BASE's [log 100, log 100], exact
	// otherwise: the change lies in [+10%, +20%].
	base := []runStat{{lo: math.Log(100), hi: math.Log(100)}, {lo: math.Log(100), hi: math.Log(100)}}
	new := []runStat{{lo: math.Log(110), hi: math.Log(120)}, {lo: math.Log(110), hi: math.Log(120)}}
	lo, hi = between(base, new).interval(0.05)
	if math.Abs(lo-0.10) > 1e-9 || math.Abs(hi-0.20) > 1e-9 || between(base, new).p() != 0 {
		t.Errorf("[%g, %g] p %g; want [0.10, 0.20], p 0", lo, hi, between(base, new).p())
	}
}

// TestMergeKeepsOnlySetFigures: a set's merged stage has the runs' geometric-mean percentiles and
// their summed count, and none of its first run's own figures that a set has no value for (p95,
// maximum, mean, client-error bounds).
func TestMergeKeepsOnlySetFigures(t *testing.T) {
	s := drawSet("s", 3, 200, 100e6, 0.1, rand.New(rand.NewPCG(3, 4)))
	first := &s.Runs[0].Stages[0].TTFT
	first.P95, first.Max, first.Mean, first.P50Lo, first.P50Hi = ptr(int64(7)), ptr(int64(8)), ptr(int64(9)), ptr(int64(1)), ptr(int64(2))
	m := merge(s, [][]int{{0}, {0}, {0}})
	d := m.Stages[0].TTFT
	if d.P95 != nil || d.Max != nil || d.Mean != nil || d.P50Lo != nil || d.P50Hi != nil {
		t.Errorf("merged TTFT kept the first run's p95 %v, max %v, mean %v or p50 bounds %v %v", d.P95, d.Max, d.Mean, d.P50Lo, d.P50Hi)
	}
	var count int64
	logSum := 0.0
	for _, r := range s.Runs {
		count += r.Stages[0].TTFT.Count
		logSum += math.Log(float64(*r.Stages[0].TTFT.P50))
	}
	if want := math.Exp(logSum / 3); d.Count != count || d.P50 == nil || math.Abs(float64(*d.P50)-want) > 1 {
		t.Errorf("merged TTFT count %d, p50 %v; want %d and the geometric mean %.0f", d.Count, d.P50, count, want)
	}
	if *first.P95 != 7 {
		t.Error("merge changed the first run's own stage")
	}
}
