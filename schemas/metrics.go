package schemas

import (
	"fmt"
	"strconv"
)

// Where a request's output_tokens came from (MetricRequest.TokensSource).
const (
	TokensUsage     = "usage"     // the server's usage completion_tokens
	TokensTokenizer = "tokenizer" // the configured tokenizer over the kept output text
	TokensChunks    = "chunks"    // the events' token counts, else the content-bearing events
)

// Decomposition sources (MetricRequest.DecompositionSource, Stage.DecompositionSource), in
// aggregate's order of preference.
const (
	DecompositionServer     = "server"     // per-request timings sent by the server
	DecompositionHistograms = "histograms" // per-stage deltas of the scraped server histograms
	DecompositionFit        = "fit"        // Theil–Sen fit TTFT ≈ a + b·I on the least-loaded stage
)

// MetricRequest is one row of metrics/requests.parquet: one request with every derived metric.
// t_j is chunk j's rx_kernel_ns when present, else rx_user_ns; S = sent_ns, P = planned_ns,
// E = done_ns; I = input_tokens, N = output_tokens.
//
// Every latency also has an interval [*_lo_ns, *_hi_ns] that surely holds its true value, from
// an interval for each time it uses (see the Bounds section of SCHEMAS.md): event j arrived in
// [lo_j, hi_j] (exact: [rx_kernel_ns − stamp allowance, rx_kernel_ns]; upper_bound:
// [max(rx_after_ns, S), rx_kernel_ns]; user: [max(rx_after_ns, S), rx_user_ns]); the request
// left in [S, sent_end_ns]. A difference b − a of two such times lies in [lo_b − hi_a,
// hi_b − lo_a]; a quotient by N in the quotient of the ends (integer division is monotone).
type MetricRequest struct {
	Seq                 int64  `parquet:"seq,delta" doc:"request number in the run"`
	Stage               int32  `parquet:"stage" doc:"stage index"`
	Worker              int32  `parquet:"worker" doc:"worker process index"`
	Endpoint            int32  `parquet:"endpoint" doc:"index into target.urls of the endpoint it went to; 0 with target.url alone"`
	Shard               int32  `parquet:"shard" doc:"host shard index"`
	Warmup              bool   `parquet:"warmup" doc:"warmup request"`
	Conversation        int64  `parquet:"conversation" doc:"conversation id; -1 when none"`
	Turn                int32  `parquet:"turn" doc:"turn inside the conversation"`
	Model               string `parquet:"model,dict" doc:"the model field sent (schedule model)"`
	PlannedNs           int64  `parquet:"planned_ns" doc:"planned send time P"`
	SentNs              int64  `parquet:"sent_ns" doc:"send time S: when the write call that took the request's last byte began (https: when net/http reports the headers written); for a request never written (e.g. the connect failed), when the worker began it"`
	DoneNs              *int64 `parquet:"done_ns,optional" doc:"arrival of the final event, E; null when the stream did not end"`
	Status              int32  `parquet:"status" doc:"HTTP status; 0 when none"`
	ErrorKind           string `parquet:"error_kind,dict" doc:"empty on success, else the capture error kind (see Error kinds)"`
	OK                  bool   `parquet:"ok" doc:"status 200, no error kind, stream ended"`
	InputTokens         *int32 `parquet:"input_tokens,optional" doc:"I: the server's usage prompt_tokens, else the scheduled count"`
	Documents           int32  `parquet:"documents" doc:"documents the request carried (raw documents): ranking APIs' documents, embeddings' inputs; 0 otherwise"`
	OutputTokens        *int32 `parquet:"output_tokens,optional" doc:"N: the server's usage completion_tokens, else the configured tokenizer over the text, else the number of content chunks"`
	TokensSource        string `parquet:"tokens_source,dict" doc:"usage, tokenizer or chunks: where output_tokens came from"`
	Chunks              int32  `parquet:"chunks" doc:"content-bearing events"`
	TTFTNs              *int64 `parquet:"ttft_ns,optional" doc:"t(first content-bearing chunk, reasoning included) - S (t and S are packet-tap times when the tap saw them)"`
	TTFTLoNs            *int64 `parquet:"ttft_lo_ns,optional" doc:"lower end of TTFT's interval: lo(first content event) - sent_end_ns"`
	TTFTHiNs            *int64 `parquet:"ttft_hi_ns,optional" doc:"upper end: hi(first content event) - S"`
	E2ENs               *int64 `parquet:"e2e_ns,optional" doc:"E - S"`
	E2ELoNs             *int64 `parquet:"e2e_lo_ns,optional" doc:"lower end of E2E's interval: lo(final event) - sent_end_ns"`
	E2EHiNs             *int64 `parquet:"e2e_hi_ns,optional" doc:"upper end: hi(final event) - S"`
	TTFCNs              *int64 `parquet:"ttfc_ns,optional" doc:"time to the first answer token: t(first event carrying answer text or tool-call arguments, reasoning excluded) - S; equals ttft_ns without reasoning; null when no answer token came"`
	TTFCLoNs            *int64 `parquet:"ttfc_lo_ns,optional" doc:"lower end of TTFC's interval: lo(first answer event) - sent_end_ns"`
	TTFCHiNs            *int64 `parquet:"ttfc_hi_ns,optional" doc:"upper end: hi(first answer event) - S"`
	ReasoningTokens     *int32 `parquet:"reasoning_tokens,optional" doc:"reasoning tokens the server reported in its usage (usage_reasoning_tokens); null when not reported"`
	AnswerTokens        *int32 `parquet:"answer_tokens,optional" doc:"output_tokens - reasoning_tokens when the server reported both; null otherwise"`
	TPOTNs              *int64 `parquet:"tpot_ns,optional" doc:"(t_last - t_first) / (N - 1) for N > 1 over at least two content events; null otherwise (never 0 for one event carrying every token)"`
	TPOTLoNs            *int64 `parquet:"tpot_lo_ns,optional" doc:"lower end of TPOT's interval: max(0, lo(last) - hi(first)) / (N - 1)"`
	TPOTHiNs            *int64 `parquet:"tpot_hi_ns,optional" doc:"upper end: (hi(last) - lo(first)) / (N - 1)"`
	ITLMeanNs           *int64 `parquet:"itl_mean_ns,optional" doc:"mean gap between consecutive content chunks; null with fewer than two"`
	ITLMaxNs            *int64 `parquet:"itl_max_ns,optional" doc:"largest gap between consecutive content chunks (stalls)"`
	ITLMaxLoNs          *int64 `parquet:"itl_max_lo_ns,optional" doc:"lower end of itl_max's interval: the largest gap lower end, max over j of max(0, lo_j - hi_(j-1))"`
	ITLMaxHiNs          *int64 `parquet:"itl_max_hi_ns,optional" doc:"upper end: the largest gap upper end, max over j of hi_j - lo_(j-1)"`
	NTPOTNs             *int64 `parquet:"ntpot_ns,optional" doc:"E2E / N for N > 0; null (never 0) when N = 0"`
	NTPOTLoNs           *int64 `parquet:"ntpot_lo_ns,optional" doc:"e2e_lo_ns / N for N > 0"`
	NTPOTHiNs           *int64 `parquet:"ntpot_hi_ns,optional" doc:"e2e_hi_ns / N for N > 0"`
	TTFTFromPlannedNs   *int64 `parquet:"ttft_from_planned_ns,optional" doc:"t(first content chunk) - P: coordinated-omission-free TTFT"`
	E2EFromPlannedNs    *int64 `parquet:"e2e_from_planned_ns,optional" doc:"E - P"`
	NTPOTFromPlannedNs  *int64 `parquet:"ntpot_from_planned_ns,optional" doc:"(E - P) / N for N > 0"`
	SendLagNs           int64  `parquet:"send_lag_ns" doc:"S - P: lateness against the schedule"`
	PacerLagNs          int64  `parquet:"pacer_lag_ns" doc:"send_start_ns - P: how late the worker began the request (its pacer and CPU: the client's part of the lateness)"`
	ConnectNs           *int64 `parquet:"connect_ns,optional" doc:"duration of the TCP connect when the request was the first on a new connection (the server's accept path when it is long); null when reused"`
	ConnWaitNs          int64  `parquet:"conn_wait_ns" doc:"time the request waited for a connection: 0 when an idle one was there (raw conn_wait_ns)"`
	SynRetrans          int32  `parquet:"syn_retrans" doc:"SYN retransmissions of its new connection: the server's accept queue was full"`
	ConnCapped          bool   `parquet:"conn_capped" doc:"it waited at the client's connection cap (capture --max-connections)"`
	ReadLagMaxNs        *int64 `parquet:"read_lag_max_ns,optional" doc:"largest rx_user_ns - rx_kernel_ns over the request's events; null without kernel times"`
	ExactChunks         int32  `parquet:"exact_chunks" doc:"events with an exact time: a packet-tap time, or quality exact"`
	TapChunks           int32  `parquet:"tap_chunks" doc:"events timed by the packet tap: the arrival of the segment that carried the event's last byte (raw-segments joined on local_port and rx_stream_end)"`
	TxTapNs             *int64 `parquet:"tx_tap_ns,optional" doc:"the packet tap's time of the segment that carried the request's last byte; when present it is S for every latency (else sent_ns); null without the tap"`
	UpperBoundChunks    int32  `parquet:"upper_bound_chunks" doc:"events with quality upper_bound"`
	UserChunks          int32  `parquet:"user_chunks" doc:"events with quality user"`
	ApproxChunks        int32  `parquet:"approx_chunks" doc:"events with quality approx"`
	QueueNs             *int64 `parquet:"queue_ns,optional" doc:"T_queue = TTFT - prefill_ns: waiting before prefill as the client sees it (server queue plus transport); fit source: max(0, TTFT - a - b*I)"`
	PrefillNs           *int64 `parquet:"prefill_ns,optional" doc:"prefill duration, capped at TTFT: server-reported prefill (server), the stage mean prefill from histogram deltas spread by input length, mean + b*(I - mean I) with the fit slope b, else mean * I / mean I (histograms), or a + b*I from the Theil-Sen fit on the least-loaded stage (fit)"`
	DecodeNs            *int64 `parquet:"decode_ns,optional" doc:"E - t_first: decode duration from the first token to the end, so queue + prefill + decode = E2E and NTPOT = (queue + prefill + decode) / N exactly (integer division)"`
	DecompositionSource string `parquet:"decomposition_source,dict" doc:"server (per-request timings from the server), histograms (scraped server histograms), fit (robust TTFT = a + b*I fit), or empty"`
	SLOMet              bool   `parquet:"slo_met" doc:"ok and within every SLO of the config (goodput)"`
}

