package schemas

// CalibrationVersion is the version of calibration.json's layout; it changes when a field is
// renamed or removed (added fields keep it).
const CalibrationVersion = 1

// Calibration is the result of `wirebench calibrate`, written to DIR/calibration.json. Every
// time is in nanoseconds, every rate in requests per second.
type Calibration struct {
	Version             int               `json:"calibration_version" doc:"version of this layout (CalibrationVersion)"`
	Host                string            `json:"host" doc:"host name"`
	CPUs                int               `json:"cpus" doc:"CPUs this process may use"`
	SharedCPUs          bool              `json:"shared_cpus" doc:"client and simulator ran on the same CPUs"`
	SimCPU              int               `json:"sim_cpu" doc:"CPU the simulator was pinned to; -1 = not pinned"`
	WorkerCPUs          []int             `json:"worker_cpus" doc:"CPUs the workers were pinned to"`
	LoadAvg             string            `json:"load_avg" doc:"/proc/loadavg when the calibration started"`
	Workers             int               `json:"workers" doc:"worker processes"`
	GOMAXPROCS          int               `json:"gomaxprocs" doc:"per worker"`
	SingleProcess       bool              `json:"single_process" doc:"the naive client: one worker, GOMAXPROCS 1, user-space stamps after decoding"`
	Kernel              bool              `json:"kernel_timestamp" doc:"SO_TIMESTAMPING on"`
	Tap                 bool              `json:"tap" doc:"the packet tap timed the events"`
	InputTokens         int               `json:"input_tokens" doc:"prompt length of every request (whitespace tokens)"`
	OutputTokens        int               `json:"output_tokens" doc:"tokens of every response (ignore_eos)"`
	SimTTFTNs           int64             `json:"sim_ttft_ns" doc:"the simulator's fixed time to first token"`
	SimITLNs            int64             `json:"sim_itl_ns" doc:"the simulator's fixed inter-token gap"`
	SimStampLead        int64             `json:"sim_stamp_lead_ns" doc:"known delay the simulator added between its stamp and the write"`
	StageNs             int64             `json:"stage_ns" doc:"length of each rate stage"`
	Rates               []CalibrationRate `json:"rates" doc:"one per rate, in increasing order"`
	FaithfulRate        float64           `json:"faithful_rate" doc:"highest rate held faithfully, every lower rate too; 0 = none"`
	FaithfulRule        string            `json:"faithful_rule" doc:"the rule a rate is judged by, in words"`
	FaithfulCPUPerReqNs float64           `json:"faithful_client_cpu_per_request_ns" doc:"client_cpu_per_request_ns at the faithful rate: what measuring a request faithfully costs this machine; 0 = no faithful rate"`
	Fit                 WorkerFit         `json:"fit" doc:"the worker CPU model fitted over the sweep"`
	StampTransit        Quant             `json:"stamp_transit_ns" doc:"rx_kernel_ns − server_sent_ns (the simulator's stamp before its write) over exact content events: the loopback path from the write's start to the kernel's receive stamp, plus any time the simulator lost between its stamp and its write"`
	StampWrite          Quant             `json:"stamp_write_ns" doc:"server_sent_end_ns − server_sent_ns over the same events: how long the simulator's writes took, the width of the window that holds each arrival"`
	StampOutside        int               `json:"stamp_outside" doc:"of those events, kernel stamps outside their write's window [server_sent_ns, server_sent_end_ns] (± calibrate.TruthAllowance): 0 on loopback, where the kernel stamps a segment inside the sender's write, unless TCP held a segment back"`
	ForRate             float64           `json:"for_rate" doc:"the rate workers_for_rate is for"`
	WorkersFor          int               `json:"workers_for_rate" doc:"workers that keep ρ at 0.5 at for_rate; 0 = not reachable"`
	Notes               []string          `json:"notes,omitempty" doc:"what to keep in mind (shared CPUs, a target not started by calibrate)"`
}

