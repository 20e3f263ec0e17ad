package schemas

// ProfileVersion is the version of profile.json's layout; it changes when a field is renamed,
// removed or changes meaning (added fields keep it). Version 2: a figure over nothing (a
// distribution of no values, a rate without a window, a share of nothing) is null, never 0.
// Version 3: stages carry intervals, the 95% intervals of their latency percentiles.
const ProfileVersion = 3

// Trust levels (ProfileTrust.Level, ProfileQuality.Trust, CompareRun.Trust): can a run's
// figures be trusted? The report judges them.
const (
	TrustGreen = "green" // every judged bound within tolerance, the load sent as planned, the server undisturbed
	TrustAmber = "amber" // the load was not sent as planned for a server, connection or shared-machine reason, latencies have wide bounds no client could narrow (events without a lower bound), or the client disturbed a server it shared the machine with
	TrustRed   = "red"   // some stage is client-bound, the client itself kept the load from being sent as planned, some of its planned requests are missing from the run's files, or it has no ok request
)

// Profile is RUN/report/profile.json, written by `wirebench report`: the machine-readable
// latency profile of one or more runs. The first run is the baseline A of every comparison.
// Durations are int64 nanoseconds, rates per second.
type Profile struct {
	ProfileVersion int                 `json:"profile_version" doc:"version of this layout (ProfileVersion); changes when a field is renamed or removed"`
	SchemaVersion  int                 `json:"schema_version" doc:"schema version of the run files it was made from"`
	Runs           []ProfileRun        `json:"runs" doc:"one per run given to report, the baseline first"`
	Comparisons    []ProfileComparison `json:"comparisons,omitempty" doc:"run i against run 0, for i >= 1"`
}

// ProfileRun is one run in profile.json.
type ProfileRun struct {
	Label    string          `json:"label" doc:"run id, else the directory name"`
	Path     string          `json:"path" doc:"run directory relative to the report directory"`
	Host     string          `json:"host,omitempty" doc:"host that captured it (manifest)"`
	CPUs     int             `json:"cpus,omitempty" doc:"CPUs of that host (manifest)"`
	Tool     string          `json:"tool,omitempty" doc:"wirebench version that captured the run"`
	Status   string          `json:"status,omitempty" doc:"manifest status: complete, interrupted, failed"`
	Missing  []string        `json:"missing,omitempty" doc:"what the run lacks (manifest): dead workers, hosts, unsent requests"`
	Trust    ProfileTrust    `json:"trust" doc:"the run's trust verdict"`
	Headline ProfileHeadline `json:"headline" doc:"the run's figures at a glance"`
	Stages   []ProfileStage  `json:"stages" doc:"one per measured stage"`
	Outages  []Outage        `json:"outages,omitempty" doc:"when the target could not be reached (manifest outages)"`
}

// ProfileTrust says whether the run's figures can be trusted.
type ProfileTrust struct {
	Level    string `json:"level" doc:"green, amber or red"`
	Sentence string `json:"sentence" doc:"the stages and reasons behind the level, with the numbers"`
}

// ProfileHeadline holds the run's figures at a glance.
type ProfileHeadline struct {
	MaxCompletionRate *float64 `json:"max_completion_rate" doc:"highest ok completions/s over the stages; null when no stage has one"`
	MaxOutputTPS      *float64 `json:"max_output_tps" doc:"highest output tokens/s over the stages; null when no stage has one"`
	MaxGoodputRate    *float64 `json:"max_goodput_rate" doc:"highest requests/s meeting every SLO; null when no stage has one"`
	SaturationStage   *int32   `json:"saturation_stage" doc:"index of the saturation stage; null when none"`
	SaturationRate    *float64 `json:"saturation_rate" doc:"completions/s at the saturation stage; null when none"`
	ClientBoundStages []int32  `json:"client_bound_stages" doc:"stages whose figures the client may have distorted"`
}

