package schemas

// Breakdown dimensions of Breakdown.By: the request column a stage's figures are split by.
const (
	ByModel    = "model"    // the model field sent (target.models)
	ByEndpoint = "endpoint" // the target URL the request went to (target.urls)
)

// Breakdown is one row of metrics/breakdown.parquet (and one entry of a profile.json stage's
// split, under the same names): the figures of one stage's requests that
// share one value of a request column (by: model, endpoint), so a mix of models or endpoints in
// one stage shows each one's share, latencies and goodput. A dimension has rows only when the
// config gives it more than one value (target.models); the file is then empty for a
// single-model run. The figures are computed as in stages.parquet over the group's requests
// alone: latencies over its ok requests; completion_rate and the token rates count the group's
// ok completions (of any stage) inside the group's own send window [first S, last S] (steady
// part: its middle 80%), so the groups of one stage add up to about the stage's figure.
type Breakdown struct {
	Stage          int32    `json:"stage" parquet:"stage" doc:"stage index"`
	Name           string   `json:"name" parquet:"name" doc:"stage name from the config"`
	By             string   `json:"by" parquet:"by,dict" doc:"the request column the stage is split by: model (metric-requests model) or endpoint"`
	Key            string   `json:"key" parquet:"key,dict" doc:"the column's value shared by the row's requests, e.g. the model name"`
	Requests       int64    `json:"requests" parquet:"requests" doc:"requests sent (warmup excluded)"`
	Share          float64  `json:"share" parquet:"share" doc:"requests / the stage's requests"`
	Completed      int64    `json:"completed" parquet:"completed" doc:"ok requests"`
	Errors         int64    `json:"errors" parquet:"errors" doc:"failed requests"`
	Cancelled      int64    `json:"cancelled" parquet:"cancelled" doc:"requests the client closed as planned (workload.cancel): not errors, in no latency, not in goodput's denominator"`
	ErrorsByKind   string   `json:"errors_by_kind" parquet:"errors_by_kind" doc:"JSON object error kind -> count"`
	CompletionRate *float64 `json:"completion_rate" parquet:"completion_rate,optional" doc:"the group's ok completions per second in the steady part of its send window; null without a window"`
	OutputTPS      *float64 `json:"output_tps" parquet:"output_tps,optional" doc:"output tokens per second of the group's ok requests completing in its send window; null without a window"`
	GoodputShare   *float64 `json:"goodput_share" parquet:"goodput_share,optional" doc:"share of the group's requests meeting every SLO, of those not cancelled by the client; failures count as misses; null without such requests"`
	GoodputRate    *float64 `json:"goodput_rate" parquet:"goodput_rate,optional" doc:"goodput_share × completion_rate; null when either is"`
	TTFT           Dist     `json:"ttft_ns" parquet:"ttft_ns" doc:"TTFT distribution"`
	TPOT           Dist     `json:"tpot_ns" parquet:"tpot_ns" doc:"TPOT distribution"`
	ITL            Dist     `json:"itl_ns" parquet:"itl_ns" doc:"inter-chunk gaps, one value per gap"`
	E2E            Dist     `json:"e2e_ns" parquet:"e2e_ns" doc:"E2E distribution"`
	NTPOT          Dist     `json:"ntpot_ns" parquet:"ntpot_ns" doc:"NTPOT distribution"`
	InputTokens    Dist     `json:"input_tokens" parquet:"input_tokens" doc:"input length distribution (tokens, not ns)"`
	OutputTokens   Dist     `json:"output_tokens" parquet:"output_tokens" doc:"output length distribution (tokens, not ns)"`
}