// Values of Stage.LoadBlame.
const (
	BlameClientCPU    = "client_cpu"
	BlameClient       = "client"
	BlameClientCap    = "client_cap"
	BlameServerAccept = "server_accept"
	BlameServerBusy   = "server_busy"
	BlameSend         = "send"
	BlameMissing      = "missing"
	BlameMachine      = "machine"
)

// Dist is a latency distribution: exact order-statistic percentiles over the stage's values
// (nearest rank: the value at 1-based rank ceil(q*n) in ascending order, always an observed
// value, no interpolation), the maximum and the mean rounded to the nearest integer, all int64
// nanoseconds (tokens for the token distributions). Latency distributions are over the stage's
// ok requests; send lag over every request; read lag over every event with a kernel time.
// Count is the number of values; with Count = 0 every other field is null (never 0: a
// distribution of no values has no percentile, maximum or mean), and with Count > 0 none is.
//
// Bounds: each value x_i has an interval [l_i, h_i] holding its true value (see MetricRequest).
// The true p-quantile lies in [p_lo, p_hi], the same nearest-rank quantile of the l_i and of the
// h_i: l_i <= x_i for every i means that at least as many l values as x values lie at or below
// any t, so the k-th smallest l is at most the k-th smallest x; the same argument gives the
// k-th smallest x at most the k-th smallest h. Ties and weights (same weight for l_i, x_i, h_i)
// do not change the argument.
//
// The JSON names are those of profile.json (wirebench report), which holds Dist as it is.
type Dist struct {
	Count int64  `parquet:"count" json:"count" doc:"number of values; with 0 every other field is null"`
	P50   *int64 `parquet:"p50,optional" json:"p50" doc:"50th percentile (nearest rank: value at rank ceil(0.5*count))"`
	P50Lo *int64 `parquet:"p50_lo,optional" json:"p50_lo" doc:"lower bound of the true p50: the p50 of the values' lower ends (= p50 where the values carry no client error)"`
	P50Hi *int64 `parquet:"p50_hi,optional" json:"p50_hi" doc:"upper bound of the true p50: the p50 of the values' upper ends"`
	P90   *int64 `parquet:"p90,optional" json:"p90" doc:"90th percentile"`
	P90Lo *int64 `parquet:"p90_lo,optional" json:"p90_lo" doc:"lower bound of the true p90"`
	P90Hi *int64 `parquet:"p90_hi,optional" json:"p90_hi" doc:"upper bound of the true p90"`
	P95   *int64 `parquet:"p95,optional" json:"p95" doc:"95th percentile"`
	P99   *int64 `parquet:"p99,optional" json:"p99" doc:"99th percentile"`
	P99Lo *int64 `parquet:"p99_lo,optional" json:"p99_lo" doc:"lower bound of the true p99"`
	P99Hi *int64 `parquet:"p99_hi,optional" json:"p99_hi" doc:"upper bound of the true p99"`
	P999  *int64 `parquet:"p999,optional" json:"p999" doc:"99.9th percentile"`
	Max   *int64 `parquet:"max,optional" json:"max" doc:"maximum"`
	Mean  *int64 `parquet:"mean,optional" json:"mean" doc:"arithmetic mean, rounded"`
}

