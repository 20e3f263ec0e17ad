package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

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
		return "-"
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

// fmtPct formats a share in [0, 1] as a percentage: 99.5%.
func fmtPct(v float64) string {
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}

// fmtRatio formats a B/A ratio: 1.23×, or "-" when undefined.
func fmtRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return strconv.FormatFloat(*r, 'f', 2, 64) + "×"
}

// offered describes the stage's offered load: "10/s" open loop, "16 users" closed loop.
func offered(s *schemas.Stage) string {
	if s.Mode == "closed" || (s.TargetRate == 0 && s.Concurrency > 0) {
		return fmt.Sprintf("%d users", s.Concurrency)
	}
	return fmtRate(s.TargetRate) + "/s"
}

// stageTitle names a stage for people: `3 "r32"`.
func stageTitle(s *schemas.Stage) string {
	if s.Name == "" {
		return strconv.Itoa(int(s.Stage))
	}
	return fmt.Sprintf("%d %q", s.Stage, s.Name)
}

// advice says what to do about a client-bound stage: how many workers bring the worker
// utilisation under 0.5, and how many hosts when that is more than this host's CPUs. It is
// empty for a stage the client kept up with.
func advice(s *schemas.Stage, cpus int) string {
	if !s.ClientBound {
		return ""
	}
	var b strings.Builder
	reason := s.ClientBoundReason
	if reason == "" {
		reason = "a bias check failed"
	}
	fmt.Fprintf(&b, "Stage %s is client-bound (%s): its latencies may include the client's own delay.", stageTitle(s), reason)
	need := int(s.WorkersForRhoHalf)
	switch {
	case need > int(s.Workers) && cpus > 0 && need > cpus:
		hosts := (need + cpus - 1) / cpus
		fmt.Fprintf(&b, " It needs %d workers (now %d) to keep worker utilisation under 0.5, more than this host's %d CPUs: split the load over %d hosts with `wirebench capture --shard i/%d --start-at T`.", need, s.Workers, cpus, hosts, hosts)
	case need > int(s.Workers):
		fmt.Fprintf(&b, " Run it with --workers %d (now %d) to keep worker utilisation under 0.5, or split it over more hosts with `capture --shard`.", need, s.Workers)
	default:
		b.WriteString(" Worker utilisation is not the cause: check that other processes are not competing for these CPUs, or split the load over more hosts with `capture --shard`.")
	}
	if s.ReadLag.Count > 0 && s.ExactShare < 0.5 {
		fmt.Fprintf(&b, " Only %s of events carry an exact kernel timestamp: the others came in the same read as a later event (upper bound: the server wrote them back to back, or the client read too slowly to see them one by one) or have no kernel time (TLS, or a kernel without SO_TIMESTAMPING).", fmtPct(s.ExactShare))
	}
	return b.String()
}
