package calibrate

import (
	"fmt"
	"strconv"

	"github.com/wirebench/wirebench/schemas"
)

// TTFTCoverage is how a stage's TTFT intervals did against the simulator's ground truth.
type TTFTCoverage struct {
	Requests int      // ok requests with a first content event the simulator stamped
	Covered  int      // of those, intervals that met the truth
	Early    int      // misses ending before the simulator began the write (never right)
	Late     int      // misses beginning after that write returned
	Widths   []int64  // ttft_hi_ns − ttft_lo_ns per request
	Misses   []string // the first few misses, described
}

// Truth is the simulator's ground truth of one event's arrival: on loopback the client's
// kernel stamps the segment inside the simulator's write (loopback xmit → netif_rx, in the
// writer's context), so the arrival lies in [Pre, Post], the simulator's time.Now() just
// before that write and just after it returned, however long the simulator was held up
// between its stamp and its write. Post is 0 when not reported (a whole response; with
// --coalesce-tail the events of the write that carried the x-sim comment): the truth is then
// only bounded below.
type Truth struct{ Pre, Post int64 }

// TruthOf is ch's truth; ok is false when the server reported no send time.
func TruthOf(ch *schemas.RawChunk) (tr Truth, ok bool) {
	if ch.ServerSentNs == 0 {
		return Truth{}, false
	}
	tr.Pre = ch.ServerSentNs
	if ch.ServerSentEndNs != 0 {
		tr.Post = ch.ServerSentEndNs
	}
	return tr, true
}

// Outside is how far t lies outside the truth's window widened by TruthAllowance: negative
// before it, positive after it, 0 inside.
func (tr Truth) Outside(t int64) int64 {
	switch a := int64(TruthAllowance); {
	case t < tr.Pre-a:
		return t - (tr.Pre - a)
	case tr.Post != 0 && t > tr.Post+a:
		return t - (tr.Post + a)
	}
	return 0
}

// CoverTTFT checks, per stage, every ok request's TTFT interval [ttft_lo_ns, ttft_hi_ns] from
// aggregate against the simulator's truth of its first content event as a TTFT from S
// (tx_tap_ns when the tap saw the request, else sent_ns): the interval must meet the window
// [Pre − S, Post − S], widened by TruthAllowance on both sides. An interval ending before the
// window is an early miss: the client put the arrival before the simulator began writing. One
// beginning after it is a late miss: the client put it after the write returned, which only a
// segment TCP held back (see docs/design/calibration.md) would make right.
func CoverTTFT(reqs []schemas.MetricRequest, chunks []schemas.RawChunk) map[int32]*TTFTCoverage {
	type first struct {
		index int32
		truth Truth
	}
	firsts := map[int64]first{}
	for i := range chunks {
		ch := &chunks[i]
		tr, ok := TruthOf(ch)
		if ch.Kind != schemas.ChunkContent || !ok {
			continue
		}
		if f, ok := firsts[ch.Seq]; !ok || ch.Index < f.index {
			firsts[ch.Seq] = first{ch.Index, tr}
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
		// The interval meets the window when its upper end is not before the window and its
		// lower end not after it.
		lo, hi := s+*r.TTFTLoNs, s+*r.TTFTHiNs
		switch early, late := f.truth.Outside(hi) < 0, f.truth.Outside(lo) > 0; {
		case early:
			c.Early++
		case late:
			c.Late++
		default:
			c.Covered++
			continue
		}
		if len(c.Misses) < 5 {
			c.Misses = append(c.Misses, fmt.Sprintf("seq %d: TTFT interval [%d, %d] ns misses the simulator's write [%d, %s] ns (± %v)",
				r.Seq, *r.TTFTLoNs, *r.TTFTHiNs, f.truth.Pre-s, postOf(f.truth, s), TruthAllowance))
		}
	}
	return out
}

// postOf formats the window's upper end as a TTFT from s: "∞" when not reported.
func postOf(tr Truth, s int64) string {
	if tr.Post == 0 {
		return "∞"
	}
	return strconv.FormatInt(tr.Post-s, 10)
}

// addBounds fills each rate's bounds coverage and widths from aggregate's metrics in dir, and
// the calibration's stamp figures from the raw chunks (addStamps).
func addBounds(c *schemas.Calibration, dir string, d *rawData) error {
	reqs, err := schemas.ReadFile[schemas.MetricRequest](schemas.FileOf[schemas.MetricRequest](dir))
	if err != nil {
		return fmt.Errorf("bounds coverage: %w", err)
	}
	stages, err := schemas.ReadFile[schemas.Stage](schemas.FileOf[schemas.Stage](dir))
	if err != nil {
		return fmt.Errorf("bounds coverage: %w", err)
	}
	addStamps(c, d.chunks)
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

// addStamps sets the calibration's stamp figures over the exact content events the simulator
// stamped: transit (kernel stamp − stamp before the write), write (stamp after the write −
// stamp before it) and how many kernel stamps lay outside their write (Truth.Outside).
func addStamps(c *schemas.Calibration, chunks []schemas.RawChunk) {
	var transit, write []int64
	c.StampOutside = 0
	for i := range chunks {
		ch := &chunks[i]
		tr, ok := TruthOf(ch)
		if ch.Kind != schemas.ChunkContent || ch.Quality != schemas.QualityExact || ch.RxKernelNs == 0 || !ok {
			continue
		}
		transit = append(transit, ch.RxKernelNs-tr.Pre)
		if tr.Post != 0 {
			write = append(write, tr.Post-tr.Pre)
		}
		if tr.Outside(ch.RxKernelNs) != 0 {
			c.StampOutside++
		}
	}
	c.StampTransit, c.StampWrite = quant(transit, false), quant(write, false)
}