// CalibrationRate is one stage of the calibration sweep.
type CalibrationRate struct {
	Stage             int32   `json:"stage" doc:"stage index in the run"`
	TargetRate        float64 `json:"target_rate" doc:"the rate asked for"`
	AchievedRate      float64 `json:"achieved_rate" doc:"(sends − 1) / (last S − first S), as aggregate"`
	Fidelity          float64 `json:"fidelity" doc:"achieved / target"`
	Requests          int64   `json:"requests" doc:"requests sent"`
	Errors            int64   `json:"errors" doc:"requests that failed"`
	SendLag           Quant   `json:"send_lag_ns" doc:"lateness S − P"`
	ReadLag           Quant   `json:"read_lag_ns" doc:"rx_user_ns − rx_kernel_ns, per event with a kernel time"`
	TTFTErr           Quant   `json:"ttft_error_ns" doc:"t_first − server_sent_first per request: how late the client saw the first token after the simulator stamped it (t = rx_kernel_ns, else rx_user_ns)."`
	ChunkErr          Quant   `json:"chunk_error_ns" doc:"t_j − server_sent_j for every content chunk"`
	ITLErr            Quant   `json:"itl_error_ns" doc:"(t_j − t_{j-1}) − (server_sent_j − server_sent_{j-1}): the measured gap minus the true gap; p99 of the absolute value"`
	ExactShare        float64 `json:"exact_share" doc:"share of content chunks with an exact kernel timestamp"`
	TapShare          float64 `json:"tap_share" doc:"share of content chunks timed by the packet tap (their errors use its times)"`
	WorkerRhoMax      float64 `json:"worker_rho_max" doc:"largest (user + sys CPU) / wall of a worker in the stage"`
	CPUPerSecond      float64 `json:"cpu_per_second" doc:"all workers' CPU seconds per wall second of the stage"`
	CPUPerReqNs       float64 `json:"cpu_per_request_ns" doc:"cpu_per_second / achieved_rate"`
	CPUPerTokNs       float64 `json:"cpu_per_token_ns" doc:"cpu_per_request_ns × requests / tokens"`
	ClientCPUPerReqNs float64 `json:"client_cpu_per_request_ns" doc:"all the client's CPU per request: (the workers' CPU seconds per wall second + the coordinator's, the packet tap's recorder included: manifest stage_usage) / achieved_rate; 0 when the coordinator's is unknown"`
	MachineBusy       float64 `json:"machine_busy" doc:"share of the machine's CPU time busy over the stage (manifest stage_usage; client and simulator included)"`
	Tokens            int64   `json:"tokens" doc:"output tokens received (usage, else content chunks)"`
	Faithful          bool    `json:"faithful" doc:"the rate was measured faithfully (faithful_rule)"`
	Why               string  `json:"why,omitempty" doc:"why not faithful"`
	BoundsCoverage    float64 `json:"bounds_coverage" doc:"share of ok requests whose TTFT interval, widened by 200 µs below (the stamp transit), holds the simulator's send time of the first content event"`
	TTFTBound         Quant   `json:"ttft_bound_ns" doc:"width ttft_hi_ns − ttft_lo_ns per request"`
	Uncertainty       *int64  `json:"uncertainty_ns" doc:"the stage's widest percentile bound (stages.parquet); null without latencies"`
	ClientBound       bool    `json:"client_bound" doc:"the stage's latency-uncertainty verdict"`
}

// Quant is a distribution summary: N values, median, 99th percentile (nearest rank).
type Quant struct {
	N   int   `json:"n" doc:"values"`
	P50 int64 `json:"p50" doc:"median (nearest rank)"`
	P99 int64 `json:"p99" doc:"99th percentile (nearest rank)"`
}

// WorkerFit is the linear CPU model of a worker, fitted over the sweep:
//
//	ρ_worker(λ_w) = IdleRho + CPUPerReqNs·1e-9 · λ_w
//
// where λ_w = λ / k is the rate one worker sends. It comes from ordinary least squares of the
// stages' total worker CPU per wall second against their achieved rate (intercept A = k ·
// IdleRho, slope = CPU seconds per request). Mu is the rate one worker sustains at ρ = 1:
// (1 - IdleRho) / slope.
type WorkerFit struct {
	IdleRho     float64 `json:"idle_rho" doc:"per worker, with no requests"`
	CPUPerReqNs float64 `json:"cpu_per_request_ns" doc:"marginal CPU per request"`
	Mu          float64 `json:"mu" doc:"requests per second one worker serves at ρ = 1"`
	Points      int     `json:"points" doc:"stages used"`
	Method      string  `json:"method" doc:"how the fit was made"`
}
