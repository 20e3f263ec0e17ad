package report

import (
	"encoding/json"
	"math"
	"path/filepath"

	"github.com/wirebench/wirebench/schemas"
)

// ProfileVersion is the version of profile.json's layout; it changes when a field is renamed
// or removed (added fields keep it).
const ProfileVersion = 1

// Profile is profile.json: the machine-readable latency profile of one or more runs. The first
// run is the baseline A of every comparison. Durations are int64 nanoseconds, rates per second.
type Profile struct {
	ProfileVersion int          `json:"profile_version"`
	SchemaVersion  int          `json:"schema_version"`
	Runs           []RunProfile `json:"runs"`
	Comparisons    []Comparison `json:"comparisons,omitempty"` // run i vs run 0, for i >= 1
}

// RunProfile is one run in profile.json.
type RunProfile struct {
	Label    string         `json:"label"`            // run id, else the directory name
	Path     string         `json:"path"`             // run directory relative to the report directory
	Host     string         `json:"host,omitempty"`   // from the manifest
	CPUs     int            `json:"cpus,omitempty"`   // from the manifest
	Tool     string         `json:"tool,omitempty"`   // wirebench version that captured the run
	Status   string         `json:"status,omitempty"` // manifest status: complete, interrupted, failed
	Missing  []string       `json:"missing,omitempty"`
	Trust    TrustVerdict   `json:"trust"`
	Headline Headline       `json:"headline"`
	Stages   []StageProfile `json:"stages"`

	Outages []schemas.Outage `json:"outages,omitempty"` // when the target could not be reached (manifest)
}

// TrustVerdict says whether the run's figures can be trusted (see Trust).
type TrustVerdict struct {
	Level    string `json:"level"`    // green, amber or red
	Sentence string `json:"sentence"` // the stages and reasons behind the level, with the numbers
}

// Headline holds the run's figures at a glance.
type Headline struct {
	MaxCompletionRate float64 `json:"max_completion_rate"` // highest ok completions/s over the stages
	MaxOutputTPS      float64 `json:"max_output_tps"`      // highest output tokens/s over the stages
	MaxGoodputRate    float64 `json:"max_goodput_rate"`    // highest requests/s meeting every SLO
	SaturationStage   *int32  `json:"saturation_stage"`    // index of the saturation stage; null when none
	SaturationRate    float64 `json:"saturation_rate"`     // completions/s at the saturation stage; 0 when none
	ClientBoundStages []int32 `json:"client_bound_stages"` // stages whose figures the client may have distorted
}

// StageProfile is one stage in profile.json.
type StageProfile struct {
	Stage          int32                   `json:"stage"`
	Name           string                  `json:"name"`
	Mode           string                  `json:"mode"`
	TargetRate     float64                 `json:"target_rate"`
	Concurrency    int32                   `json:"concurrency"`
	DurationNs     int64                   `json:"duration_ns"` // end_ns - start_ns
	Requests       int64                   `json:"requests"`
	Completed      int64                   `json:"completed"`
	Errors         int64                   `json:"errors"`
	ErrorsByKind   map[string]int64        `json:"errors_by_kind"`
	AchievedRate   float64                 `json:"achieved_rate"`
	IssuedRate     float64                 `json:"issued_rate"` // requests begun per second (before any connection wait)
	CompletionRate float64                 `json:"completion_rate"`
	InputTPS       float64                 `json:"input_tps"`
	OutputTPS      float64                 `json:"output_tps"`
	TotalTPS       float64                 `json:"total_tps"`
	InflightMean   float64                 `json:"inflight_mean"`
	GoodputShare   float64                 `json:"goodput_share"`
	GoodputRate    float64                 `json:"goodput_rate"`
	Saturated      bool                    `json:"saturated"`
	Latency        map[string]schemas.Dist `json:"latency"` // ttft_ns, tpot_ns, itl_ns, ntpot_ns, e2e_ns, ... by column name
	Breakdown      Breakdown               `json:"breakdown"`
	Quality        Quality                 `json:"quality"`
}

// Breakdown is the mean decomposition of a request: queue + prefill + decode.
type Breakdown struct {
	QueueMeanNs       int64   `json:"queue_mean_ns"`
	PrefillMeanNs     int64   `json:"prefill_mean_ns"`
	DecodeMeanNs      int64   `json:"decode_mean_ns"`
	PrefillPerTokenNs float64 `json:"prefill_per_token_ns"`
	Source            string  `json:"source"` // server, histograms, fit or empty
}

