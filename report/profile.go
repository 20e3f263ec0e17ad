package report

import (
	"math"
	"path/filepath"
	"strconv"

	"github.com/wirebench/wirebench/compare"
	"github.com/wirebench/wirebench/schemas"
)

// latencyColumns are the latency distributions of a stage, in display order.
var latencyColumns = []struct {
	Key, Title string
	Get        func(*schemas.Stage) schemas.Dist
}{
	{"ttft_ns", "TTFT", func(s *schemas.Stage) schemas.Dist { return s.TTFT }},
	{"tpot_ns", "TPOT", func(s *schemas.Stage) schemas.Dist { return s.TPOT }},
	{"itl_ns", "ITL", func(s *schemas.Stage) schemas.Dist { return s.ITL }},
	{"ntpot_ns", "NTPOT", func(s *schemas.Stage) schemas.Dist { return s.NTPOT }},
	{"e2e_ns", "E2E", func(s *schemas.Stage) schemas.Dist { return s.E2E }},
	{"itl_token_weighted_ns", "ITL (token-weighted)", func(s *schemas.Stage) schemas.Dist { return s.ITLWeighted }},
	{"ttfc_ns", "TTFC (first answer token, after reasoning)", func(s *schemas.Stage) schemas.Dist { return s.TTFC }},
	{"ttft_from_planned_ns", "TTFT from planned", func(s *schemas.Stage) schemas.Dist { return s.TTFTFromPlanned }},
	{"e2e_from_planned_ns", "E2E from planned", func(s *schemas.Stage) schemas.Dist { return s.E2EFromPlanned }},
	{"queue_ns", "queue", func(s *schemas.Stage) schemas.Dist { return s.Queue }},
	{"prefill_ns", "prefill", func(s *schemas.Stage) schemas.Dist { return s.Prefill }},
	{"decode_ns", "decode", func(s *schemas.Stage) schemas.Dist { return s.Decode }},
	{"send_lag_ns", "send lag", func(s *schemas.Stage) schemas.Dist { return s.SendLag }},
	{"read_lag_ns", "read lag", func(s *schemas.Stage) schemas.Dist { return s.ReadLag }},
	{"connect_ns", "TCP connect", func(s *schemas.Stage) schemas.Dist { return s.Connect }},
}

// profileLatencies are the five latencies of the profile charts.
var profileLatencies = latencyColumns[:5]

// intervalColumns are the latencies with 95% intervals (stages.parquet *_ci_ns), by the key of
// their distribution.
var intervalColumns = map[string]func(*schemas.Stage) schemas.CI{
	"ttft_ns":  func(s *schemas.Stage) schemas.CI { return s.TTFTCI },
	"ttfc_ns":  func(s *schemas.Stage) schemas.CI { return s.TTFCCI },
	"tpot_ns":  func(s *schemas.Stage) schemas.CI { return s.TPOTCI },
	"itl_ns":   func(s *schemas.Stage) schemas.CI { return s.ITLCI },
	"e2e_ns":   func(s *schemas.Stage) schemas.CI { return s.E2ECI },
	"ntpot_ns": func(s *schemas.Stage) schemas.CI { return s.NTPOTCI },
}

// p50 and p99 format the percentile with its 95% interval where it has one (fmtCI), else with
// the client's bound (fmtBound); none for a distribution of no values.
func p50(d schemas.Dist, ci schemas.CI) string {
	if ci.P50Lo != nil && d.P50 != nil {
		return fmtCI(*d.P50, *ci.P50Lo, *ci.P50Hi)
	}
	return fmtBoundOf(d.P50, d.P50Lo, d.P50Hi)
}

func p99(d schemas.Dist, ci schemas.CI) string {
	if ci.P99Lo != nil && d.P99 != nil {
		return fmtCI(*d.P99, *ci.P99Lo, *ci.P99Hi)
	}
	return fmtBoundOf(d.P99, d.P99Lo, d.P99Hi)
}

// fmtBoundOf is fmtBound of nullable figures: none when the value is null.
func fmtBoundOf(v, lo, hi *int64) string {
	if v == nil || lo == nil || hi == nil {
		return fmtDurOf(v)
	}
	return fmtBound(*v, *lo, *hi)
}

// buildProfile turns the loaded runs into the profile; outDir makes run paths relative.
func buildProfile(runs []*run, outDir string) schemas.Profile {
	p := schemas.Profile{ProfileVersion: schemas.ProfileVersion, SchemaVersion: schemas.SchemaVersion}
	for _, r := range runs {
		p.Runs = append(p.Runs, runProfile(r, outDir))
	}
	for i := 1; i < len(p.Runs); i++ {
		p.Comparisons = append(p.Comparisons, compareRuns(runs[0], runs[i], p.Runs[0], p.Runs[i], i))
	}
	return p
}