// ProfileStage is one stage in profile.json (the columns of metrics/stages.parquet it repeats
// mean the same, null where they are null).
type ProfileStage struct {
	Stage            int32            `json:"stage" doc:"stage index"`
	Name             string           `json:"name" doc:"stage name"`
	Mode             string           `json:"mode" doc:"open or closed"`
	TargetRate       float64          `json:"target_rate" doc:"configured rate, requests/s (open loop)"`
	Concurrency      int32            `json:"concurrency" doc:"users (closed loop)"`
	DurationNs       int64            `json:"duration_ns" doc:"end_ns − start_ns of the stage"`
	Requests         int64            `json:"requests" doc:"requests recorded"`
	Completed        int64            `json:"completed" doc:"requests finished without error"`
	Errors           int64            `json:"errors" doc:"requests that failed"`
	Cancelled        int64            `json:"cancelled,omitempty" doc:"requests the client closed as planned (workload.cancel): not errors"`
	ErrorsByKind     map[string]int64 `json:"errors_by_kind" doc:"failed requests by error kind"`
	AchievedRate     *float64         `json:"achieved_rate" doc:"sends per second between the first and the last send"`
	IssuedRate       *float64         `json:"issued_rate" doc:"requests begun per second (before any connection wait)"`
	CompletionRate   *float64         `json:"completion_rate" doc:"ok completions per second while the stage's load was offered"`
	InputTPS         *float64         `json:"input_tps" doc:"input tokens per second"`
	OutputTPS        *float64         `json:"output_tps" doc:"output tokens per second"`
	DocumentsPerS    *float64         `json:"documents_per_s,omitempty" doc:"documents per second (ranking APIs' documents scored, embeddings' inputs); absent for the generating APIs"`
	TotalTPS         *float64         `json:"total_tps" doc:"input + output tokens per second"`
	InflightMean     *float64         `json:"inflight_mean" doc:"mean requests in flight"`
	GoodputShare     *float64         `json:"goodput_share" doc:"share of requests meeting every SLO"`
	GoodputRate      *float64         `json:"goodput_rate" doc:"requests per second meeting every SLO"`
	Saturated        bool             `json:"saturated" doc:"the saturation stage"`
	Overloaded       bool             `json:"overloaded" doc:"stages.parquet overloaded: the queue grew through the stage; no sampling intervals"`
	OverloadedReason string           `json:"overloaded_reason,omitempty" doc:"stages.parquet overloaded_reason; absent when not overloaded"`
	Latency          map[string]Dist  `json:"latency" doc:"distributions by stages.parquet column name: ttft_ns, tpot_ns, itl_ns, ntpot_ns, e2e_ns, ttfc_ns, queue_ns, ..."`
	Intervals        map[string]CI    `json:"intervals" doc:"95% intervals of the percentiles (sampling and client error) by the latency's column name: ttft_ns, ttfc_ns, tpot_ns, itl_ns, e2e_ns, ntpot_ns (stages.parquet ttft_ci_ns, ...); an end is null where n is too small"`
	Breakdown        ProfileBreakdown `json:"breakdown" doc:"mean decomposition of a request"`
	Quality          ProfileQuality   `json:"quality" doc:"the stage's verdicts and their diagnostics"`
	Split            []Breakdown      `json:"split,omitempty" doc:"the stage's figures by model (target.models) or endpoint: its metrics/breakdown.parquet rows, same names; absent for a single model"`
}

// ProfileBreakdown is the mean decomposition of a request: queue + prefill + decode.
type ProfileBreakdown struct {
	QueueMeanNs       *int64   `json:"queue_mean_ns" doc:"mean queue time; null without values"`
	PrefillMeanNs     *int64   `json:"prefill_mean_ns" doc:"mean prefill time; null without values"`
	DecodeMeanNs      *int64   `json:"decode_mean_ns" doc:"mean decode time; null without values"`
	PrefillPerTokenNs *float64 `json:"prefill_per_token_ns" doc:"prefill time per input token"`
	Source            string   `json:"source" doc:"server, histograms, fit or empty"`
}