// Quality holds the stage's two verdicts (latency uncertainty, load delivered), its trust
// level and the diagnostics behind them (see schemas.Stage).
type Quality struct {
	Trust             string  `json:"trust"` // green, amber or red
	PlannedRate       float64 `json:"planned_rate"`
	RateFidelity      float64 `json:"rate_fidelity"` // achieved / planned
	SendLagP99Ns      int64   `json:"send_lag_p99_ns"`
	ReadLagP99Ns      int64   `json:"read_lag_p99_ns"`
	ExactShare        float64 `json:"exact_share"`
	WorkerRhoMax      float64 `json:"worker_rho_max"`
	Workers           int32   `json:"workers"`
	GCPauseNs         int64   `json:"gc_pause_ns"`
	UncertaintyNs     int64   `json:"uncertainty_ns"`
	UncertaintyFigure string  `json:"uncertainty_figure,omitempty"`
	ClientBound       bool    `json:"client_bound"`
	ClientBoundReason string  `json:"client_bound_reason,omitempty"`
	LoadDelivered     bool    `json:"load_delivered"`
	LoadReason        string  `json:"load_reason,omitempty"`
	LoadBlame         string  `json:"load_blame,omitempty"` // who waited (schemas.Blame*)
	Missing           string  `json:"missing,omitempty"`    // hosts' planned requests not recorded (schemas.Stage.Missing)
	// ClockUncertaintyNs: the hosts' clocks may be this far apart, so the stage's window and
	// rates are uncertain by it (several hosts on several machines; latencies are not).
	ClockUncertaintyNs int64   `json:"clock_uncertainty_ns,omitempty"`
	LateShareClient    float64 `json:"late_share_client"`
	WorkersForRhoHalf  int32   `json:"workers_for_rho_half"`
	Advice             string  `json:"advice,omitempty"`
}

// Comparison is run B (Runs[Run]) against the baseline A (Runs[0]), stage by stage (stages
// are matched by index). Ratios are B / A; null where A is 0.
type Comparison struct {
	Run      int                 `json:"run"`
	Label    string              `json:"label"`    // "B vs A" with the run labels
	Headline map[string]*float64 `json:"headline"` // ratios of the headline figures
	Stages   []StageComparison   `json:"stages"`
}

// StageComparison holds the ratios of one stage.
type StageComparison struct {
	Stage  int32               `json:"stage"`
	Name   string              `json:"name"`
	Ratios map[string]*float64 `json:"ratios"`
}

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

// p50 and p99 format the percentile with its bound (fmtBound).
func p50(d schemas.Dist) string { return fmtBound(d.P50, d.P50Lo, d.P50Hi) }
func p99(d schemas.Dist) string { return fmtBound(d.P99, d.P99Lo, d.P99Hi) }

// buildProfile turns the loaded runs into the profile; outDir makes run paths relative.
func buildProfile(runs []*run, outDir string) Profile {
	p := Profile{ProfileVersion: ProfileVersion, SchemaVersion: schemas.SchemaVersion}
	for _, r := range runs {
		p.Runs = append(p.Runs, runProfile(r, outDir))
	}
	for i := 1; i < len(p.Runs); i++ {
		p.Comparisons = append(p.Comparisons, compare(p.Runs[0], p.Runs[i], i))
	}
	return p
}