// CI holds the 95% intervals of a latency distribution's p50, p90, p99 and p99.9 that cover both
// the sampling error (how far another run of the same load could land) and the client's own
// error (the Dist's bounds): a circular block bootstrap over the stage's requests in send order,
// B = 1,000, the block length by Politis & White's rule, from the 2.5% point of the replicates'
// percentiles of the values' lower ends to the 97.5% point of those of their upper ends (ITL:
// a request's gaps go together). Null ("n too small") where fewer than 20 values, or 20
// effective values under dependence, lie beyond the percentile, and null for every percentile of
// an overloaded stage (Stage.Overloaded), whose latencies have no steady distribution. See
// docs/design/intervals.md.
type CI struct {
	Values   int64  `parquet:"values" json:"values" doc:"values the bootstrap resampled: all of the stage's, or beyond 131,072 a systematic subsample of its requests (an interval then wider than the full sample's, never narrower)"`
	BlockLen int32  `parquet:"block_len" json:"block_len" doc:"block length in requests; 0 when there was no interval"`
	P50Lo    *int64 `parquet:"p50_lo,optional" json:"p50_lo" doc:"lower end of the p50's 95% interval; null when n is too small or the stage is overloaded"`
	P50Hi    *int64 `parquet:"p50_hi,optional" json:"p50_hi" doc:"upper end of the p50's 95% interval"`
	P90Lo    *int64 `parquet:"p90_lo,optional" json:"p90_lo" doc:"lower end of the p90's 95% interval (null below 200 values)"`
	P90Hi    *int64 `parquet:"p90_hi,optional" json:"p90_hi" doc:"upper end of the p90's 95% interval"`
	P99Lo    *int64 `parquet:"p99_lo,optional" json:"p99_lo" doc:"lower end of the p99's 95% interval (null below 2,000 values)"`
	P99Hi    *int64 `parquet:"p99_hi,optional" json:"p99_hi" doc:"upper end of the p99's 95% interval"`
	P999Lo   *int64 `parquet:"p999_lo,optional" json:"p999_lo" doc:"lower end of the p99.9's 95% interval (null below 20,000 values)"`
	P999Hi   *int64 `parquet:"p999_hi,optional" json:"p999_hi" doc:"upper end of the p99.9's 95% interval"`
}

