// Package compare sets a run NEW against a baseline BASE: stages paired by name, else by rate;
// every latency percentile's change NEW / BASE − 1 with a 95% interval that covers both the
// sampling error of each run and the client's own error (with sets of runs a side, the
// variation between runs too: sets.go); significance corrected for the number of changes
// tested; and the --fail-on gate. `wirebench compare` and the report's A/B tables both use it
// (docs/design/compare.md).
package compare

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/wirebench/wirebench/internal/interval"
	"github.com/wirebench/wirebench/schemas"
)

// Defaults of Options.
const (
	DefaultReplicates = 1000
	DefaultLevel      = 0.95
)

// Run is one run's figures for a comparison: its stages (stages.parquet) and, for the
// intervals, its requests' latencies in time order (requests.parquet).
type Run struct {
	Dir, Label    string
	Trust         string // the run's trust level (green, amber, red), set by the caller (report.Trust)
	TrustSentence string
	Stages        []schemas.Stage
	Samples       map[int32]*Samples // by stage index; nil: no intervals (requests.parquet absent)
}

// Samples are one stage's values V of each metric, in the order the requests were sent, each
// with the interval [Lo[i], Hi[i]] that holds its true value (the client's own error).
type Samples struct {
	V, Lo, Hi [metricCount][]int64
}

// Options tune a comparison; zero fields take the defaults.
type Options struct {
	Replicates int        // bootstrap replicates per run and stage
	Level      float64    // confidence level of every interval
	Rules      []Rule     // the --fail-on rules
	Replicator Replicator // the bootstrap; nil: the default (BlockBootstrap)
}

func (o Options) withDefaults() Options {
	o.Replicates = cmp.Or(o.Replicates, DefaultReplicates)
	o.Level = cmp.Or(o.Level, DefaultLevel)
	if o.Replicator == nil {
		o.Replicator = BlockBootstrap
	}
	return o
}

// Compare compares NEW against BASE. The result is what `wirebench compare --format json`
// writes; its Gate is set only with rules.
func Compare(base, new *Run, opt Options) schemas.Comparison {
	opt = opt.withDefaults()
	return compare(base, new, opt, schemas.CompareWithin, func(p StagePair) [][]estimate {
		return pairReplicates(base, new, p, opt)
	})
}

// compare pairs the stages of base and new (for sets: their merged figures) and gives each pair's
// changes the estimates of estimates.
func compare(base, new *Run, opt Options, method string, estimates func(StagePair) [][]estimate) schemas.Comparison {
	c := schemas.Comparison{
		Version: schemas.CompareVersion, Method: method, Level: opt.Level, Replicates: opt.Replicates,
		Base: runOf(base), New: runOf(new),
		Family:    "Holm over the percentile changes of one stage pair; the gate: Bonferroni over its rule × stage pair checks",
		Pairs:     []schemas.ComparePair{},
		Unmatched: []schemas.CompareStage{},
	}
	pairs, ub, un := Pair(base.Stages, new.Stages)
	est := make([][][]estimate, len(pairs))
	for i, p := range pairs {
		est[i] = estimates(p)
		c.Pairs = append(c.Pairs, comparePair(base, new, p, est[i], opt))
	}
	for _, i := range ub {
		c.Unmatched = append(c.Unmatched, stageOf(&base.Stages[i], schemas.CompareBase))
	}
	for _, i := range un {
		c.Unmatched = append(c.Unmatched, stageOf(&new.Stages[i], schemas.CompareNew))
	}
	c.Notes = notes(base, new, c)
	if len(opt.Rules) > 0 {
		c.Gate = gate(base, new, pairs, est, opt)
	}
	return c
}

func runOf(r *Run) schemas.CompareRun {
	return schemas.CompareRun{Dir: r.Dir, Label: r.Label, Trust: r.Trust, TrustSentence: r.TrustSentence}
}

func stageOf(s *schemas.Stage, run string) schemas.CompareStage {
	return schemas.CompareStage{Run: run, Stage: s.Stage, Name: s.Name, Mode: s.Mode, TargetRate: s.TargetRate,
		Users: s.Concurrency, Requests: s.Requests}
}

