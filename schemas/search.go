package schemas

// Search is the `search` section of a config: what `wirebench search` looks for. It replaces
// the load's stages and sweep with one constant (or Poisson) stage per step; the warmup, the
// workload and the SLOs are the config's.
type Search struct {
	Goodput   float64  `yaml:"goodput" json:"goodput,omitempty"`     // share of requests meeting every SLO a step needs to pass; default 0.99
	Precision float64  `yaml:"precision" json:"precision,omitempty"` // stop once the failing rate is within this share above the passing one; default 0.05
	MinRate   float64  `yaml:"min_rate" json:"min_rate,omitempty"`   // lowest rate searched, requests/s (required)
	MaxRate   float64  `yaml:"max_rate" json:"max_rate,omitempty"`   // highest rate searched, requests/s (required)
	Duration  Duration `yaml:"duration" json:"duration,omitempty"`   // length of each step; default 30s
	Arrival   string   `yaml:"arrival" json:"arrival,omitempty"`     // constant (default) or poisson
	MaxSteps  int      `yaml:"max_steps" json:"max_steps,omitempty"` // stop after this many steps; default 12
}

// Search defaults.
const (
	DefaultSearchGoodput   = 0.99
	DefaultSearchPrecision = 0.05
	DefaultSearchDuration  = Duration(30e9)
	DefaultSearchMaxSteps  = 12
)

// WithDefaults returns s with its zero fields set to the defaults.
func (s Search) WithDefaults() Search {
	if s.Goodput == 0 {
		s.Goodput = DefaultSearchGoodput
	}
	if s.Precision == 0 {
		s.Precision = DefaultSearchPrecision
	}
	if s.Duration == 0 {
		s.Duration = DefaultSearchDuration
	}
	if s.Arrival == "" {
		s.Arrival = ArrivalConstant
	}
	if s.MaxSteps == 0 {
		s.MaxSteps = DefaultSearchMaxSteps
	}
	return s
}

// SearchVersion is the version of search.json's layout; it changes when a field is renamed or
// removed (added fields keep it).
const SearchVersion = 1

// Step verdicts of a search.
const (
	StepPass      = "pass"      // goodput ≥ search.goodput, load and latency verdicts green
	StepFail      = "fail"      // goodput below search.goodput (or stopped early, already certain to be)
	StepUntrusted = "untrusted" // the load or latency verdict was not green: neither pass nor fail
)

// Outcomes of a search (SearchRecord.Outcome).
const (
	OutcomeConverged   = "converged"   // a passing and a failing rate within the precision of each other
	OutcomeBelowMin    = "below_min"   // min_rate itself fails
	OutcomeAboveMax    = "above_max"   // max_rate itself passes
	OutcomeUntrusted   = "untrusted"   // a step could not be judged; the search stopped
	OutcomeMaxSteps    = "max_steps"   // search.max_steps steps were run
	OutcomeInterrupted = "interrupted" // Ctrl-C
)

