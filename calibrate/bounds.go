package calibrate

import (
	"fmt"

	"github.com/wirebench/wirebench/schemas"
)

// TTFTCoverage is how a stage's TTFT intervals did against the simulator's ground truth.
type TTFTCoverage struct {
	Requests int      // ok requests with a first content event the simulator stamped
	Covered  int      // of those, intervals that held the truth
	Widths   []int64  // ttft_hi_ns − ttft_lo_ns per request
	Misses   []string // the first few misses, described
}

// CoverTTFT checks, per stage, every ok request's TTFT interval [ttft_lo_ns, ttft_hi_ns] from
// aggregate against the simulator's send time of its first content event as a TTFT from S
// (tx_tap_ns when the tap saw the request, else sent_ns), allowing TransitAllowance below the
// interval.
func CoverTTFT(reqs []schemas.MetricRequest, chunks []schemas.RawChunk) map[int32]*TTFTCoverage {
	type first struct {
		index int32
		sent  int64
	}
	firsts := map[int64]first{}
	for i := range chunks {
		ch := &chunks[i]
		if ch.Kind != schemas.ChunkContent || ch.ServerSentNs == nil {
			continue
		}
		if f, ok := firsts[ch.Seq]; !ok || ch.Index < f.index {
			firsts[ch.Seq] = first{ch.Index, *ch.ServerSentNs}
		}
	}
	out := map[int32]*TTFTCoverage{}
	for i := range reqs {
		r := &reqs[i]
		f, ok := firsts[r.Seq]
		if !r.OK || !ok || r.TTFTLoNs == nil {
			continue
		}
		c := out[r.Stage]
		if c == nil {
			c = &TTFTCoverage{}
			out[r.Stage] = c
		}
		c.Requests++
		c.Widths = append(c.Widths, *r.TTFTHiNs-*r.TTFTLoNs)
		s := r.SentNs // S, as the metrics took it: the tap's departure when there is one
		if r.TxTapNs != nil {
			s = *r.TxTapNs
		}
		if truth := f.sent - s; truth >= *r.TTFTLoNs-int64(TransitAllowance) && truth <= *r.TTFTHiNs {
			c.Covered++
		} else if len(c.Misses) < 5 {
			c.Misses = append(c.Misses, fmt.Sprintf("seq %d: true TTFT %d ns not in [%d - %v, %d]", r.Seq, truth, *r.TTFTLoNs, TransitAllowance, *r.TTFTHiNs))
		}
	}
	return out
}

// addBounds fills each rate's bounds coverage and widths from aggregate's metrics in dir, and
// the calibration's stamp transit from the raw chunks.
func addBounds(c *schemas.Calibration, dir string, d *rawData) error {
	reqs, err := schemas.ReadFile[schemas.MetricRequest](schemas.FileOf[schemas.MetricRequest](dir))
	if err != nil {
		return fmt.Errorf("bounds coverage: %w", err)
	}
	stages, err := schemas.ReadFile[schemas.Stage](schemas.FileOf[schemas.Stage](dir))
	if err != nil {
		return fmt.Errorf("bounds coverage: %w", err)
	}
	var transit []int64
	for i := range d.chunks {
		ch := &d.chunks[i]
		if ch.Kind == schemas.ChunkContent && ch.Quality == schemas.QualityExact && ch.RxKernelNs != nil && ch.ServerSentNs != nil {
			transit = append(transit, *ch.RxKernelNs-*ch.ServerSentNs)
		}
	}
	c.StampTransit = quant(transit, false)
	cov := CoverTTFT(reqs, d.chunks)
	for i := range c.Rates {
		r := &c.Rates[i]
		if a := cov[r.Stage]; a != nil && a.Requests > 0 {
			r.BoundsCoverage = float64(a.Covered) / float64(a.Requests)
			r.TTFTBound = quant(a.Widths, false)
		}
		for _, st := range stages {
			if st.Stage == r.Stage {
				r.Uncertainty, r.ClientBound = st.UncertaintyNs, st.ClientBound
			}
		}
	}
	return nil
}
