package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// none stands for a figure over nothing (a distribution of no values, a rate without a
// window, a share of nothing: null in the files), never 0.
const none = "–"

// orNaN is a nullable figure as a float: NaN for null, which formats as none and is no point
// or bar in a chart.
func orNaN[T int64 | float64](p *T) float64 {
	if p == nil {
		return math.NaN()
	}
	return float64(*p)
}

// fmtDurOf formats a nullable duration: none for null.
func fmtDurOf(p *int64) string {
	if p == nil {
		return none
	}
	return fmtDur(*p)
}

// fmtDur formats nanoseconds with three significant digits in the largest fitting unit:
// 850ns, 12.3µs, 45.2ms, 1.23s. It is deterministic (golden files depend on it).
func fmtDur(ns int64) string {
	if ns == 0 {
		return "0"
	}
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	v := float64(ns)
	switch {
	case ns < 1_000:
		return sign + strconv.FormatInt(ns, 10) + "ns"
	case ns < 1_000_000:
		return sign + sig3(v/1e3) + "µs"
	case ns < 1_000_000_000:
		return sign + sig3(v/1e6) + "ms"
	default:
		return sign + sig3(v/1e9) + "s"
	}
}

// sig3 formats v >= 0 with three significant digits (at least the integer part).
func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// fmtRate formats a rate or a throughput: 0.500, 12.3, 4521.
func fmtRate(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return none
	}
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return sig3(v)
	}
}

// fmtPct formats a share in [0, 1] as a percentage: 99.5%; none for NaN.
func fmtPct(v float64) string {
	if math.IsNaN(v) {
		return none
	}
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}

// fmtRatio formats a B/A ratio: 1.23×, or none when undefined.
func fmtRatio(r *float64) string {
	if r == nil {
		return none
	}
	return strconv.FormatFloat(*r, 'f', 2, 64) + "×"
}

// offered describes a stage's offered load: "10.0/s" open loop, "16 users" closed loop.
func offered(mode string, targetRate float64, users int32) string {
	if mode == schemas.ModeClosed || (targetRate == 0 && users > 0) {
		return fmt.Sprintf("%d users", users)
	}
	return fmtRate(targetRate) + "/s"
}

// stageTitle names a stage for people, in sentences, tables and charts alike: its name
// ("sweep-04"); `3 "r8"` where another stage of the run has the same name (names are every
// stage name of the run); its index alone for a stage without a name.
func stageTitle(stage int32, name string, names []string) string {
	if name == "" {
		return strconv.Itoa(int(stage))
	}
	n := 0
	for _, o := range names {
		if o == name {
			n++
		}
	}
	if n > 1 {
		return fmt.Sprintf("%d %q", stage, name)
	}
	return name
}

// StageLabels returns the label of each stage as the report writes it (stageTitle), for other
// commands' output.
func StageLabels(stages []schemas.Stage) []string {
	names := namesOf(stages)
	labels := make([]string, len(stages))
	for i := range stages {
		labels[i] = stageTitle(stages[i].Stage, stages[i].Name, names)
	}
	return labels
}

// namesOf returns the stage names of a run's stages, for stageTitle.
func namesOf(stages []schemas.Stage) []string {
	names := make([]string, len(stages))
	for i := range stages {
		names[i] = stages[i].Name
	}
	return names
}

// profileNames returns the stage names of a profile's stages, for stageTitle.
func profileNames(stages []schemas.ProfileStage) []string {
	names := make([]string, len(stages))
	for i := range stages {
		names[i] = stages[i].Name
	}
	return names
}

// fmtBound formats a percentile with its bound, as offsets from the value: "40.3ms [-2.60ms,
// +1.80ms]" says the true percentile lies in [37.7ms, 42.1ms]. A bound that the value's three
// digits cannot show (both offsets under half its last digit: 55.7ms with [-12.0µs, +0]) is
// left out, so the brackets that remain are the ones that change how a figure reads.
func fmtBound(v, lo, hi int64) string {
	if 2*max(v-lo, hi-v) < lastDigit(v) {
		return fmtDur(v)
	}
	return fmtDur(v) + " [" + signed(lo-v) + ", " + signed(hi-v) + "]"
}

