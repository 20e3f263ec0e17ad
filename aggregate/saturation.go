package aggregate

import (
	"sort"

	"github.com/wirebench/wirebench/schemas"
)

// Saturation rule thresholds.
const (
	satFollow    = 0.9 // open loop: steady completions below 90% of steady sends
	satGain      = 1.1 // closed loop: completion rate grew less than 10% over the previous stage
	satLatency   = 2.0 // TTFT p50 more than twice the least-loaded stage's ...
	satLatencyNs = 1e6 // ... and more than 1 ms above it
)

// saturation returns the index into rows of the run's saturation stage, or -1. The rule:
// non-warmup stages with requests, of the mode most stages have (open or closed), are ordered by
// offered load (target rate, or concurrency). The first stage is the low-load plateau. The
// saturation stage is the first later stage where
//
//   - completions stop following offered load: open loop, the completion rate over the middle 80%
//     of the send window is below 90% of the send rate over the same window; closed loop, the
//     completion rate grew by less than 10% over the previous stage's although more users sent;
//   - or latency leaves the plateau: TTFT p50 is more than twice the first stage's and more than
//     1 ms above it.
func saturation(rows []schemas.Stage, accs []*stageAcc) int {
	open, closed := 0, 0
	for _, a := range accs {
		if a.info.Mode == schemas.ModeClosed {
			closed++
		} else {
			open++
		}
	}
	mode := schemas.ModeOpen
	if closed > open {
		mode = schemas.ModeClosed
	}
	var cand []int
	for i, a := range accs {
		isClosed := a.info.Mode == schemas.ModeClosed
		if a.info.Warmup || rows[i].Completed == 0 || isClosed != (mode == schemas.ModeClosed) {
			continue
		}
		cand = append(cand, i)
	}
	load := func(i int) float64 {
		if mode == schemas.ModeClosed {
			return float64(rows[i].Concurrency)
		}
		return rows[i].TargetRate
	}
	sort.SliceStable(cand, func(x, y int) bool { return load(cand[x]) < load(cand[y]) })
	if len(cand) < 2 {
		return -1
	}
	base := rows[cand[0]]
	for k, i := range cand[1:] {
		r := rows[i]
		if mode == schemas.ModeOpen {
			if send, done, ok := accs[i].steadyRates(); ok && done < satFollow*send {
				return i
			}
		} else if prev := rows[cand[k]]; load(i) > load(cand[k]) && r.CompletionRate != nil && prev.CompletionRate != nil &&
			*r.CompletionRate < satGain**prev.CompletionRate {
			return i
		}
		if base.TTFT.Count > 0 && r.TTFT.Count > 0 {
			p, b := *r.TTFT.P50, *base.TTFT.P50
			if float64(p) > satLatency*float64(b) && float64(p-b) > satLatencyNs {
				return i
			}
		}
	}
	return -1
}
