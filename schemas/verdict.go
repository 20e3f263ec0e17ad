package schemas

import "time"

// The limits behind the load verdict of metrics/stages.parquet (load_delivered, load_blame,
// rate_fidelity, workers_for_rho_half): aggregate judges with them, calibrate's faithful rule and
// the report's charts use the same.
const (
	// MaxRateError is how far achieved/planned may stray from 1: beyond run-to-run noise of a
	// pacer that is on time (the first and the last send's lateness alone move it).
	MaxRateError = 0.02
	// MinLateLimit and LateGapShare: lateness matters to the arrival process the server sees once
	// its p99 exceeds a tenth of the mean planned gap between sends (requests then start to
	// bunch and swap places), and never below 1 ms, under which no LLM server's behaviour turns.
	MinLateLimit = time.Millisecond
	LateGapShare = 0.1
	// ClientLateShare: the client is blamed for lateness it caused from this share on.
	ClientLateShare = 0.5
	// AdviceRho and TargetRho: advice (more workers) only when the client is blamed and a
	// worker's utilisation is above AdviceRho; the advice sizes the workers for TargetRho.
	AdviceRho = 0.7
	TargetRho = 0.5
	// MachineSaturated and DisturbShare make the footprint verdict (server_disturbed) and the
	// machine blame: a machine at least 90% busy over a stage had no CPU to spare, so what one
	// process used another waited for. A co-located client that took more than a quarter of the
	// machine's CPUs (half a CPU on 2) took a share the server could not do without; a client
	// that took less, and was late, was more likely kept waiting by the others than the cause.
	MachineSaturated = 0.9
	DisturbShare     = 0.25
)

// AchievedRate is the rate n sends made between the first (firstNs) and the last (lastNs):
// (n − 1) / (last − first), in requests per second; ok is false (no rate) for fewer than two
// sends or all at one instant.
func AchievedRate(n int64, firstNs, lastNs int64) (rate float64, ok bool) {
	if n < 2 || lastNs <= firstNs {
		return 0, false
	}
	return float64(n-1) / (float64(lastNs-firstNs) / 1e9), true
}
