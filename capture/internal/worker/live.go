package worker

import (
	"math"
	"sort"

	"github.com/wirebench/wirebench/schemas"
)

// Live histograms (capture --metrics-listen): each worker counts its finished requests into
// fixed buckets in its write loop, which already walks every result to write it (nothing is
// added to the send or read path), and sends each stage's cumulative counts with its progress
// line when they changed. The coordinator sums the workers' and serves them as Prometheus
// histograms. The bounds are the same everywhere, so that the sums are exact.
var (
	// LatencyBounds (TTFT, E2E): 1 ms to 10 min, ×1.5.
	LatencyBounds = expBounds(1e-3, 600, 1.5)
	// GapBounds (ITL): 100 µs to 20 s, ×1.5.
	GapBounds = expBounds(1e-4, 20, 1.5)
	// LagBounds (send lag: sent - planned): 10 µs to 60 s, ×1.5.
	LagBounds = expBounds(1e-5, 60, 1.5)
)

// expBounds returns upper bounds in seconds from lo, times factor, to the first at or past hi.
func expBounds(lo, hi, factor float64) []float64 {
	var b []float64
	for v := lo; ; v *= factor {
		b = append(b, math.Round(v*1e9)/1e9)
		if v >= hi {
			return b
		}
	}
}

// Hist is one live histogram: Counts[i] observations at most bounds[i] seconds and above
// bounds[i-1] (not cumulative; the last counts those above every bound), Sum their total.
type Hist struct {
	Counts []int64 `json:"n"`
	SumNs  int64   `json:"s"`
}

func (h *Hist) observe(bounds []float64, ns int64) {
	if h.Counts == nil {
		h.Counts = make([]int64, len(bounds)+1)
	}
	h.Counts[sort.SearchFloat64s(bounds, float64(ns)/1e9)]++
	h.SumNs += ns
}

// LiveStage is one stage's live figures of one worker, cumulative since the start.
type LiveStage struct {
	TTFT    Hist             `json:"ttft"`
	ITL     Hist             `json:"itl"`
	E2E     Hist             `json:"e2e"`
	SendLag Hist             `json:"send_lag"`
	Errors  map[string]int64 `json:"errors,omitempty"` // by error kind
}

// liveTally keeps the live figures per stage and which changed since they were last sent.
type liveTally struct {
	stages []LiveStage
	dirty  []bool
}

func newLiveTally(stages int) *liveTally {
	return &liveTally{stages: make([]LiveStage, stages), dirty: make([]bool, stages)}
}

// add counts one finished request; chunks are its events in arrival order.
func (l *liveTally) add(q *schemas.RawRequest, chunks []schemas.RawChunk) {
	s := &l.stages[q.Stage]
	l.dirty[q.Stage] = true
	if q.PlannedNs > 0 && q.SentNs > 0 {
		s.SendLag.observe(LagBounds, max(q.SentNs-q.PlannedNs, 0))
	}
	if q.ErrorKind != "" {
		if s.Errors == nil {
			s.Errors = map[string]int64{}
		}
		s.Errors[q.ErrorKind]++
		return
	}
	var prev int64
	for i := range chunks {
		c := &chunks[i]
		if c.Kind != schemas.ChunkContent {
			continue
		}
		t := c.Time()
		if prev == 0 {
			s.TTFT.observe(LatencyBounds, max(t-q.SentNs, 0))
		} else {
			s.ITL.observe(GapBounds, max(t-prev, 0))
		}
		prev = t
	}
	if q.DoneNs != nil {
		s.E2E.observe(LatencyBounds, max(*q.DoneNs-q.SentNs, 0))
	}
}

// take returns the stages that changed since the last call, by index.
func (l *liveTally) take() map[int32]*LiveStage {
	var out map[int32]*LiveStage
	for i, d := range l.dirty {
		if !d {
			continue
		}
		if out == nil {
			out = map[int32]*LiveStage{}
		}
		out[int32(i)] = &l.stages[i]
		l.dirty[i] = false
	}
	return out
}