// Stage is one row of metrics/stages.parquet: one stage of the load plan with rates,
// throughputs, latency distributions, goodput and the client-bias checks.
type Stage struct {
	Stage               int32    `parquet:"stage" doc:"stage index"`
	Name                string   `parquet:"name" doc:"stage name from the config"`
	Mode                string   `parquet:"mode,dict" doc:"open or closed"`
	TargetRate          float64  `parquet:"target_rate" doc:"planned requests per second (open loop); 0 for closed loop"`
	Concurrency         int32    `parquet:"concurrency" doc:"closed-loop users; 0 for open loop"`
	StartNs             int64    `parquet:"start_ns" doc:"first planned send of the stage"`
	EndNs               int64    `parquet:"end_ns" doc:"last completion of the stage"`
	Requests            int64    `parquet:"requests" doc:"requests sent (warmup excluded)"`
	Completed           int64    `parquet:"completed" doc:"requests that ended ok"`
	Errors              int64    `parquet:"errors" doc:"requests that failed (cancelled_by_client not included)"`
	Cancelled           int64    `parquet:"cancelled" doc:"requests the client closed mid-stream as planned (workload.cancel, error kind cancelled_by_client): neither completed nor errors, in no latency figure, token rate or goodput's denominator"`
	ErrorsByKind        string   `parquet:"errors_by_kind" doc:"JSON object: error kind -> count"`
	AchievedRate        *float64 `parquet:"achieved_rate,optional" doc:"sends per second over the send window; null with fewer than two sends"`
	CompletionRate      *float64 `parquet:"completion_rate,optional" doc:"ok completions per second, of any stage's requests, in the steady part of the stage (the middle 80% of its send window): what the server delivered under this load; null when the stage has no window (no request, or every one at one instant)"`
	InputTPS            *float64 `parquet:"input_tps,optional" doc:"input tokens per second of ok requests (any stage) completing inside the send window [first S, last S]; null without a window"`
	OutputTPS           *float64 `parquet:"output_tps,optional" doc:"output tokens per second of ok requests (any stage) completing inside the send window [first S, last S]; null without a window"`
	TotalTPS            *float64 `parquet:"total_tps,optional" doc:"input_tps + output_tps; null without a window"`
	DocumentsPerS       *float64 `parquet:"documents_per_s,optional" doc:"documents per second of ok requests (any stage) completing inside the send window [first S, last S]: the ranking APIs' documents scored, embeddings' inputs embedded; null without a window or when no request carried documents (the generating APIs)"`
	SteadyOutputTPS     *float64 `parquet:"steady_output_tps,optional" doc:"output tokens per second of ok requests (any stage) completing in the steady part (the middle 80% of the send window); null without a window"`
	InflightMean        *float64 `parquet:"inflight_mean,optional" doc:"time-weighted mean of requests in flight: sum over requests of (end - S) / (end_ns - start_ns); null without a window"`
	GoodputShare        *float64 `parquet:"goodput_share,optional" doc:"share of requests meeting every SLO, of those not cancelled by the client (cancelled_by_client: the client, not the server, ended them); failures count as misses; null without such requests"`
	GoodputRate         *float64 `parquet:"goodput_rate,optional" doc:"goodput_share × completion_rate: requests per second meeting every SLO; null when goodput_share or completion_rate is"`
	TTFT                Dist     `parquet:"ttft_ns" doc:"TTFT distribution"`
	TTFC                Dist     `parquet:"ttfc_ns" doc:"time to the first answer token (reasoning excluded) distribution"`
	ReasoningTokens     Dist     `parquet:"reasoning_tokens" doc:"reasoning tokens per request where the server reported them (tokens, not ns)"`
	AnswerTokens        Dist     `parquet:"answer_tokens" doc:"answer tokens (output minus reasoning) per request where the server reported both (tokens, not ns)"`
	TPOT                Dist     `parquet:"tpot_ns" doc:"TPOT distribution"`
	ITL                 Dist     `parquet:"itl_ns" doc:"inter-chunk gaps, one value per gap"`
	ITLWeighted         Dist     `parquet:"itl_token_weighted_ns" doc:"inter-token latency where a chunk carrying k tokens counts k times with gap/k"`
	E2E                 Dist     `parquet:"e2e_ns" doc:"E2E distribution"`
	NTPOT               Dist     `parquet:"ntpot_ns" doc:"NTPOT distribution"`
	TTFTCI              CI       `parquet:"ttft_ci_ns" doc:"95% intervals of the TTFT percentiles, sampling and client error"`
	TTFCCI              CI       `parquet:"ttfc_ci_ns" doc:"95% intervals of the TTFC percentiles"`
	TPOTCI              CI       `parquet:"tpot_ci_ns" doc:"95% intervals of the TPOT percentiles"`
	ITLCI               CI       `parquet:"itl_ci_ns" doc:"95% intervals of the ITL percentiles (requests resampled with all their gaps)"`
	E2ECI               CI       `parquet:"e2e_ci_ns" doc:"95% intervals of the E2E percentiles"`
	NTPOTCI             CI       `parquet:"ntpot_ci_ns" doc:"95% intervals of the NTPOT percentiles"`
	TTFTFromPlanned     Dist     `parquet:"ttft_from_planned_ns" doc:"TTFT measured from the planned time"`
	E2EFromPlanned      Dist     `parquet:"e2e_from_planned_ns" doc:"E2E measured from the planned time"`
	Queue               Dist     `parquet:"queue_ns" doc:"T_queue distribution"`
	Prefill             Dist     `parquet:"prefill_ns" doc:"prefill duration distribution"`
	Decode              Dist     `parquet:"decode_ns" doc:"decode duration distribution"`
	InputTokens         Dist     `parquet:"input_tokens" doc:"input length distribution (tokens, not ns)"`
	OutputTokens        Dist     `parquet:"output_tokens" doc:"output length distribution (tokens, not ns)"`
	SendLag             Dist     `parquet:"send_lag_ns" doc:"send lag S - P"`
	ReadLag             Dist     `parquet:"read_lag_ns" doc:"read lag rx_user_ns - rx_kernel_ns, one value per event with a kernel time"`
	Connect             Dist     `parquet:"connect_ns" doc:"TCP connect durations of the requests that opened a connection"`
	ConnWait            Dist     `parquet:"conn_wait_ns" doc:"time each request waited for a connection (0 when an idle one was there)"`
	SynRetrans          int64    `parquet:"syn_retrans" doc:"SYN retransmissions of the stage's new connections: each a SYN the server's full accept queue dropped"`
	ConnCapped          int64    `parquet:"conn_capped" doc:"requests that waited at the client's connection cap (capture --max-connections)"`
	PrefillPerTokenNs   *float64 `parquet:"prefill_per_token_ns,optional" doc:"T_prefill per input token used by the decomposition; null without a decomposition"`
	DecompositionSource string   `parquet:"decomposition_source,dict" doc:"server, histograms, fit or empty"`
	PlannedRate         *float64 `parquet:"planned_rate,optional" doc:"the schedule's own send rate: (planned sends - 1) / (last P - first P); a Poisson or trace stage's sample differs from target_rate; null with fewer than two planned sends"`
	IssuedRate          *float64 `parquet:"issued_rate,optional" doc:"requests begun per second: (requests - 1) / (last send_start_ns - first send_start_ns). What a client that counts a request when it starts, before it has a connection (vegeta), calls its rate; achieved_rate counts writes; null with fewer than two requests"`
	RateFidelity        *float64 `parquet:"rate_fidelity,optional" doc:"achieved_rate / planned_rate (open loop); 1 for closed loop. achieved_rate = (sends - 1) / (last S - first S); null (open loop) when achieved_rate or planned_rate is"`
	ExactShare          *float64 `parquet:"exact_share,optional" doc:"share of events with an exact time: a packet-tap time, or an exact kernel timestamp; null without events"`
	TapShare            *float64 `parquet:"tap_share,optional" doc:"share of events timed by the packet tap; null without events"`
	UnboundedShare      *float64 `parquet:"unbounded_share,optional" doc:"share of events with no lower bound but the send: no exact kernel or tap time and no rx_after_ns (no socket read gave one: stamps taken after decoding, or a read the framing did not map); null without events"`
	WorkerRhoMax        *float64 `parquet:"worker_rho_max,optional" doc:"largest worker utilisation: (user + sys CPU time) / wall time; null without a worker row"`
	WorkerRho           string   `parquet:"worker_rho" doc:"JSON array of per-worker utilisation, by worker index"`
	GCPauseNs           int64    `parquet:"gc_pause_ns" doc:"total GC pause of all workers in the stage"`
	Workers             int32    `parquet:"workers" doc:"worker processes that took part"`
	UncertaintyNs       *int64   `parquet:"uncertainty_ns,optional" doc:"the widest bound (p_hi - p_lo) of any judged percentile: p50, p90 and p99 of TTFT, TPOT, ITL, E2E and NTPOT; null without a judged percentile (no ok request)"`
	UncertaintyFigure   string   `parquet:"uncertainty_figure" doc:"which percentile that is, e.g. ttft p99; empty without latencies"`
	ClientBound         bool     `parquet:"client_bound" doc:"latency uncertainty verdict: some judged percentile's bound is wider than max(bias.tolerance, bias.tolerance_share × the percentile), and not because the events have no lower bound (unbounded_share under 1%)"`
	ClientBoundReason   string   `parquet:"client_bound_reason" doc:"the figures whose bounds are too wide, with their widths; when unbounded_share is 1% or more (enough to move a p99), it says that those events have no lower bound and the stage is not client-bound: the instrument, not the client's load, is the limit. Empty when every bound is within tolerance"`
	LoadDelivered       bool     `parquet:"load_delivered" doc:"load verdict: sends followed the planned schedule: rate_fidelity within 2% of 1 (open loop) and send lag p99 <= max(1 ms, a tenth of the mean planned gap 1/planned_rate) (closed loop: 1 ms)"`
	LoadReason          string   `parquet:"load_reason" doc:"why not, with the figures and who waited: the client (pacer_lag_ns: its pacer and CPU; or its connection cap), or the server (conn_wait_ns: no connection to send on, because it accepted new ones too slowly, syn_retrans, or answered too slowly to free old ones); empty when delivered"`
	LoadBlame           string   `parquet:"load_blame,dict" doc:"who waited when the load was not delivered: missing (planned requests are not in the figures: a host's share was not sent, or parts or events are missing or damaged; see missing), client_cpu (the pacer or CPU, with a busy worker: more workers help), client (the pacer or CPU, workers not busy), client_cap (the client's connection cap), server_accept (the server accepted new connections too slowly), server_busy (every open connection carried an unanswered request), send (after a connection was ready), machine (the pacer or the send waited for a CPU of a saturated machine the client took little of: machine_busy >= 0.9 and client_cpus under DisturbShare of machine_cpus; a server blame on a co-located server and a saturated machine adds that the machine may be the limit); empty when delivered"`
	LateShareClient     *float64 `parquet:"late_share_client,optional" doc:"of the stage's total lateness (the sum of max(0, S - P) over its sent requests), the share spent before the worker began the request (pacer_lag_ns); the rest was waiting for a connection, connecting and writing; null when no request was late"`
	WorkersForRhoHalf   int32    `parquet:"workers_for_rho_half" doc:"workers that would bring rho under 0.5 at this load: ceil(sum of the workers' rho / 0.5); advice only where the load verdict blames the client's CPU"`
	Saturated           bool     `parquet:"saturated" doc:"the run's saturation stage: of the non-warmup stages ordered by offered load, the first after the least-loaded where steady completions fall below 90% of steady sends (open loop) or grow less than 10% over the previous stage (closed loop), or TTFT p50 exceeds twice the least-loaded stage's and by more than 1 ms"`
	Overloaded          bool     `parquet:"overloaded" doc:"the server fell behind this stage's offered load and its queue grew through the stage (open loop): the median TTFT of the last third of its first tokens (by time) exceeds the first third's by more than 1.25 times and by more than 2% of the time between them. Its latencies have no steady distribution (they grow with the stage's length), so its percentiles get no sampling interval (the *_ci columns are null)"`
	OverloadedReason    string   `parquet:"overloaded_reason" doc:"the figures behind overloaded, e.g. median TTFT rose from 1.2 s to 9.8 s over 40 s; empty when not overloaded"`
	Missing             string   `parquet:"missing" doc:"the stage's planned requests that are not in its figures, by host: each host (directory, shard) that recorded fewer whole requests than it planned, with why (its capture did not finish; requests without all their events; parts missing, short or damaged, named) and how many of its planned requests are here, and each shard no host directory holds; empty when every host's share is here. When not empty the load is not delivered (load_blame missing) and the trust level is red"`
	ClockUncertaintyNs  int64    `parquet:"clock_uncertainty_ns" doc:"how far apart the clocks of the hosts whose requests are in the stage may be: the sum of the two largest kernel max errors (manifest clock.max_error_ns) among hosts that read different clocks; 0 on one host or hosts under one kernel. start_ns, end_ns, the send window and every rate over it compare times of different hosts and are uncertain by this much; latencies, each measured on one host, are not"`
	// Footprint: what the client took of a machine it shared with the server.
	TargetLocal           bool    `parquet:"target_local" doc:"the target shared a capture host with the client (manifest colocation.target_local): the server got only the CPU the client left. With several hosts the footprint columns below are those of the co-located host where the client took the largest share, else of the host where it took the largest share"`
	ClientCPUs            float64 `parquet:"client_cpus" doc:"CPUs the client used on that host, on average over the stage: its coordinator's and workers' user + sys CPU over the stage window (manifest stage_usage client_cpu_ns / wall_ns); for a capture without it, the sum of the workers' (user + sys) / wall (raw/workers.parquet) and the coordinator's"`
	MachineCPUs           int32   `parquet:"machine_cpus" doc:"online CPUs of that host (manifest stage_usage); 0 when unknown (a capture before stage_usage was recorded)"`
	MachineBusy           float64 `parquet:"machine_busy" doc:"share of that host's CPU time that was busy over the stage, every process counted: /proc/stat (user + nice + system + irq + softirq + steal) / all, read by the capture coordinator at the stage's boundaries; 0 when machine_cpus is 0 (unknown)"`
	ServerDisturbed       bool    `parquet:"server_disturbed" doc:"footprint verdict: the target was co-located, the machine was saturated (machine_busy >= MachineSaturated, 0.9) and the client used more than DisturbShare (0.25) of its CPUs: the server's latency may include the competition with the client (trust amber)"`
	ServerDisturbedReason string  `parquet:"server_disturbed_reason" doc:"the figures behind server_disturbed, e.g. wirebench used 1.30 of 2 CPUs while the machine was 100% busy; empty when not disturbed"`
	InflightPeak          int64   `parquet:"inflight_peak" doc:"the sum over workers of the most requests each had in flight at once in the stage"`
	ConnectionsOpened     int64   `parquet:"connections_opened" doc:"connections the workers opened in the stage (raw/workers.parquet conns_opened)"`
	ConnectionsPeak       int64   `parquet:"connections_peak" doc:"the sum over workers of the most connections each had open at once in the stage"`
	ConnectionsWarm       int64   `parquet:"connections_warm" doc:"the workers' warm pools (capture --connections each)"`
	ConnectionSpiral      bool    `parquet:"connection_spiral" doc:"connections_opened > 2 × inflight_peak + connections_warm: far more connections were opened than the requests in flight needed (Little's law), as when slow answers leave no connection idle and every new dial adds work for the server, or the server closes its connections (trust amber)"`
}