// fmtCI formats a percentile with its 95% interval in absolute values: "40.3ms [38.1ms,
// 42.9ms]". The interval covers the client's bound too, so it replaces fmtBound's offsets.
func fmtCI(v, lo, hi int64) string {
	return fmtDur(v) + " [" + fmtDur(lo) + ", " + fmtDur(hi) + "]"
}

// lastDigit is the value in nanoseconds of the last digit fmtDur prints for ns: 10µs for
// 45.2ms, 1ns below 1µs.
func lastDigit(ns int64) int64 {
	a := max(ns, -ns)
	if a < 1_000 {
		return 1
	}
	unit := int64(1_000)
	for unit < 1_000_000_000 && a >= unit*1_000 {
		unit *= 1_000
	}
	switch v := float64(a) / float64(unit); {
	case v < 10:
		return unit / 100
	case v < 100:
		return unit / 10
	}
	return unit
}

// signed formats a duration with its sign: +0, -41.0µs, +3.00µs.
func signed(ns int64) string {
	if ns < 0 {
		return fmtDur(ns)
	}
	return "+" + fmtDur(ns)
}

// advice says why a stage's figures need care, with the verdicts' reasons: no ok request (no
// figure at all), client-bound (the client's measurement error is wider than the tolerance),
// the load not sent as planned, or the server disturbed by a client on its machine.
// Only where the load verdict blames the client's CPU does it say how many workers or hosts
// would fix it. It is empty for a stage whose figures can be trusted. label is stageTitle's.
func advice(s *schemas.Stage, label string, cpus int) string {
	var b strings.Builder
	if r := noOK(s.Requests, s.Completed, errorKinds(s.ErrorsByKind)); r != "" {
		fmt.Fprintf(&b, "Stage %s %s.", label, r)
	}
	if s.ClientBound {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "Stage %s is client-bound (%s): the client's own measurement error is wider than the tolerance, so its latencies are known only within their bounds.", label, orNone(s.ClientBoundReason))
		if s.ReadLag.Count > 0 && s.ExactShare != nil && *s.ExactShare < 0.5 {
			fmt.Fprintf(&b, " Only %s of events carry an exact kernel timestamp: the others came in the same read as a later event (upper bound: the server wrote them back to back, or the client read too slowly to see them one by one) or have no kernel time (TLS, or a kernel without SO_TIMESTAMPING).", fmtPct(*s.ExactShare))
		}
	}
	if !s.LoadDelivered {
		if b.Len() > 0 {
			fmt.Fprintf(&b, " Its load was not sent as planned (%s).", orNone(s.LoadReason))
		} else {
			fmt.Fprintf(&b, "Stage %s did not get its planned load (%s).", label, orNone(s.LoadReason))
		}
		b.WriteString(clientAdvice(s, cpus))
	}
	if s.ServerDisturbed {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "Stage %s: the server was disturbed (%s). The client shared the server's machine and took CPU it needed: measure from another machine, or with fewer workers (--workers, --cpus), and compare.", label, orNone(s.ServerDisturbedReason))
	}
	return b.String()
}

// clientAdvice is what to do when the load verdict blames the client: more workers or hosts
// when its workers were busy (the CPU), else a look at what else runs on its CPUs.
func clientAdvice(s *schemas.Stage, cpus int) string {
	need := int(s.WorkersForRhoHalf)
	switch {
	case !clientLate(s):
		return ""
	case !cpuBound(s) || need <= int(s.Workers):
		return fmt.Sprintf(" Its workers were not all busy (ρ max %.2f): check that other processes are not competing for these CPUs.", orNaN(s.WorkerRhoMax))
	case cpus > 0 && need > cpus:
		hosts := (need + cpus - 1) / cpus
		return fmt.Sprintf(" It needs %d workers (now %d) to keep worker utilisation under %g, more than this host's %d CPUs: split the load over %d hosts with `wirebench capture --shard i/%d --start-at T`.", need, s.Workers, schemas.TargetRho, cpus, hosts, hosts)
	}
	return fmt.Sprintf(" Run it with --workers %d (now %d) to keep worker utilisation under %g.", need, s.Workers, schemas.TargetRho)
}