func runProfile(r *run, outDir string) schemas.ProfileRun {
	rp := schemas.ProfileRun{Label: r.Label, Path: filepath.ToSlash(r.Dir)}
	if rel, err := filepath.Rel(absOr(outDir), absOr(r.Dir)); err == nil {
		rp.Path = filepath.ToSlash(rel)
	}
	cpus := 0
	if m := r.Manifest; m != nil {
		rp.Host, rp.CPUs, rp.Tool, rp.Status, rp.Missing = m.Host, m.CPUs, m.ToolVersion, m.Status, m.Missing
		rp.Outages = m.Outages
		cpus = m.CPUs
	}
	rp.Trust.Level, rp.Trust.Sentence = Trust(r.Stages)
	rp.Headline.ClientBoundStages = []int32{}
	names := namesOf(r.Stages)
	for i := range r.Stages {
		s := &r.Stages[i]
		sp := stageProfile(s, stageTitle(s.Stage, s.Name, names), cpus)
		sp.Split = r.splitOf(s.Stage)
		rp.Stages = append(rp.Stages, sp)
		h := &rp.Headline
		h.MaxCompletionRate = maxOf(h.MaxCompletionRate, s.CompletionRate)
		h.MaxOutputTPS = maxOf(h.MaxOutputTPS, s.OutputTPS)
		h.MaxGoodputRate = maxOf(h.MaxGoodputRate, s.GoodputRate)
		if s.ClientBound {
			h.ClientBoundStages = append(h.ClientBoundStages, s.Stage)
		}
	}
	if i := saturationIndex(r.Stages); i >= 0 {
		st := r.Stages[i].Stage
		rp.Headline.SaturationStage = &st
		rp.Headline.SaturationRate = r.Stages[i].CompletionRate
	}
	return rp
}

// saturationLabel is the stageTitle of a run's saturation stage, "" without one.
func saturationLabel(r schemas.ProfileRun) string {
	if h := r.Headline.SaturationStage; h != nil {
		return profileTitle(r, *h)
	}
	return ""
}

// profileTitle is the stageTitle of stage index in a run's profile.
func profileTitle(r schemas.ProfileRun, index int32) string {
	names := profileNames(r.Stages)
	for _, s := range r.Stages {
		if s.Stage == index {
			return stageTitle(s.Stage, s.Name, names)
		}
	}
	return strconv.Itoa(int(index))
}

// maxOf is the larger of two nullable figures; null only when both are.
func maxOf(a, b *float64) *float64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func stageProfile(s *schemas.Stage, label string, cpus int) schemas.ProfileStage {
	sp := schemas.ProfileStage{
		Stage: s.Stage, Name: s.Name, Mode: s.Mode, TargetRate: s.TargetRate, Concurrency: s.Concurrency,
		DurationNs: s.EndNs - s.StartNs, Requests: s.Requests, Completed: s.Completed, Errors: s.Errors, Cancelled: s.Cancelled,
		ErrorsByKind: errorKinds(s.ErrorsByKind), AchievedRate: s.AchievedRate, IssuedRate: s.IssuedRate, CompletionRate: s.CompletionRate,
		InputTPS: s.InputTPS, OutputTPS: s.OutputTPS, DocumentsPerS: s.DocumentsPerS, TotalTPS: s.TotalTPS, InflightMean: s.InflightMean,
		GoodputShare: s.GoodputShare, GoodputRate: s.GoodputRate, Saturated: s.Saturated,
		Overloaded: s.Overloaded, OverloadedReason: s.OverloadedReason,
		Latency: map[string]schemas.Dist{}, Intervals: map[string]schemas.CI{},
		Breakdown: schemas.ProfileBreakdown{
			QueueMeanNs: s.Queue.Mean, PrefillMeanNs: s.Prefill.Mean, DecodeMeanNs: s.Decode.Mean,
			PrefillPerTokenNs: s.PrefillPerTokenNs, Source: s.DecompositionSource,
		},
		Quality: schemas.ProfileQuality{
			Trust: stageLevel(s), PlannedRate: s.PlannedRate, RateFidelity: s.RateFidelity,
			SendLagP99Ns: s.SendLag.P99, ReadLagP99Ns: s.ReadLag.P99, ExactShare: s.ExactShare,
			WorkerRhoMax: s.WorkerRhoMax, Workers: s.Workers, GCPauseNs: s.GCPauseNs,
			UncertaintyNs: s.UncertaintyNs, UncertaintyFigure: s.UncertaintyFigure,
			ClientBound: s.ClientBound, ClientBoundReason: s.ClientBoundReason,
			LoadDelivered: s.LoadDelivered, LoadReason: s.LoadReason, LoadBlame: s.LoadBlame, LateShareClient: s.LateShareClient,
			Missing: s.Missing, ClockUncertaintyNs: s.ClockUncertaintyNs,
			WorkersForRhoHalf: s.WorkersForRhoHalf, Advice: advice(s, label, cpus),
			Footprint: schemas.ProfileFootprint{TargetLocal: s.TargetLocal, ClientCPUs: s.ClientCPUs, MachineCPUs: s.MachineCPUs,
				MachineBusy: s.MachineBusy, ServerDisturbed: s.ServerDisturbed, ServerDisturbedReason: s.ServerDisturbedReason,
				InflightPeak: s.InflightPeak, ConnectionsOpened: s.ConnectionsOpened, ConnectionsPeak: s.ConnectionsPeak,
				ConnectionsWarm: s.ConnectionsWarm, ConnectionSpiral: s.ConnectionSpiral},
		},
	}
	for k, get := range intervalColumns {
		sp.Intervals[k] = get(s)
	}
	for _, c := range latencyColumns {
		sp.Latency[c.Key] = c.Get(s)
	}
	return sp
}