// Timeseries is one row of metrics/timeseries.parquet: one 100 ms bucket of one stage.
type Timeseries struct {
	Stage              int32  `parquet:"stage" doc:"stage index"`
	BucketNs           int64  `parquet:"bucket_ns,delta" doc:"start of the 100 ms bucket"`
	Sends              int64  `parquet:"sends" doc:"requests sent in the bucket"`
	Completions        int64  `parquet:"completions" doc:"requests that ended ok in the bucket"`
	Errors             int64  `parquet:"errors" doc:"requests that failed in the bucket"`
	Inflight           int64  `parquet:"inflight" doc:"requests in flight at the end of the bucket"`
	InputTokens        int64  `parquet:"input_tokens" doc:"input tokens of requests completed in the bucket"`
	OutputTokens       int64  `parquet:"output_tokens" doc:"output tokens received in the bucket (content chunks)"`
	TTFTP50Ns          *int64 `parquet:"ttft_p50_ns,optional" doc:"median TTFT of requests whose first token arrived in the bucket"`
	TTFTP99Ns          *int64 `parquet:"ttft_p99_ns,optional" doc:"p99 TTFT of those requests"`
	ClockUncertaintyNs int64  `parquet:"clock_uncertainty_ns" doc:"the stage's clock_uncertainty_ns: each host's events are put in buckets by its own clock, so an event may belong up to this much earlier or later"`
}

// String formats the distribution for messages, null figures as null.
func (d Dist) String() string {
	f := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return strconv.FormatInt(*p, 10)
	}
	return fmt.Sprintf("{count %d p50 %s [%s, %s] p90 %s [%s, %s] p95 %s p99 %s [%s, %s] p999 %s max %s mean %s}", d.Count,
		f(d.P50), f(d.P50Lo), f(d.P50Hi), f(d.P90), f(d.P90Lo), f(d.P90Hi), f(d.P95), f(d.P99), f(d.P99Lo), f(d.P99Hi), f(d.P999), f(d.Max), f(d.Mean))
}
