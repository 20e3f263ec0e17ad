package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// Rule is one --fail-on rule: METRIC.PERCENTILE OP THRESHOLD%, e.g. ttft.p99>+5% (fail when
// TTFT p99 rose significantly by more than 5%) or e2e.p50<-10% (fail when it fell
// significantly by more than 10%).
type Rule struct {
	Text       string
	Metric     int     // index into Metrics
	Percentile int     // index into Percentiles
	Above      bool    // OP is >: a rise fails; else <: a fall fails
	Threshold  float64 // as a share: +5% = 0.05
}

// Grammar is the --fail-on grammar, for help texts and errors.
const Grammar = "METRIC.PERCENTILE>+N% or METRIC.PERCENTILE<-N%: METRIC one of ttft, ttfc, tpot, e2e, ntpot; PERCENTILE one of p50, p90, p99, p99.9; e.g. ttft.p99>+5%"

// ParseRule parses one --fail-on rule; the error names the bad token.
func ParseRule(text string) (Rule, error) {
	r := Rule{Text: text}
	s := strings.ReplaceAll(text, " ", "")
	i := strings.IndexAny(s, "<>")
	if i < 0 {
		return r, fmt.Errorf("--fail-on %q: no comparison > or <; want %s", text, Grammar)
	}
	r.Above = s[i] == '>'
	lhs, rhs := s[:i], s[i+1:]
	metric, pct, ok := strings.Cut(lhs, ".")
	if !ok {
		return r, fmt.Errorf("--fail-on %q: %q is not METRIC.PERCENTILE; want %s", text, lhs, Grammar)
	}
	if r.Metric = metricIndex(strings.ToLower(metric)); r.Metric < 0 {
		return r, fmt.Errorf("--fail-on %q: unknown metric %q; want one of ttft, ttfc, tpot, e2e, ntpot", text, metric)
	}
	if m := Metrics[r.Metric]; m.Value == nil {
		return r, fmt.Errorf("--fail-on %q: %s cannot be gated (%s); gate on tpot or ntpot", text, metric, m.NoInterval)
	}
	if r.Percentile = percentileIndex(strings.ToLower(pct)); r.Percentile < 0 {
		return r, fmt.Errorf("--fail-on %q: unknown percentile %q; want one of p50, p90, p99, p99.9", text, pct)
	}
	num, ok := strings.CutSuffix(rhs, "%")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return r, fmt.Errorf("--fail-on %q: threshold %q is not a percentage such as +5%% or -10%%", text, rhs)
	}
	r.Threshold = v / 100
	if r.Above && r.Threshold < 0 || !r.Above && r.Threshold > 0 {
		return r, fmt.Errorf("--fail-on %q: threshold %q points the other way: a rise is > +N%%, a fall < -N%%", text, rhs)
	}
	return r, nil
}

// ParseRules parses every --fail-on rule.
func ParseRules(texts []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(texts))
	for _, t := range texts {
		r, err := ParseRule(t)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func metricIndex(key string) int {
	for i, m := range Metrics {
		if m.Key == key {
			return i
		}
	}
	return -1
}

func percentileIndex(name string) int {
	if name == "p999" {
		name = "p99.9"
	}
	for i, p := range Percentiles {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// gate checks every rule on every stage pair. A check fails when the change is past the
// rule's threshold and its interval at level 1 − alpha / checks (Bonferroni) lies wholly on the
// rule's side of 0, so that a gate on two runs of one config fails by chance at most alpha of
// the time however many rules and stages it checks. A run whose trust is red,
// or a check without an interval, makes the gate untrusted: it cannot pass.
func gate(base, new *Run, pairs []StagePair, est [][][]estimate, opt Options) *schemas.CompareGate {
	g := &schemas.CompareGate{Tests: len(opt.Rules) * len(pairs), Verdict: schemas.GatePass, Failures: []schemas.GateFailure{}}
	for _, r := range opt.Rules {
		g.Rules = append(g.Rules, r.Text)
	}
	for _, x := range []struct {
		role string
		run  *Run
	}{{"BASE", base}, {"NEW", new}} {
		if x.run.Trust == schemas.TrustRed {
			g.Failures = append(g.Failures, schemas.GateFailure{Rule: strings.Join(g.Rules, " "), Verdict: schemas.GateUntrusted,
				Reason: fmt.Sprintf("%s %s's trust is red (%s): its figures cannot pass a gate", x.role, x.run.Label, x.run.TrustSentence)})
		}
	}
	if len(pairs) == 0 {
		g.Failures = append(g.Failures, schemas.GateFailure{Rule: strings.Join(g.Rules, " "), Verdict: schemas.GateUntrusted,
			Reason: "no stage of NEW has a partner in BASE: nothing to gate on"})
	}
	alpha := (1 - opt.Level) / float64(max(g.Tests, 1))
	for _, r := range opt.Rules {
		for i, p := range pairs {
			if f, ok := check(base, new, p, r, est[i][r.Metric][r.Percentile], alpha); !ok {
				g.Failures = append(g.Failures, f)
			}
		}
	}
	for _, f := range g.Failures {
		if f.Verdict == schemas.GateUntrusted {
			g.Verdict = schemas.GateUntrusted
			break
		}
		g.Verdict = schemas.GateFail
	}
	return g
}

// check judges one rule on one pair at level alpha (already divided by the number of checks).
func check(base, new *Run, p StagePair, r Rule, rep estimate, alpha float64) (schemas.GateFailure, bool) {
	sb, sn := &base.Stages[p.Base], &new.Stages[p.New]
	m, pc := Metrics[r.Metric], Percentiles[r.Percentile]
	f := schemas.GateFailure{Rule: r.Text, Stage: stageName(sn)}
	f.Change = change(pc.Get(m.Dist(sb)), pc.Get(m.Dist(sn)))
	what := fmt.Sprintf("%s %s", m.Title, pc.Name)
	if rep.why() != "" || f.Change == nil {
		f.Verdict = schemas.GateUntrusted
		f.Reason = fmt.Sprintf("%s of stage %s cannot be judged: %s", what, f.Stage, orStr(rep.why(), "no value in a run"))
		return f, false
	}
	lo, hi := rep.interval(alpha)
	f.Lo, f.Hi = finite(lo), finite(hi)
	past := r.Above && *f.Change > r.Threshold || !r.Above && *f.Change < r.Threshold
	significant := r.Above && lo > 0 || !r.Above && hi < 0
	if !past || !significant {
		return f, true
	}
	f.Verdict = schemas.GateFail
	f.Reason = fmt.Sprintf("%s of stage %s changed %s %s (%s → %s), past %s", what, f.Stage, Pct(*f.Change),
		Interval(f.Lo, f.Hi), Dur(pc.Get(m.Dist(sb))), Dur(pc.Get(m.Dist(sn))), Pct(r.Threshold))
	return f, false
}

func stageName(s *schemas.Stage) string { return StageTitle(stageOf(s, "")) }

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
