package compare

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/wirebench/wirebench/internal/interval"
	"github.com/wirebench/wirebench/schemas"
)

// A Set is one side of a comparison: one run, or several runs of one config (a directory of run
// directories). With two or more runs a side, a change's interval is taken between the runs, so
// that it covers what changes from one run to the next as a whole (the machine's speed, a warmer
// cache), which no interval from one run's requests can (docs/design/compare.md#sets-of-runs).
type Set struct {
	Dir  string
	Runs []*Run
}

// LoadSet reads dir as one run (it holds metrics/stages.parquet) or as a set: every directory
// in it that holds metrics/stages.parquet, in name order. A run directory in it that has not
// been aggregated is an error, not left out; a set's runs must have the same stages (by name,
// else by load).
func LoadSet(dir string) (Set, error) {
	s := Set{Dir: dir}
	stages := schemas.KindOf[schemas.Stage]()
	if _, err := os.Stat(stages.In(dir)); !errors.Is(err, fs.ErrNotExist) {
		r, err := Load(dir)
		if err != nil {
			return s, err
		}
		s.Runs = []*Run{r}
		return s, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s, fmt.Errorf("run %s: %w", dir, err)
	}
	for _, e := range entries { // os.ReadDir sorts by name
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(stages.In(sub)); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(sub, schemas.ManifestName)); err == nil {
				return s, fmt.Errorf("set %s: run %s has no %s: run `wirebench aggregate %s` first", dir, sub, stages.In(sub), sub)
			}
			continue
		}
		r, err := Load(sub)
		if err != nil {
			return s, err
		}
		s.Runs = append(s.Runs, r)
	}
	if len(s.Runs) == 0 {
		return s, fmt.Errorf("run %s: neither %s nor a run directory holding one exists: run `wirebench aggregate` first", dir, stages.In(dir))
	}
	_, err = align(s)
	return s, err
}

// align maps each stage of a set's first run to the same stage of every run: at[j][i] is the
// index in run j's stages of stage i of run 0. Every stage must have its partner.
func align(s Set) (at [][]int, err error) {
	r0 := s.Runs[0]
	at = make([][]int, len(s.Runs))
	for j, r := range s.Runs {
		pairs, u0, uj := Pair(r0.Stages, r.Stages)
		if len(u0) > 0 || len(uj) > 0 {
			return nil, fmt.Errorf("set %s: runs %s and %s do not have the same stages (%s): a set is runs of one config",
				s.Dir, r0.Dir, r.Dir, unpaired(r0, r, u0, uj))
		}
		at[j] = make([]int, len(r0.Stages))
		for _, p := range pairs {
			at[j][p.Base] = p.New
		}
	}
	return at, nil
}

func unpaired(a, b *Run, ua, ub []int) string {
	var parts []string
	for _, i := range ua {
		parts = append(parts, fmt.Sprintf("stage %s only in %s", stageName(&a.Stages[i]), a.Dir))
	}
	for _, i := range ub {
		parts = append(parts, fmt.Sprintf("stage %s only in %s", stageName(&b.Stages[i]), b.Dir))
	}
	return strings.Join(parts, ", ")
}

// CompareSets compares the set NEW against the set BASE. One run a side is Compare's
// comparison; two or more runs a side take each change's interval between the runs. One run
// against several is refused: a single run says nothing of how runs vary.
func CompareSets(base, new Set, opt Options) (schemas.Comparison, error) {
	if len(base.Runs) == 1 && len(new.Runs) == 1 {
		return Compare(base.Runs[0], new.Runs[0], opt), nil
	}
	if len(base.Runs) < 2 || len(new.Runs) < 2 {
		return schemas.Comparison{}, fmt.Errorf("BASE %s has %s and NEW %s %s: give one run a side, or two or more a side (how runs vary is measured on each side)",
			base.Dir, plural(len(base.Runs), "run"), new.Dir, plural(len(new.Runs), "run"))
	}
	ab, err := align(base)
	if err != nil {
		return schemas.Comparison{}, err
	}
	an, err := align(new)
	if err != nil {
		return schemas.Comparison{}, err
	}
	opt = opt.withDefaults()
	mb, mn := merge(base, ab), merge(new, an)
	c := compare(mb, mn, opt, schemas.CompareBetween, func(p StagePair) [][]estimate {
		return setEstimates(base, new, ab, an, p, opt)
	})
	c.Base.Runs, c.New.Runs = dirs(base), dirs(new)
	return c, nil
}

