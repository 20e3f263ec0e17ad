package main

import (
	"fmt"
	"math"
)

// drift asks whether the runs differ because the machine did: a run's percentile (its point)
// against how busy the machine was over its stage (schemas.Stage.MachineBusy: every process,
// the server's and the kernel's included, so a slower machine shows as a busier one for the same
// seeded work). It fits point = a + slope·busy by least squares over the runs with an interval
// and returns the correlation, the runs' spread about the fit over the intervals' (as spread),
// and how many intervals hold the pooled percentile moved along the fit to the run's busy share
// (truth + slope·(busy − mean busy)). A diagnostic, not the coverage: it says how much of the
// runs' differences the machine's state explains; the slope comes from the same runs.
type drift struct {
	r, spread float64
	hold, n   int
}

// machineDrift computes drift for runs with points, busy shares and intervals [los, his] (whose
// implied standard deviation is w, intervalSD) against the pooled percentile truth. ok is false
// with fewer than 3 runs, when the busy shares or the points are all equal (nothing to fit), or
// when w is 0.
func machineDrift(points, busy []float64, los, his []int64, w float64, truth int64) (d drift, ok bool) {
	n := len(points)
	if n < 3 {
		return d, false
	}
	var mp, mb float64
	for i := range n {
		mp += points[i]
		mb += busy[i]
	}
	mp, mb = mp/float64(n), mb/float64(n)
	var sbb, spp, sbp float64
	for i := range n {
		sbb += (busy[i] - mb) * (busy[i] - mb)
		spp += (points[i] - mp) * (points[i] - mp)
		sbp += (busy[i] - mb) * (points[i] - mp)
	}
	if sbb == 0 || spp == 0 || w == 0 {
		return d, false
	}
	slope := sbp / sbb
	d.r = sbp / math.Sqrt(sbb*spp)
	d.spread = math.Sqrt((spp-slope*sbp)/float64(n-2)) / w
	d.n = n
	for i := range n {
		t := float64(truth) + slope*(busy[i]-mb)
		if float64(los[i]) <= t && t <= float64(his[i]) {
			d.hold++
		}
	}
	return d, true
}

// String is the table's cell: the correlation, the coverage along the fit and the spread about it.
func (d drift) String() string {
	return fmt.Sprintf("r %.2f; %d/%d = %.0f%%; %.2f", d.r, d.hold, d.n, 100*float64(d.hold)/float64(d.n), d.spread)
}
