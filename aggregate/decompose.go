package aggregate

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// DecompositionAuto (or "") picks, per request, the first source that applies: server, then
// histograms, then fit.
const DecompositionAuto = "auto"

// Decompositions lists the values of Config.Decomposition.
var Decompositions = []string{DecompositionAuto, schemas.DecompositionServer, schemas.DecompositionHistograms, schemas.DecompositionFit}

// vLLM histogram series used for the histograms source.
const (
	histPrefillSum = "vllm:request_prefill_time_seconds_sum"
	histQueueSum   = "vllm:request_queue_time_seconds_sum"
	histPromptSum  = "vllm:request_prompt_tokens_sum"
	histPromptTot  = "vllm:prompt_tokens_total"
	histPrefillCnt = "vllm:request_prefill_time_seconds_count"
)

// checkDecomposition returns the decomposition mode of cfg ("" is auto) or an error naming the
// accepted values.
func checkDecomposition(mode string) (string, error) {
	if mode == "" {
		return DecompositionAuto, nil
	}
	if !slices.Contains(Decompositions, mode) {
		return "", fmt.Errorf("decomposition %q: want one of %s", mode, strings.Join(Decompositions, ", "))
	}
	return mode, nil
}

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

// histStage is what a stage's histogram deltas say about its prefill.
type histStage struct {
	meanPrefillNs float64 // P̄: mean prefill time of the stage's requests, ns
	meanIn        float64 // Ī: mean input tokens of the same requests
}

func (h histStage) ok() bool { return h.meanPrefillNs > 0 && h.meanIn > 0 }

// perTokNs is the stage's prefill time per input token, P̄ / Ī (ns).
func (h histStage) perTokNs() float64 {
	if !h.ok() {
		return 0
	}
	return h.meanPrefillNs / h.meanIn
}

// histStats derives P̄ and Ī of a stage from its histogram deltas d: P̄ = Δprefill_sum /
// Δprefill_count and Ī = Δprompt_tokens / Δprefill_count (prompt tokens from the
// vllm:request_prompt_tokens histogram or the vllm:prompt_tokens_total counter). Without a count
// series, Ī is the stage's mean input tokens as the client saw them (clientMeanIn) and
// P̄ = Δprefill_sum / Δprompt_tokens · Ī. The zero value (not ok) when the deltas do not say.
func histStats(d map[string]float64, clientMeanIn float64) histStage {
	if d == nil || d[histPrefillSum] <= 0 {
		return histStage{}
	}
	tokens, cnt := max(d[histPromptSum], d[histPromptTot]), d[histPrefillCnt]
	var h histStage
	switch {
	case cnt > 0:
		h.meanPrefillNs = d[histPrefillSum] * 1e9 / cnt
		h.meanIn = clientMeanIn
		if tokens > 0 {
			h.meanIn = tokens / cnt
		}
	case tokens > 0 && clientMeanIn > 0:
		h.meanIn = clientMeanIn
		h.meanPrefillNs = d[histPrefillSum] * 1e9 / tokens * clientMeanIn
	}
	if !h.ok() {
		return histStage{}
	}
	return h
}

// prefill returns the histograms source's prefill estimate (ns) of a request with in input
// tokens. A histogram delta gives only the stage mean P̄, so the mean is spread over the stage's
// requests by input length: with the slope b of the robust fit (when there is one),
// prefill = P̄ + b·(I − Ī), which keeps a fixed per-request cost (first decode step, scheduling)
// fixed; without it, prefill = P̄ · I / Ī (the prefill is taken as proportional to I). Both are
// exact when every request of the stage has the same I.
func (h histStage) prefill(in int32, b float64, slopeOK bool) int64 {
	if slopeOK {
		return int64(math.Round(h.meanPrefillNs + b*(float64(in)-h.meanIn)))
	}
	return int64(math.Round(h.meanPrefillNs * float64(in) / h.meanIn))
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
	return v[NearestRank(0.5, int64(len(v)))-1]
}