// notes says what to keep in mind: a run whose trust is not green.
func notes(base, new *Run, c schemas.Comparison) []string {
	var out []string
	for _, r := range []struct {
		role string
		run  *Run
	}{{"BASE", base}, {"NEW", new}} {
		if r.run.Trust != "" && r.run.Trust != schemas.TrustGreen {
			out = append(out, fmt.Sprintf("%s %s: trust %s: %s", r.role, r.run.Label, r.run.Trust, r.run.TrustSentence))
		}
		if r.run.Samples == nil {
			out = append(out, fmt.Sprintf("%s %s has no metrics/requests.parquet: changes without intervals, none significant", r.role, r.run.Label))
		}
	}
	if len(c.Pairs) == 0 {
		out = append(out, "no stage of NEW has a partner in BASE (same name, or same mode and rate): nothing compared")
	}
	return out
}

// comparePair computes every percentile change of one stage pair and marks the significant
// ones (Holm over the pair's changes with an interval).
func comparePair(base, new *Run, p StagePair, est [][]estimate, opt Options) schemas.ComparePair {
	sb, sn := &base.Stages[p.Base], &new.Stages[p.New]
	cp := schemas.ComparePair{Base: stageOf(sb, ""), New: stageOf(sn, ""), PairedBy: p.By, Ratios: map[string]*float64{}}
	for _, f := range Throughputs {
		cp.Ratios[f.Key] = Ratio(f.Get(sn), f.Get(sb))
	}
	for mi, m := range Metrics {
		for pi, pc := range Percentiles {
			ch := schemas.CompareChange{Metric: m.Key, Percentile: pc.Name, BaseNs: pc.Get(m.Dist(sb)), NewNs: pc.Get(m.Dist(sn))}
			ch.Change = change(ch.BaseNs, ch.NewNs)
			r := est[mi][pi]
			switch {
			case r.why() != "":
				ch.Note = r.why()
			case ch.Change != nil:
				lo, hi := r.interval(1 - opt.Level)
				ch.Lo, ch.Hi, ch.P = finite(lo), finite(hi), ptr(r.p())
			}
			cp.Changes = append(cp.Changes, ch)
		}
	}
	holm(cp.Changes, 1-opt.Level)
	return cp
}

// An estimate is one percentile's change between the two stages of a pair: its interval at
// any level and the p-value of no change. why says why it has none ("n too small", ...).
type estimate interface {
	interval(alpha float64) (lo, hi float64)
	p() float64
	why() string
}

// replicates are the bootstrap replicates of one percentile in both runs of a pair: the
// change's lower ends NEW_lo / BASE_hi − 1 and upper ends NEW_hi / BASE_lo − 1, replicate i of
// each run's independent draws. note says why there are none.
type replicates struct {
	lower, upper []float64 // sorted
	note         string
}

func (r replicates) why() string { return r.note }

// interval is the change's (1 − alpha) interval: the alpha/2 point of the lower ends and the
// 1 − alpha/2 point of the upper ends, so it covers sampling and the client's own error.
func (r replicates) interval(alpha float64) (lo, hi float64) {
	return at(r.lower, alpha/2), at(r.upper, 1-alpha/2)
}

// p is the two-sided bootstrap p-value of no change: twice the smaller share of replicates
// on the far side of 0 (lower ends ≤ 0, or upper ends ≥ 0), counted as (k + 1) / (B + 1) so
// that it is never 0.
func (r replicates) p() float64 {
	b := float64(len(r.lower) + 1)
	le := float64(countIf(r.lower, func(v float64) bool { return v <= 0 }) + 1)
	ge := float64(countIf(r.upper, func(v float64) bool { return v >= 0 }) + 1)
	return math.Min(1, 2*math.Min(le, ge)/b)
}

