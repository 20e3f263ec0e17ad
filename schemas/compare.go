package schemas

// CompareVersion is the version of `wirebench compare --format json`'s layout; it changes when
// a field is renamed or removed (added fields keep it).
const CompareVersion = 1

// How a stage of NEW was paired with one of BASE (Comparison.Pairs[].paired_by).
const (
	PairedByName = "name" // both stages carry the same non-empty name
	PairedByRate = "rate" // same mode and the same target rate (open) or concurrency (closed)
)

// Comparison is the result of `wirebench compare BASE NEW`: each stage of NEW against its
// partner in BASE, every latency percentile's change with its interval, and the gate's verdict.
// Changes are NEW / BASE − 1 (+0.05 = 5% higher in NEW); durations in ns.
type Comparison struct {
	Version    int            `json:"compare_version" doc:"version of this layout (CompareVersion)"`
	Base       CompareRun     `json:"base" doc:"the baseline run, or set of runs"`
	New        CompareRun     `json:"new" doc:"the run, or set of runs, compared with it"`
	Method     string         `json:"method" doc:"how the intervals were made: within (one run a side: a block bootstrap of each run's requests) or between (sets of two or more runs a side: Student t over the runs' percentiles, which covers changes between runs as a whole too)"`
	Level      float64        `json:"level" doc:"confidence level of every interval (0.95)"`
	Replicates int            `json:"replicates" doc:"bootstrap replicates per run and stage behind every interval (method between: behind each run's own variance)"`
	Family     string         `json:"family" doc:"how significance allows for the number of changes tested (multiplicity): Holm over the percentile changes of one stage pair"`
	Pairs      []ComparePair  `json:"pairs" doc:"one per stage of NEW that has a partner in BASE, in NEW's stage order"`
	Unmatched  []CompareStage `json:"unmatched" doc:"stages of either run without a partner: not compared"`
	Gate       *CompareGate   `json:"gate" doc:"the --fail-on verdict; null without --fail-on"`
	Notes      []string       `json:"notes,omitempty" doc:"what to keep in mind: a run whose trust is not green, percentiles without an interval"`
}

// Methods of a comparison's intervals (Comparison.Method).
const (
	CompareWithin  = "within"  // one run a side: a block bootstrap of each run's requests
	CompareBetween = "between" // two or more runs a side: Student t over the runs' percentiles
)

// CompareRun names one run of a comparison, or one set of runs, and its trust verdict.
type CompareRun struct {
	Dir           string   `json:"dir" doc:"the run directory as given, or the directory holding the set's runs"`
	Label         string   `json:"label" doc:"run id from the manifest, else the directory name"`
	Runs          []string `json:"runs,omitempty" doc:"a set's runs (their directories), in name order; absent for one run. Its percentiles are the runs' geometric means, its throughputs their means"`
	Trust         string   `json:"trust" doc:"the run's trust verdict: green, amber or red (as the report's banner); a set's is its worst run's"`
	TrustSentence string   `json:"trust_sentence" doc:"the stages and reasons behind it"`
}

// Which run an unmatched stage is of (CompareStage.Run).
const (
	CompareBase = "base"
	CompareNew  = "new"
)

// CompareStage names one stage of a run.
type CompareStage struct {
	Run        string  `json:"run,omitempty" doc:"base or new (unmatched stages only)"`
	Stage      int32   `json:"stage" doc:"stage index"`
	Name       string  `json:"name" doc:"stage name"`
	Mode       string  `json:"mode" doc:"open or closed"`
	TargetRate float64 `json:"target_rate" doc:"planned requests per second (open); 0 closed"`
	Users      int32   `json:"concurrency" doc:"closed-loop users; 0 open"`
	Requests   int64   `json:"requests" doc:"requests sent (a set: by all its runs)"`
}

// ComparePair is one stage of NEW against its partner in BASE.
type ComparePair struct {
	Base     CompareStage        `json:"base" doc:"the stage of BASE"`
	New      CompareStage        `json:"new" doc:"the stage of NEW"`
	PairedBy string              `json:"paired_by" doc:"name (same stage name) or rate (same mode and rate or concurrency)"`
	Ratios   map[string]*float64 `json:"ratios" doc:"NEW / BASE of the stage's throughput figures (achieved_rate, completion_rate, output_tps, goodput_rate); null where BASE is 0 or either is null"`
	Changes  []CompareChange     `json:"changes" doc:"every latency percentile: metric by metric (ttft, ttfc, tpot, itl, e2e, ntpot), p50, p90, p99, p99.9"`
}

// CompareChange is one percentile's change between the two stages of a pair.
type CompareChange struct {
	Metric      string   `json:"metric" doc:"ttft, ttfc, tpot, itl, e2e or ntpot"`
	Percentile  string   `json:"percentile" doc:"p50, p90, p99 or p99.9"`
	BaseNs      *int64   `json:"base_ns" doc:"the percentile in BASE (stages.parquet; a set: the geometric mean of its runs'); null without a value"`
	NewNs       *int64   `json:"new_ns" doc:"the percentile in NEW; null without a value"`
	Change      *float64 `json:"change" doc:"new_ns / base_ns − 1; null when either is null or base_ns is 0"`
	Lo          *float64 `json:"lo" doc:"lower end of the change's 95% interval (sampling and the client's own error); null without an interval"`
	Hi          *float64 `json:"hi" doc:"upper end of the change's 95% interval"`
	P           *float64 `json:"p" doc:"p-value of no change (two-sided; within: from the same bootstrap replicates, between: from the same t distribution); null without an interval"`
	Significant bool     `json:"significant" doc:"the interval excludes 0 and the change survives Holm's correction over the pair's changes"`
	Note        string   `json:"note,omitempty" doc:"why there is no interval, e.g. n too small"`
}

// Gate exit codes of `wirebench compare --fail-on`.
const (
	ExitGateFailed    = 3 // a significant regression past a --fail-on threshold
	ExitGateUntrusted = 4 // a run's trust is red, or a gated percentile has no interval: the gate cannot pass
)

// Verdicts of the gate (CompareGate.Verdict, GateFailure.Verdict).
const (
	GatePass      = "pass"      // no check failed
	GateFail      = "fail"      // a significant regression past a threshold: exit 3
	GateUntrusted = "untrusted" // a run's trust is red, or a gated percentile could not be judged: exit 4
)

// CompareGate is the verdict of the --fail-on rules.
type CompareGate struct {
	Rules    []string      `json:"rules" doc:"the --fail-on rules as given"`
	Tests    int           `json:"tests" doc:"rule × stage pair checks: the Bonferroni divisor of the gate's level"`
	Verdict  string        `json:"verdict" doc:"pass, fail (a significant regression past a threshold: exit 3) or untrusted (a run's trust is red, or a gated percentile could not be judged: exit 4)"`
	Failures []GateFailure `json:"failures" doc:"every check that did not pass, in rule order"`
}

// GateFailure is one check of a rule on one stage pair that did not pass.
type GateFailure struct {
	Rule    string   `json:"rule" doc:"the rule as given"`
	Stage   string   `json:"stage" doc:"the pair's stage in NEW, e.g. 1 (peak); empty for a run-wide failure (red trust)"`
	Verdict string   `json:"verdict" doc:"fail or untrusted"`
	Change  *float64 `json:"change" doc:"the change; null without one"`
	Lo      *float64 `json:"lo" doc:"lower end of the change's interval at the gate's level"`
	Hi      *float64 `json:"hi" doc:"upper end"`
	Reason  string   `json:"reason" doc:"the figures behind it, in one sentence"`
}
