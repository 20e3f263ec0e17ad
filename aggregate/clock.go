package aggregate

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// DefaultClockTolerance is the largest clock max error a host of a run with several clocks may
// have before aggregate warns (--clock-tolerance): beyond it the stage windows and rates that
// compare the hosts' times are uncertain by more than the client's own error allows for (see
// bias.tolerance, 0.5 ms) and by more than a tenth of the gap between sends at 100 req/s.
const DefaultClockTolerance = time.Millisecond

// Times of one host compare exactly with each other: a latency is the difference of two times
// read from one clock. Times of two hosts differ by the error of both clocks, e_a − e_b, at most
// maxerror_a + maxerror_b (the kernel's bound on each, kept by the host's NTP, chrony or PTP
// daemon). Hosts under one running kernel (one boot id: containers, network namespaces) read one
// clock and differ by nothing.

// clockDomain names the clock the host read: its kernel's boot id, else the directory (a host
// without a clock reading is a clock of its own).
func (r *runDir) clockDomain() string {
	if c := r.manifest.Clock; c != nil && c.Error == "" && c.BootID != "" {
		return "boot " + c.BootID
	}
	return "dir " + r.dir
}

// maxErrorNs is the host's clock max error; ok is false when its manifest does not know it.
func (r *runDir) maxErrorNs() (ns int64, ok bool) {
	if c := r.manifest.Clock; c != nil && c.Error == "" {
		return c.MaxErrorNs, true
	}
	return 0, false
}

// clockUncertainty is how far apart the clocks of runs may be: the largest pairwise sum of max
// errors over hosts that read different clocks, that is the two largest clocks' max errors
// added (a clock's max error is the largest of its hosts' readings); 0 when every host read one
// clock. A host whose max error is unknown counts 0 (aggregate warns about it).
func clockUncertainty(runs []*runDir) int64 {
	byClock := map[string]int64{}
	for _, r := range runs {
		if r.shards == 0 {
			continue // no capture, no times
		}
		e, _ := r.maxErrorNs()
		d := r.clockDomain()
		byClock[d] = max(byClock[d], e)
	}
	if len(byClock) < 2 {
		return 0
	}
	errs := make([]int64, 0, len(byClock))
	for _, e := range byClock {
		errs = append(errs, e)
	}
	slices.Sort(errs)
	return errs[len(errs)-1] + errs[len(errs)-2]
}

// clocks returns the number of distinct clocks the runs read.
func clocks(runs []*runDir) int {
	seen := map[string]bool{}
	for _, r := range runs {
		if r.shards == 0 {
			continue
		}
		seen[r.clockDomain()] = true
	}
	return len(seen)
}

// checkClocks warns (with strict: fails) about every host whose clock cannot bound the times
// compared across hosts within tol: unsynchronised, a max error above tol, or unknown. A run
// whose hosts all read one clock compares nothing across clocks and is not judged.
func checkClocks(runs []*runDir, tol time.Duration, w *warner) error {
	if clocks(runs) < 2 {
		return nil
	}
	for _, r := range runs {
		if r.shards == 0 {
			continue
		}
		mpath := filepath.Join(r.dir, schemas.ManifestName)
		c := r.manifest.Clock
		var err error
		switch {
		case c == nil:
			err = w.warn(mpath, "host %s records no clock state: its clock's error is unknown and not in clock_uncertainty_ns", r.name())
		case c.Error != "":
			err = w.warn(mpath, "host %s could not read its clock state (%s): its clock's error is unknown and not in clock_uncertainty_ns", r.name(), c.Error)
		case !c.Synchronized:
			err = w.warn(mpath, "host %s's clock is not synchronised (adjtimex %s, status %#x): its times may be off by up to %v; stage windows and rates across hosts carry it", r.name(), c.State, c.Status, time.Duration(c.MaxErrorNs))
		case c.MaxErrorNs > int64(tol):
			err = w.warn(mpath, "host %s's clock max error %v exceeds the clock tolerance %v (--clock-tolerance): stage windows and rates across hosts carry it", r.name(), time.Duration(c.MaxErrorNs), tol)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stageClock is the clock uncertainty of the stage's cross-host figures: that of the hosts
// whose requests are in the stage.
func stageClock(runs []*runDir, stage int32) int64 {
	var in []*runDir
	for _, r := range runs {
		if r.recorded[stage] > 0 {
			in = append(in, r)
		}
	}
	return clockUncertainty(in)
}