// at is the nearest-rank q point of sorted values.
func at(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func countIf(xs []float64, f func(float64) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

// pairReplicates draws the replicates of every metric and percentile of a pair: [metric][percentile].
func pairReplicates(base, new *Run, p StagePair, opt Options) [][]estimate {
	sb, sn := base.Stages[p.Base].Stage, new.Stages[p.New].Stage
	out := make([][]estimate, len(Metrics))
	qs := make([]float64, len(Percentiles))
	for i, pc := range Percentiles {
		qs[i] = pc.Q
	}
	for mi, m := range Metrics {
		out[mi] = make([]estimate, len(Percentiles))
		xb, xn := base.sample(sb, mi), new.sample(sn, mi)
		var note string
		switch {
		case m.NoInterval != "":
			note = m.NoInterval
		case xb == nil || xn == nil:
			note = "no interval: a run has no metrics/requests.parquet"
		case base.Stages[p.Base].Overloaded || new.Stages[p.New].Overloaded:
			note = overloadNote(&base.Stages[p.Base], &new.Stages[p.New])
		}
		var rb, rn Reps
		var err error
		if note == "" {
			rb, err = opt.Replicator(*xb, qs, opt.Replicates, interval.BlockFloor(base.Stages[p.Base].InflightMean), seed(base.Label, sb, m.Key))
			if err == nil {
				rn, err = opt.Replicator(*xn, qs, opt.Replicates, interval.BlockFloor(new.Stages[p.New].InflightMean), seed(new.Label+"\x00new", sn, m.Key))
			}
			if err != nil {
				note = "no interval: " + err.Error()
			}
		}
		for pi := range qs {
			if note != "" {
				out[mi][pi] = replicates{note: note}
				continue
			}
			out[mi][pi] = changeReplicates(rb.Lo[pi], rb.Hi[pi], rn.Lo[pi], rn.Hi[pi])
		}
	}
	return out
}

// overloaded is why an overloaded stage's change has no interval: its percentiles grow with the
// stage's length.
const overloaded = "overloaded (the queue grew through it)"

// overloadNote says which of a pair's stages was overloaded.
func overloadNote(sb, sn *schemas.Stage) string {
	who := "BASE's and NEW's stages were"
	switch {
	case !sn.Overloaded:
		who = "BASE's stage was"
	case !sb.Overloaded:
		who = "NEW's stage was"
	}
	return "no interval: " + who + " " + overloaded
}

// changeReplicates pairs replicate i of BASE with replicate i of NEW.
func changeReplicates(bl, bh, nl, nh []float64) replicates {
	if bl == nil || nl == nil {
		return replicates{note: "n too small"}
	}
	n := min(len(bl), len(nl))
	r := replicates{lower: make([]float64, n), upper: make([]float64, n)}
	for i := range n {
		r.lower[i] = rel(nl[i], bh[i])
		r.upper[i] = rel(nh[i], bl[i])
	}
	slices.Sort(r.lower)
	slices.Sort(r.upper)
	return r
}

// rel is x / y − 1; a base of 0 gives 0 for 0 and +Inf otherwise.
func rel(x, y float64) float64 {
	if y <= 0 {
		if x <= 0 {
			return 0
		}
		return math.Inf(1)
	}
	return x/y - 1
}

// sample is a stage's sample of one metric; nil without requests.parquet.
func (r *Run) sample(stage int32, metric int) *interval.Sample {
	if r.Samples == nil {
		return nil
	}
	s := r.Samples[stage]
	if s == nil {
		return &interval.Sample{}
	}
	return &interval.Sample{Values: s.V[metric], Lo: s.Lo[metric], Hi: s.Hi[metric]}
}

// seed makes a run's draws reproducible and different from the other run's.
func seed(label string, stage int32, metric string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%s", label, stage, metric)
	return h.Sum64()
}

// holm marks the changes that are significant at level alpha after Holm's step-down
// correction over those with a p-value: sorted by p, the k-th smallest (from 0) is
// significant when it and every smaller one is at most alpha / (m − k). A change is marked only
// when its own interval excludes 0 too.
func holm(changes []schemas.CompareChange, alpha float64) {
	var idx []int
	for i := range changes {
		if changes[i].P != nil {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(*changes[a].P, *changes[b].P) })
	for k, i := range idx {
		if *changes[i].P > alpha/float64(len(idx)-k) {
			break
		}
		c := &changes[i]
		c.Significant = c.Lo != nil && c.Hi != nil && (*c.Lo > 0 || *c.Hi < 0)
	}
}

// change is new / base − 1, rounded to 1e-4; nil when either is nil or base is 0.
func change(base, new *int64) *float64 {
	if base == nil || new == nil {
		return nil
	}
	r := Ratio(float64(*new), float64(*base))
	if r == nil {
		return nil
	}
	return ptr(math.Round((*r-1)*10000) / 10000)
}

// Ratio returns b/a rounded to 1e-4, or nil when a is 0 or either is not finite (NaN: null).
func Ratio(b, a float64) *float64 {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return nil
	}
	return ptr(math.Round(b/a*10000) / 10000)
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return ptr(math.Round(v*10000) / 10000)
}

func ptr[T any](v T) *T { return &v }