// SearchRecord is the record of one `wirebench search`, written to DIR/search.json after every
// step. Rates are in requests per second.
type SearchRecord struct {
	Version     int          `json:"search_version" doc:"version of this layout (SearchVersion)"`
	Config      string       `json:"config" doc:"the config file searched"`
	Goodput     float64      `json:"goodput" doc:"share of requests meeting every SLO a step needs to pass (search.goodput)"`
	Precision   float64      `json:"precision" doc:"relative width the bracket is narrowed to: fail_rate ≤ pass_rate × (1 + precision)"`
	MinRate     float64      `json:"min_rate" doc:"lowest rate searched"`
	MaxRate     float64      `json:"max_rate" doc:"highest rate searched"`
	Arrival     string       `json:"arrival" doc:"arrival process of every step: constant or poisson"`
	StepNs      int64        `json:"step_ns" doc:"planned length of each step"`
	SLO         string       `json:"slo" doc:"the config's SLOs, e.g. ttft ≤ 500ms, e2e ≤ 10s; empty = none"`
	Steps       []SearchStep `json:"steps" doc:"every step, in the order run"`
	Done        bool         `json:"done" doc:"the search ended (false while it runs, or when it was interrupted)"`
	Outcome     string       `json:"outcome" doc:"how it ended: converged, below_min (min_rate fails), above_max (max_rate passes), untrusted (a step could not be judged), max_steps, interrupted"`
	PassRate    float64      `json:"pass_rate" doc:"highest rate that passed; 0 = none"`
	FailRate    float64      `json:"fail_rate" doc:"lowest rate that failed; 0 = none"`
	LimitedBy   string       `json:"limited_by,omitempty" doc:"the SLO with the most misses at fail_rate, e.g. TTFT p99 (the percentile is search.goodput), or failed requests"`
	Capacity    string       `json:"capacity" doc:"the search's answer in one sentence"`
	FaithfulMax float64      `json:"faithful_rate,omitempty" doc:"this machine's highest faithful rate from the calibration given (calibrate); 0 = none given"`
	Notes       []string     `json:"notes,omitempty" doc:"what to keep in mind: an upper end past the faithful rate, an untrusted step and what the search did about it"`
}

// SearchStep is one step of a search: an ordinary run directory at one rate.
type SearchStep struct {
	Index         int      `json:"index" doc:"step number, from 0"`
	Rate          float64  `json:"rate" doc:"offered rate of the step"`
	Dir           string   `json:"dir" doc:"its run directory, relative to DIR (re-analysable like any run)"`
	Why           string   `json:"why" doc:"why this rate was chosen"`
	Verdict       string   `json:"verdict" doc:"pass, fail or untrusted"`
	Reason        string   `json:"reason" doc:"the figures behind the verdict"`
	EarlyStop     string   `json:"early_stop,omitempty" doc:"why the step was stopped before its end (already clearly failing); empty when it ran whole"`
	GoodputShare  *float64 `json:"goodput_share" doc:"share of the step's requests meeting every SLO (stages.parquet goodput_share); null without requests"`
	AchievedRate  *float64 `json:"achieved_rate" doc:"sends per second over the send window; null with fewer than two sends"`
	Requests      int64    `json:"requests" doc:"requests sent"`
	LoadDelivered bool     `json:"load_delivered" doc:"the load verdict (stages.parquet load_delivered)"`
	LoadBlame     string   `json:"load_blame,omitempty" doc:"who waited when the load was not delivered (stages.parquet load_blame)"`
	ClientBound   bool     `json:"client_bound" doc:"the latency verdict (stages.parquet client_bound): the client's error is too wide"`
	LatencyNote   string   `json:"latency_note,omitempty" doc:"stages.parquet client_bound_reason, when not empty"`
	Misses        Misses   `json:"misses" doc:"requests missing each SLO (a request may miss several)"`
	TTFTP50Ns     *int64   `json:"ttft_p50_ns" doc:"TTFT p50 of the step; null without an ok request"`
	TTFTP99Ns     *int64   `json:"ttft_p99_ns" doc:"TTFT p99 of the step; null without an ok request"`
	E2EP99Ns      *int64   `json:"e2e_p99_ns" doc:"E2E p99 of the step; null without an ok request"`
}

// Misses counts a step's requests that missed each SLO.
type Misses struct {
	Failed int64 `json:"failed" doc:"requests that did not end ok"`
	TTFT   int64 `json:"ttft" doc:"ok requests over slo.ttft"`
	TPOT   int64 `json:"tpot" doc:"ok requests over slo.tpot"`
	ITL    int64 `json:"itl" doc:"ok requests whose largest gap is over slo.itl"`
	NTPOT  int64 `json:"ntpot" doc:"ok requests over slo.ntpot"`
	E2E    int64 `json:"e2e" doc:"ok requests over slo.e2e"`
}