func runProfile(r *run, outDir string) RunProfile {
	rp := RunProfile{Label: r.Label, Path: filepath.ToSlash(r.Dir)}
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
	for i := range r.Stages {
		s := &r.Stages[i]
		sp := stageProfile(s, cpus)
		rp.Stages = append(rp.Stages, sp)
		h := &rp.Headline
		h.MaxCompletionRate = math.Max(h.MaxCompletionRate, s.CompletionRate)
		h.MaxOutputTPS = math.Max(h.MaxOutputTPS, s.OutputTPS)
		h.MaxGoodputRate = math.Max(h.MaxGoodputRate, s.GoodputRate)
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

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func stageProfile(s *schemas.Stage, cpus int) StageProfile {
	sp := StageProfile{
		Stage: s.Stage, Name: s.Name, Mode: s.Mode, TargetRate: s.TargetRate, Concurrency: s.Concurrency,
		DurationNs: s.EndNs - s.StartNs, Requests: s.Requests, Completed: s.Completed, Errors: s.Errors,
		ErrorsByKind: map[string]int64{}, AchievedRate: s.AchievedRate, IssuedRate: s.IssuedRate, CompletionRate: s.CompletionRate,
		InputTPS: s.InputTPS, OutputTPS: s.OutputTPS, TotalTPS: s.TotalTPS, InflightMean: s.InflightMean,
		GoodputShare: s.GoodputShare, GoodputRate: s.GoodputRate, Saturated: s.Saturated,
		Latency: map[string]schemas.Dist{},
		Breakdown: Breakdown{
			QueueMeanNs: s.Queue.Mean, PrefillMeanNs: s.Prefill.Mean, DecodeMeanNs: s.Decode.Mean,
			PrefillPerTokenNs: s.PrefillPerTokenNs, Source: s.DecompositionSource,
		},
		Quality: Quality{
			Trust: stageLevel(s), PlannedRate: s.PlannedRate, RateFidelity: s.RateFidelity,
			SendLagP99Ns: s.SendLag.P99, ReadLagP99Ns: s.ReadLag.P99, ExactShare: s.ExactShare,
			WorkerRhoMax: s.WorkerRhoMax, Workers: s.Workers, GCPauseNs: s.GCPauseNs,
			UncertaintyNs: s.UncertaintyNs, UncertaintyFigure: s.UncertaintyFigure,
			ClientBound: s.ClientBound, ClientBoundReason: s.ClientBoundReason,
			LoadDelivered: s.LoadDelivered, LoadReason: s.LoadReason, LoadBlame: s.LoadBlame, LateShareClient: s.LateShareClient,
			Missing: s.Missing, ClockUncertaintyNs: s.ClockUncertaintyNs,
			WorkersForRhoHalf: s.WorkersForRhoHalf, Advice: advice(s, cpus),
		},
	}
	if s.ErrorsByKind != "" {
		// A malformed object leaves the map empty; the error count is still in errors.
		_ = json.Unmarshal([]byte(s.ErrorsByKind), &sp.ErrorsByKind)
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

// ratio returns b/a, or nil when a is 0 or either is not finite.
func ratio(b, a float64) *float64 {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return nil
	}
	v := math.Round(b/a*10000) / 10000
	return &v
}

// comparedFigures are the per-stage figures whose B/A ratios the comparison shows.
var comparedFigures = []struct {
	Key, Title string
	Get        func(*StageProfile) float64
}{
	{"achieved_rate", "sent/s", func(s *StageProfile) float64 { return s.AchievedRate }},
	{"completion_rate", "done/s", func(s *StageProfile) float64 { return s.CompletionRate }},
	{"output_tps", "out tok/s", func(s *StageProfile) float64 { return s.OutputTPS }},
	{"goodput_rate", "goodput/s", func(s *StageProfile) float64 { return s.GoodputRate }},
	{"ttft_p50", "TTFT p50", func(s *StageProfile) float64 { return float64(s.Latency["ttft_ns"].P50) }},
	{"ttft_p99", "TTFT p99", func(s *StageProfile) float64 { return float64(s.Latency["ttft_ns"].P99) }},
	{"tpot_p50", "TPOT p50", func(s *StageProfile) float64 { return float64(s.Latency["tpot_ns"].P50) }},
	{"tpot_p99", "TPOT p99", func(s *StageProfile) float64 { return float64(s.Latency["tpot_ns"].P99) }},
	{"itl_p99", "ITL p99", func(s *StageProfile) float64 { return float64(s.Latency["itl_ns"].P99) }},
	{"ntpot_p99", "NTPOT p99", func(s *StageProfile) float64 { return float64(s.Latency["ntpot_ns"].P99) }},
	{"e2e_p99", "E2E p99", func(s *StageProfile) float64 { return float64(s.Latency["e2e_ns"].P99) }},
}

func compare(a, b RunProfile, idx int) Comparison {
	c := Comparison{Run: idx, Label: b.Label + " vs " + a.Label, Headline: map[string]*float64{
		"max_completion_rate": ratio(b.Headline.MaxCompletionRate, a.Headline.MaxCompletionRate),
		"max_output_tps":      ratio(b.Headline.MaxOutputTPS, a.Headline.MaxOutputTPS),
		"max_goodput_rate":    ratio(b.Headline.MaxGoodputRate, a.Headline.MaxGoodputRate),
		"saturation_rate":     ratio(b.Headline.SaturationRate, a.Headline.SaturationRate),
	}}
	byIndex := map[int32]*StageProfile{}
	for i := range a.Stages {
		byIndex[a.Stages[i].Stage] = &a.Stages[i]
	}
	for i := range b.Stages {
		sb := &b.Stages[i]
		sa, ok := byIndex[sb.Stage]
		if !ok {
			continue
		}
		sc := StageComparison{Stage: sb.Stage, Name: sb.Name, Ratios: map[string]*float64{}}
		for _, f := range comparedFigures {
			sc.Ratios[f.Key] = ratio(f.Get(sb), f.Get(sa))
		}
		c.Stages = append(c.Stages, sc)
	}
	return c
}