// saturationIndex returns the index in stages of the saturation stage: the one aggregate
// flagged, else -1.
func saturationIndex(stages []schemas.Stage) int {
	for i := range stages {
		if stages[i].Saturated {
			return i
		}
	}
	return -1
}

// ratio returns b/a, or nil when a is 0 or either is not finite (compare.Ratio).
func ratio(b, a float64) *float64 { return compare.Ratio(b, a) }

// comparedFigures are the per-stage figures whose B/A ratios the comparison shows: a
// throughput figure (compare.Throughputs' key) or a latency percentile (metric and percentile
// of compare.Metrics and compare.Percentiles).
var comparedFigures = []struct {
	Key, Title, Metric, Percentile string
}{
	{"achieved_rate", "sent/s", "", ""},
	{"completion_rate", "done/s", "", ""},
	{"output_tps", "out tok/s", "", ""},
	{"goodput_rate", "goodput/s", "", ""},
	{"ttft_p50", "TTFT p50", "ttft", "p50"},
	{"ttft_p99", "TTFT p99", "ttft", "p99"},
	{"tpot_p50", "TPOT p50", "tpot", "p50"},
	{"tpot_p99", "TPOT p99", "tpot", "p99"},
	{"itl_p99", "ITL p99", "itl", "p99"},
	{"ntpot_p99", "NTPOT p99", "ntpot", "p99"},
	{"e2e_p99", "E2E p99", "e2e", "p99"},
}

// compareRuns is run b against the baseline a (profile runs pa and pb), stage pairs and
// percentile changes as `wirebench compare` computes them (package compare): one comparison
// for the command and the report.
func compareRuns(a, b *run, pa, pb schemas.ProfileRun, idx int) schemas.ProfileComparison {
	c := schemas.ProfileComparison{Run: idx, Label: b.Label + " vs " + a.Label, Headline: map[string]*float64{
		"max_completion_rate": ratio(orNaN(pb.Headline.MaxCompletionRate), orNaN(pa.Headline.MaxCompletionRate)),
		"max_output_tps":      ratio(orNaN(pb.Headline.MaxOutputTPS), orNaN(pa.Headline.MaxOutputTPS)),
		"max_goodput_rate":    ratio(orNaN(pb.Headline.MaxGoodputRate), orNaN(pa.Headline.MaxGoodputRate)),
		"saturation_rate":     ratio(orNaN(pb.Headline.SaturationRate), orNaN(pa.Headline.SaturationRate)),
	}}
	res := compare.Compare(&compare.Run{Label: a.Label, Stages: a.Stages, Samples: a.Samples},
		&compare.Run{Label: b.Label, Stages: b.Stages, Samples: b.Samples}, compare.Options{})
	for _, p := range res.Pairs {
		sc := schemas.ProfileStageComparison{Stage: p.New.Stage, Name: p.New.Name, BaseStage: p.Base.Stage,
			PairedBy: p.PairedBy, Ratios: map[string]*float64{}, Changes: p.Changes}
		for _, f := range comparedFigures {
			sc.Ratios[f.Key] = figureRatio(p, f.Key, f.Metric, f.Percentile)
		}
		c.Stages = append(c.Stages, sc)
	}
	return c
}

// figureRatio is B / A of one compared figure of a pair: a throughput ratio, or 1 + a
// percentile's change.
func figureRatio(p schemas.ComparePair, key, metric, pct string) *float64 {
	if metric == "" {
		return p.Ratios[key]
	}
	for _, ch := range p.Changes {
		if ch.Metric == metric && ch.Percentile == pct && ch.Change != nil {
			v := math.Round((1+*ch.Change)*10000) / 10000
			return &v
		}
	}
	return nil
}

// significantFigure reports whether a compared latency figure's change is significant.
func significantFigure(s schemas.ProfileStageComparison, metric, pct string) bool {
	for _, ch := range s.Changes {
		if ch.Metric == metric && ch.Percentile == pct {
			return ch.Significant
		}
	}
	return false
}