func dirs(s Set) []string {
	out := make([]string, len(s.Runs))
	for i, r := range s.Runs {
		out[i] = r.Dir
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// merge is a set's figures as one run: each stage of its first run with every percentile the
// geometric mean of the runs' (the figure the interval is about) and the other fields of its
// distributions left empty but the count (a set has no one p95, maximum or client-error bound),
// every throughput their mean, the requests of all its runs, and the worst of the runs' trust
// verdicts.
func merge(s Set, at [][]int) *Run {
	m := &Run{Dir: s.Dir, Label: filepath.Base(absOr(s.Dir)), Stages: slices.Clone(s.Runs[0].Stages), Trust: schemas.TrustGreen}
	for i := range m.Stages {
		st := &m.Stages[i]
		members := make([]*schemas.Stage, len(s.Runs))
		st.Requests = 0
		for j, r := range s.Runs {
			members[j] = &r.Stages[at[j][i]]
			st.Overloaded = st.Overloaded || members[j].Overloaded
			st.Requests += members[j].Requests
		}
		for _, mt := range Metrics {
			d := mt.Dist(st)
			*d = schemas.Dist{} // the first run's bounds, p95, max and mean are not the set's
			for _, x := range members {
				d.Count += mt.Dist(x).Count
			}
			for _, pc := range Percentiles {
				*pc.Ptr(d) = geoMean(members, func(x *schemas.Stage) *int64 { return pc.Get(mt.Dist(x)) })
			}
		}
		for _, f := range Throughputs {
			*f.Ptr(st) = mean(members, f.Get)
		}
	}
	m.Samples = map[int32]*Samples{} // not used: a set's estimates read its runs' samples
	var why []string
	for _, r := range s.Runs {
		if r.Samples == nil {
			m.Samples = nil // notes says so
		}
		if rank(r.Trust) > rank(m.Trust) {
			m.Trust = r.Trust
		}
		if r.Trust != "" && r.Trust != schemas.TrustGreen {
			why = append(why, fmt.Sprintf("%s %s: %s", r.Label, r.Trust, r.TrustSentence))
		}
	}
	m.TrustSentence = strings.Join(why, "; ")
	return m
}

func rank(trust string) int {
	return slices.Index([]string{schemas.TrustGreen, schemas.TrustAmber, schemas.TrustRed}, trust)
}

// geoMean is the geometric mean of a percentile over the stages; nil when any has none or is not
// positive.
func geoMean(stages []*schemas.Stage, get func(*schemas.Stage) *int64) *int64 {
	var sum float64
	for _, s := range stages {
		v := get(s)
		if v == nil || *v <= 0 {
			return nil
		}
		sum += math.Log(float64(*v))
	}
	return ptr(int64(math.Round(math.Exp(sum / float64(len(stages))))))
}

func mean(stages []*schemas.Stage, get func(*schemas.Stage) float64) *float64 {
	var sum float64
	for _, s := range stages {
		sum += get(s)
	}
	if math.IsNaN(sum) {
		return nil
	}
	return ptr(sum / float64(len(stages)))
}

// setEstimates gives each metric and percentile of a pair of sets its change between the runs.
func setEstimates(base, new Set, ab, an [][]int, p StagePair, opt Options) [][]estimate {
	out := make([][]estimate, len(Metrics))
	for mi, m := range Metrics {
		out[mi] = make([]estimate, len(Percentiles))
		if m.NoInterval != "" {
			for pi := range Percentiles {
				out[mi][pi] = replicates{note: m.NoInterval}
			}
			continue
		}
		sb, errB := sideStats(base, ab, p.Base, mi, "", opt)
		sn, errN := sideStats(new, an, p.New, mi, "\x00new", opt)
		for pi := range Percentiles {
			switch {
			case errB != "" || errN != "":
				out[mi][pi] = replicates{note: cmp.Or(errB, errN)}
			case sb[pi] == nil || sn[pi] == nil:
				out[mi][pi] = replicates{note: "n too small"}
			default:
				out[mi][pi] = between(sb[pi], sn[pi])
			}
		}
	}
	return out
}

// runStat is one run's percentile on the log scale: the logs of its lower and upper ends (the
// client's error) and the bootstrap variance of its log (the run's own sampling error).
type runStat struct{ lo, hi, v float64 }

// sideStats gives, for each percentile, every run's runStat of stage i (of the set's first run)
// and metric mi; nil for a percentile too small in some run. note says why there are none.
func sideStats(s Set, at [][]int, i, mi int, salt string, opt Options) (stats [][]runStat, note string) {
	qs := make([]float64, len(Percentiles))
	for k, pc := range Percentiles {
		qs[k] = pc.Q
	}
	stats = make([][]runStat, len(qs))
	for k := range stats {
		stats[k] = make([]runStat, 0, len(s.Runs))
	}
	for j, r := range s.Runs {
		st := &r.Stages[at[j][i]]
		x := r.sample(st.Stage, mi)
		switch {
		case x == nil:
			return nil, "no interval: run " + r.Dir + " has no metrics/requests.parquet"
		case st.Overloaded:
			return nil, "no interval: run " + r.Dir + "'s stage was " + overloaded
		}
		reps, err := opt.Replicator(*x, qs, opt.Replicates, interval.BlockFloor(st.InflightMean), seed(r.Label+salt, st.Stage, Metrics[mi].Key))
		if err != nil {
			return nil, "no interval: " + err.Error()
		}
		for k := range qs {
			rs, ok := statOf(reps, k)
			if !ok || stats[k] == nil {
				stats[k] = nil
				continue
			}
			stats[k] = append(stats[k], rs)
		}
	}
	return stats, ""
}

// statOf is a run's runStat of quantile k: the logs of the sample's own quantiles of its lower
// and upper ends and the variance of the log replicates, the mean of the two ends'. ok is false
// without replicates (n too small) or with a value that is not positive.
func statOf(r Reps, k int) (runStat, bool) {
	if r.Lo[k] == nil || r.Hi[k] == nil || r.PointLo[k] <= 0 || slices.Min(r.Lo[k]) <= 0 {
		return runStat{}, false
	}
	return runStat{
		lo: math.Log(float64(r.PointLo[k])), hi: math.Log(float64(r.PointHi[k])),
		v: (stat.Variance(logs(r.Lo[k]), nil) + stat.Variance(logs(r.Hi[k]), nil)) / 2,
	}, true
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// betweenRuns is a change between two sets on the log scale: dLo = mean log lower end of NEW −
// mean log upper end of BASE, dHi the other way round (so that [dLo, dHi] holds the change of
// the true percentiles whatever the client's error), se the standard error of the difference of
// the sets' means and df its Welch–Satterthwaite degrees of freedom.
type betweenRuns struct{ dLo, dHi, se, df float64 }

// between is the change between the runs of BASE (b) and NEW (n). A set's variance is that of
// its runs' log percentiles (the midpoints of their ends) over its k runs, but never below the
// mean of the runs' own bootstrap variances over k: a few runs that happen to agree do not make a
// figure surer than its runs' sampling allows (the floor of Knapp & Hartung's variance in
// Röver, Knapp & Friede 2015).
func between(b, n []runStat) betweenRuns {
	vb, vn := setVar(b), setVar(n)
	kb, kn := float64(len(b)), float64(len(n))
	return betweenRuns{
		dLo: meanOf(n, func(r runStat) float64 { return r.lo }) - meanOf(b, func(r runStat) float64 { return r.hi }),
		dHi: meanOf(n, func(r runStat) float64 { return r.hi }) - meanOf(b, func(r runStat) float64 { return r.lo }),
		se:  math.Sqrt(vb + vn),
		df:  (vb + vn) * (vb + vn) / (vb*vb/(kb-1) + vn*vn/(kn-1)),
	}
}

func meanOf(rs []runStat, f func(runStat) float64) float64 {
	var s float64
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(len(rs))
}

// setVar is the variance of a set's mean log percentile.
func setVar(rs []runStat) float64 {
	k := float64(len(rs))
	mid := func(r runStat) float64 { return (r.lo + r.hi) / 2 }
	m := meanOf(rs, mid)
	var ss float64
	for _, r := range rs {
		ss += (mid(r) - m) * (mid(r) - m)
	}
	return math.Max(ss/(k-1), meanOf(rs, func(r runStat) float64 { return r.v })) / k
}

func (b betweenRuns) t() distuv.StudentsT {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: b.df}
}

func (b betweenRuns) interval(alpha float64) (lo, hi float64) {
	if b.se == 0 {
		return math.Expm1(b.dLo), math.Expm1(b.dHi)
	}
	t := b.t().Quantile(1 - alpha/2)
	return math.Expm1(b.dLo - t*b.se), math.Expm1(b.dHi + t*b.se)
}

// p is twice the smaller one-sided chance of the far side of 0: below 0 from the lower end,
// above it from the upper end (as the bootstrap's p-value, from the same two ends).
func (b betweenRuns) p() float64 {
	if b.se == 0 || math.IsNaN(b.df) {
		if b.dLo > 0 || b.dHi < 0 {
			return 0
		}
		return 1
	}
	t := b.t()
	return math.Min(1, 2*math.Min(t.CDF(-b.dLo/b.se), t.CDF(b.dHi/b.se)))
}

func (b betweenRuns) why() string { return "" }