// ProfileQuality holds the stage's two verdicts (latency uncertainty, load delivered), its
// trust level and the diagnostics behind them (the stages.parquet columns of the same names).
type ProfileQuality struct {
	Trust              string           `json:"trust" doc:"green, amber or red"`
	PlannedRate        *float64         `json:"planned_rate" doc:"the schedule's own rate"`
	RateFidelity       *float64         `json:"rate_fidelity" doc:"achieved / planned"`
	SendLagP99Ns       *int64           `json:"send_lag_p99_ns" doc:"lateness S − P, p99; null without values"`
	ReadLagP99Ns       *int64           `json:"read_lag_p99_ns" doc:"read lag, p99; null without values"`
	ExactShare         *float64         `json:"exact_share" doc:"share of events with exact timestamps"`
	WorkerRhoMax       *float64         `json:"worker_rho_max" doc:"highest worker utilisation"`
	Workers            int32            `json:"workers" doc:"worker processes"`
	GCPauseNs          int64            `json:"gc_pause_ns" doc:"workers' GC pause total"`
	UncertaintyNs      *int64           `json:"uncertainty_ns" doc:"widest p50/p90/p99 bound of the judged latencies; null without values"`
	UncertaintyFigure  string           `json:"uncertainty_figure,omitempty" doc:"the figure with that bound"`
	ClientBound        bool             `json:"client_bound" doc:"the latency verdict failed"`
	ClientBoundReason  string           `json:"client_bound_reason,omitempty" doc:"why"`
	LoadDelivered      bool             `json:"load_delivered" doc:"the load verdict passed"`
	LoadReason         string           `json:"load_reason,omitempty" doc:"why not"`
	LoadBlame          string           `json:"load_blame,omitempty" doc:"who waited (client_cpu, client, client_cap, server_accept, server_busy, send, missing)"`
	Missing            string           `json:"missing,omitempty" doc:"hosts' planned requests not recorded"`
	ClockUncertaintyNs int64            `json:"clock_uncertainty_ns,omitempty" doc:"how far the hosts' clocks may be apart: the stage's window and rates are uncertain by it (latencies are not)"`
	LateShareClient    *float64         `json:"late_share_client" doc:"the client's share of the lateness"`
	WorkersForRhoHalf  int32            `json:"workers_for_rho_half" doc:"workers that would bring utilisation under TargetRho"`
	Advice             string           `json:"advice,omitempty" doc:"what to change, only when the client's CPU is the cause"`
	Footprint          ProfileFootprint `json:"footprint" doc:"what the client took of the machine and of the server's connections (the stages.parquet columns of the same names)"`
}

// ProfileFootprint is the client's footprint in one stage: its CPU on a machine it may share
// with the server, the footprint verdict, and the connections it opened.
type ProfileFootprint struct {
	TargetLocal           bool    `json:"target_local" doc:"the target shared the capture host"`
	ClientCPUs            float64 `json:"client_cpus" doc:"CPUs the client used (workers and coordinator)"`
	MachineCPUs           int32   `json:"machine_cpus" doc:"the host's CPUs; 0 when unknown"`
	MachineBusy           float64 `json:"machine_busy" doc:"share of the host's CPU time busy over the stage; 0 when machine_cpus is 0"`
	ServerDisturbed       bool    `json:"server_disturbed" doc:"the footprint verdict: co-located, machine saturated, client over DisturbShare of the CPUs"`
	ServerDisturbedReason string  `json:"server_disturbed_reason,omitempty" doc:"its figures"`
	InflightPeak          int64   `json:"inflight_peak" doc:"most requests in flight (sum over workers)"`
	ConnectionsOpened     int64   `json:"connections_opened" doc:"connections opened in the stage"`
	ConnectionsPeak       int64   `json:"connections_peak" doc:"most connections open at once (sum over workers)"`
	ConnectionsWarm       int64   `json:"connections_warm" doc:"the workers' warm pools"`
	ConnectionSpiral      bool    `json:"connection_spiral" doc:"far more connections opened than the requests in flight needed"`
}

// ProfileComparison is run B (Runs[Run]) against the baseline A (Runs[0]), stage by stage
// (stages paired as `wirebench compare` pairs them: by name, else by rate). Ratios are B / A;
// null where A is 0.
type ProfileComparison struct {
	Run      int                      `json:"run" doc:"index of run B in runs"`
	Label    string                   `json:"label" doc:"B vs A, with the run labels"`
	Headline map[string]*float64      `json:"headline" doc:"ratios of the headline figures"`
	Stages   []ProfileStageComparison `json:"stages" doc:"ratios per stage"`
}

// ProfileStageComparison holds the ratios of one stage.
type ProfileStageComparison struct {
	Stage     int32               `json:"stage" doc:"stage index in run B"`
	Name      string              `json:"name" doc:"stage name"`
	BaseStage int32               `json:"base_stage" doc:"index of its partner in run A"`
	PairedBy  string              `json:"paired_by" doc:"name (same stage name) or rate (same mode and rate or concurrency)"`
	Ratios    map[string]*float64 `json:"ratios" doc:"B / A of the stage's figures; null where A is 0"`
	Changes   []CompareChange     `json:"changes" doc:"every latency percentile's change B / A − 1 with its 95% interval and significance, as wirebench compare gives them (compare.json pairs[].changes); without requests.parquet no intervals"`
}
