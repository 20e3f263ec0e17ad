package aggregate

import (
	"math"
	"slices"

	"github.com/wirebench/wirebench/schemas"
)

// Decomposition sources, in order of preference.
const (
	SourceServer     = "server"     // per-request timings sent by the server
	SourceHistograms = "histograms" // per-stage deltas of the scraped server histograms
	SourceFit        = "fit"        // Theil–Sen fit TTFT ≈ a + b·I on the least-loaded stage
)

// vLLM histogram series used for the histograms source.
const (
	histPrefillSum = "vllm:request_prefill_time_seconds_sum"
	histQueueSum   = "vllm:request_queue_time_seconds_sum"
	histPromptSum  = "vllm:request_prompt_tokens_sum"
	histPromptTot  = "vllm:prompt_tokens_total"
	histPrefillCnt = "vllm:request_prefill_time_seconds_count"
)

// histDeltas returns, per stage, the increase of each named counter between the first and the
// last scrape of that stage, summed over label sets.
func histDeltas(samples []schemas.ServerMetric) map[int32]map[string]float64 {
	type key struct {
		stage        int32
		name, labels string
	}
	lo, hi := map[key]float64{}, map[key]float64{}
	for _, s := range samples {
		switch s.Name {
		case histPrefillSum, histQueueSum, histPromptSum, histPromptTot, histPrefillCnt:
		default:
			continue
		}
		k := key{s.Stage, s.Name, s.Labels}
		if v, ok := lo[k]; !ok || s.Value < v {
			lo[k] = s.Value
		}
		if v, ok := hi[k]; !ok || s.Value > v {
			hi[k] = s.Value
		}
	}
	out := map[int32]map[string]float64{}
	for k, h := range hi {
		if out[k.stage] == nil {
			out[k.stage] = map[string]float64{}
		}
		out[k.stage][k.name] += h - lo[k]
	}
	return out
}

// histPerToken returns T_prefill per input token (ns) of a stage from its histogram deltas:
// Δprefill_sum / Δprompt_tokens, or, without a prompt-token series, the mean prefill time
// Δprefill_sum / Δprefill_count divided by the stage's mean input tokens. 0 when unknown.
func histPerToken(d map[string]float64, meanInput float64) float64 {
	if d == nil || d[histPrefillSum] <= 0 {
		return 0
	}
	if t := max(d[histPromptSum], d[histPromptTot]); t > 0 {
		return d[histPrefillSum] * 1e9 / t
	}
	if d[histPrefillCnt] > 0 && meanInput > 0 {
		return d[histPrefillSum] * 1e9 / d[histPrefillCnt] / meanInput
	}
	return 0
}

// theilSen fits y ≈ a + b·x robustly: b is the median of the slopes (y_j − y_i)/(x_j − x_i) over
// all pairs with x_i ≠ x_j, and a the median of y_i − b·x_i (Theil–Sen; tolerant to up to 29% of
// outliers such as queueing spikes). ok is false without two distinct x values.
func theilSen(pts []fitPoint) (a, b float64, ok bool) {
	var slopes []float64
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if dx := pts[j].in - pts[i].in; dx != 0 {
				slopes = append(slopes, float64(pts[j].ttft-pts[i].ttft)/float64(dx))
			}
		}
	}
	if len(slopes) == 0 {
		return 0, 0, false
	}
	b = median(slopes)
	res := make([]float64, len(pts))
	for i, p := range pts {
		res[i] = float64(p.ttft) - b*float64(p.in)
	}
	return median(res), b, true
}

// median is the lower median (nearest rank 0.5) of v; it sorts v.
func median(v []float64) float64 {
	slices.Sort(v)
	return v[rank(0.5, int64(len(v)))-1]
}

// fitDecompose fills the decomposition from the fit: T_queue = max(0, TTFT − a − b·I), and
// prefill = TTFT − T_queue (b·I plus the intercept a: transport and per-request overhead).
func fitDecompose(m *schemas.MetricRequest, a, b float64) {
	if m.InputTokens == nil {
		return
	}
	split(m, int64(math.Round(b*float64(*m.InputTokens))), int64(math.Round(a)), SourceFit)
}