// fitDecompose fills the decomposition from the fit: T_queue = max(0, TTFT − a − b·I), and
// prefill = TTFT − T_queue (b·I plus the intercept a: transport and per-request overhead).
func fitDecompose(m *schemas.MetricRequest, a, b float64) {
	if m.InputTokens == nil {
		return
	}
	split(m, int64(math.Round(b*float64(*m.InputTokens))), int64(math.Round(a)), schemas.DecompositionFit)
}

// plan is the decomposition pass 2 applies: the mode, each stage's histogram statistics and
// the robust fit.
type plan struct {
	mode   string
	hist   map[int32]histStage
	fa, fb float64
	fitOK  bool
}

// decompose fills m's queue, prefill and decode in pass 2. Pass 1 filled them from server
// timings when the server sent some; a forced histograms or fit mode replaces those, a forced
// server mode leaves the other requests undecomposed.
func (p *plan) decompose(m *schemas.MetricRequest) {
	if m.DecompositionSource == schemas.DecompositionServer && p.mode != DecompositionAuto && p.mode != schemas.DecompositionServer {
		m.QueueNs, m.PrefillNs, m.DecodeNs, m.DecompositionSource = nil, nil, nil, ""
	}
	if m.DecompositionSource != "" || m.TTFTNs == nil || m.E2ENs == nil || m.InputTokens == nil {
		return
	}
	auto := p.mode == DecompositionAuto
	if h := p.hist[m.Stage]; (auto || p.mode == schemas.DecompositionHistograms) && h.ok() {
		split(m, h.prefill(*m.InputTokens, p.fb, p.fitOK && p.fb >= 0), 0, schemas.DecompositionHistograms)
		return
	}
	if (auto || p.mode == schemas.DecompositionFit) && p.fitOK {
		fitDecompose(m, p.fa, p.fb)
	}
}

// check returns an error when the forced source cannot decompose this run, naming what is
// missing: srvRows requests carried server timings, samples server metric rows were read,
// stages are the measured stages and least is the least-loaded one the fit used (nil when none
// had two TTFTs). A forced histograms mode warns about each measured stage without histograms.
func (p *plan) check(runs []*runDir, srvRows int64, samples int, stages []int32, least *stageAcc, w *warner) error {
	switch p.mode {
	case schemas.DecompositionServer:
		if srvRows == 0 {
			return fmt.Errorf("decomposition server: no request in %s has server timings (server_queue_ns, server_prefill_ns, server_decode_ns): the server does not report them; use histograms or fit", filepath.Join(runs[0].dir, schemas.KindOf[schemas.RawRequest]().Path))
		}
	case schemas.DecompositionHistograms:
		metrics := schemas.FileOf[schemas.ServerMetric](runs[0].dir)
		if samples == 0 {
			return fmt.Errorf("decomposition histograms: no server metrics in %s: set target.metrics_url so that capture scrapes the server's /metrics", metrics)
		}
		var without []int32
		for _, i := range stages {
			if !p.hist[i].ok() {
				without = append(without, i)
			}
		}
		if len(without) == len(stages) {
			return fmt.Errorf("decomposition histograms: %s: no stage has an increase of %s (with %s or a prompt-token series) between two of its scrapes", metrics, histPrefillSum, histPrefillCnt)
		}
		for _, i := range without {
			if err := w.warn(metrics, "stage %d has no prefill histogram increase between two of its scrapes: its requests are not decomposed", i); err != nil {
				return err
			}
		}
	case schemas.DecompositionFit:
		if least == nil {
			return fmt.Errorf("decomposition fit: no measured stage has two requests with a TTFT")
		}
		if !p.fitOK {
			return fmt.Errorf("decomposition fit: the least-loaded stage %d (%s) has a single input length: the fit TTFT ≈ a + b·I needs at least two", least.info.Index, least.info.Name)
		}
	}
	return nil
}
