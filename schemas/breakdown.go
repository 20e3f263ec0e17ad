package schemas

// Breakdown dimensions of Breakdown.By: the request column a stage's figures are split by.
const (
	ByModel    = "model"    // the model field sent (target.models)
	ByEndpoint = "endpoint" // the target URL the request went to (target.urls)
)

// Breakdown is one row of metrics/breakdown.parquet: the figures of one stage's requests that
// share one value of a request column (by: model, endpoint), so a mix of models or endpoints in
// one stage shows each one's share, latencies and goodput. A dimension has rows only when the
// config gives it more than one value (target.models); the file is then empty for a
// single-model run. The figures are computed as in stages.parquet over the group's requests
// alone: latencies over its ok requests; completion_rate and the token rates count the group's
// ok completions (of any stage) inside the group's own send window [first S, last S] (steady
// part: its middle 80%), so the groups of one stage add up to about the stage's figure.
type Breakdown struct {
	Stage          int32    `parquet:"stage" doc:"stage index"`
	Name           string   `parquet:"name" doc:"stage name from the config"`
	By             string   `parquet:"by,dict" doc:"the request column the stage is split by: model (metric-requests model) or endpoint"`
	Key            string   `parquet:"key,dict" doc:"the column's value shared by the row's requests, e.g. the model name"`
	Requests       int64    `parquet:"requests" doc:"requests sent (warmup excluded)"`
	Share          float64  `parquet:"share" doc:"requests / the stage's requests"`
	Completed      int64    `parquet:"completed" doc:"ok requests"`
	Errors         int64    `parquet:"errors" doc:"failed requests"`
	ErrorsByKind   string   `parquet:"errors_by_kind" doc:"JSON object error kind -> count"`
	CompletionRate *float64 `parquet:"completion_rate,optional" doc:"the group's ok completions per second in the steady part of its send window; null without a window"`
	OutputTPS      *float64 `parquet:"output_tps,optional" doc:"output tokens per second of the group's ok requests completing in its send window; null without a window"`
	GoodputShare   *float64 `parquet:"goodput_share,optional" doc:"share of the group's requests meeting every SLO; failures count as misses; null without requests"`
	GoodputRate    *float64 `parquet:"goodput_rate,optional" doc:"goodput_share × completion_rate; null when either is"`
	TTFT           Dist     `parquet:"ttft_ns" doc:"TTFT distribution"`
	TPOT           Dist     `parquet:"tpot_ns" doc:"TPOT distribution"`
	ITL            Dist     `parquet:"itl_ns" doc:"inter-chunk gaps, one value per gap"`
	E2E            Dist     `parquet:"e2e_ns" doc:"E2E distribution"`
	NTPOT          Dist     `parquet:"ntpot_ns" doc:"NTPOT distribution"`
	InputTokens    Dist     `parquet:"input_tokens" doc:"input length distribution (tokens, not ns)"`
	OutputTokens   Dist     `parquet:"output_tokens" doc:"output length distribution (tokens, not ns)"`
}
