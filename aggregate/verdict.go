package aggregate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// addLateness adds a request's lateness S − P (in [S − P, sent_end − P]) and splits it into
// the pacer's part (send_start − P, the worker's pacer and CPU), the wait for a connection
// (conn_wait_ns: for a dial or a busy connection; at the cap or not) and the rest (writing).
// Requests never written count for the planned rate only.
func (a *stageAcc) addLateness(s *reqState, m *schemas.MetricRequest) {
	a.firstPlanned = min(a.firstPlanned, s.plannedNs)
	a.lastPlanned = max(a.lastPlanned, s.plannedNs)
	a.firstStart = min(a.firstStart, s.sendStartNs)
	a.lastStart = max(a.lastStart, s.sendStartNs)
	if s.connectNs >= 0 {
		a.connect.add(s.connectNs)
	}
	a.synRetrans += int64(s.synRetrans)
	if s.connCapped {
		a.connCapped++
	}
	if s.unsent {
		return
	}
	a.connWait.add(s.connWaitNs)
	lag := m.SendLagNs
	a.sendLag.addB(lag, lag, s.sentEndNs-s.plannedNs, 1)
	late := max(lag, 0)
	pacer := min(max(m.PacerLagNs, 0), late)
	wait := min(s.connWaitNs, late-pacer)
	a.lateNs += late
	a.pacerLateNs += pacer
	if s.connCapped {
		a.capLateNs += wait
	} else {
		a.connLateNs += wait
	}
}

// planned sets planned_rate, the schedule's own rate over the stage's planned send times,
// issued_rate over the times the worker began each request (the same formula as achieved_rate,
// null with fewer than two), and rate_fidelity = achieved_rate / planned_rate (open loop; 1
// closed loop; null without both rates).
func (a *stageAcc) planned(st *schemas.Stage) {
	if r, ok := schemas.AchievedRate(a.requests, a.firstPlanned, a.lastPlanned); ok {
		st.PlannedRate = &r
	}
	if r, ok := schemas.AchievedRate(a.requests, a.firstStart, a.lastStart); ok {
		st.IssuedRate = &r
	}
	switch {
	case a.info.Mode == schemas.ModeClosed:
		st.RateFidelity = ptr(1.0)
	case st.PlannedRate != nil && st.AchievedRate != nil:
		st.RateFidelity = ptr(*st.AchievedRate / *st.PlannedRate)
	}
}

// judged are the latency distributions whose percentile bounds make the uncertainty verdict.
func judged(st *schemas.Stage) []struct {
	name string
	d    *schemas.Dist
} {
	return []struct {
		name string
		d    *schemas.Dist
	}{{"ttft", &st.TTFT}, {"tpot", &st.TPOT}, {"itl", &st.ITL}, {"e2e", &st.E2E}, {"ntpot", &st.NTPOT}}
}

// judgeLatency sets the latency-uncertainty verdict: uncertainty_ns is the widest bound of any
// judged percentile, and the stage is client-bound when some bound is wider than
// max(tolerance, tolerance_share × the percentile), unless 1% or more of its events (enough to
// move a p99) have no lower bound but the send: then no client, however idle, could have
// bounded them, and the reason says so instead.
func judgeLatency(st *schemas.Stage, bias schemas.Bias) {
	var why []string
	for _, j := range judged(st) {
		if j.d.Count == 0 {
			continue
		}
		// Count > 0: every figure is there.
		for _, p := range []struct {
			name      string
			v, lo, hi int64
		}{{"p50", *j.d.P50, *j.d.P50Lo, *j.d.P50Hi}, {"p90", *j.d.P90, *j.d.P90Lo, *j.d.P90Hi}, {"p99", *j.d.P99, *j.d.P99Lo, *j.d.P99Hi}} {
			w := p.hi - p.lo
			if st.UncertaintyNs == nil || w > *st.UncertaintyNs {
				st.UncertaintyNs, st.UncertaintyFigure = ptr(w), j.name+" "+p.name
			}
			tol := max(int64(bias.Tolerance), int64(math.Round(bias.ToleranceShare*float64(p.v))))
			if w > tol {
				wide, limit := fmtMsPair(w, tol)
				why = append(why, fmt.Sprintf("%s %s bound [%s, %s] is %s wide > %s", j.name, p.name, fmtMs(p.lo), fmtMs(p.hi), wide, limit))
			}
		}
	}
	st.ClientBound = len(why) > 0
	st.ClientBoundReason = strings.Join(why, "; ")
	if st.ClientBound && st.UnboundedShare != nil && *st.UnboundedShare >= maxUnboundedShare {
		st.ClientBound = false
		st.ClientBoundReason = fmt.Sprintf("not client-bound: %.1f%% of events have no lower bound but the send (no socket read bounds them: stamps taken after decoding, or reads the framing could not map), so their intervals start at the send: %s",
			100**st.UnboundedShare, st.ClientBoundReason)
	}
}

// maxUnboundedShare is the share of events without a lower bound from which a stage's wide
// bounds are put down to them rather than to the client: a p99 moves with 1% of the values.
const maxUnboundedShare = 0.01

// lateLimit is the send lag p99 above which lateness distorts the planned arrival process.
func lateLimit(st *schemas.Stage) int64 {
	if st.Mode == schemas.ModeClosed || st.PlannedRate == nil || *st.PlannedRate <= 0 {
		return int64(schemas.MinLateLimit)
	}
	return max(int64(schemas.MinLateLimit), int64(schemas.LateGapShare*1e9 / *st.PlannedRate))
}

// judgeLoad sets the load verdict: were the sends made as the schedule planned them, and when
// not, who waited (see schemas.Stage.LoadDelivered).
func (a *stageAcc) judgeLoad(st *schemas.Stage) {
	if a.lateNs > 0 {
		st.LateShareClient = ptr(float64(a.pacerLateNs) / float64(a.lateNs))
	}
	var why []string
	// An open-loop fidelity needs both rates, so both are there.
	if st.Mode != schemas.ModeClosed && st.RateFidelity != nil && math.Abs(*st.RateFidelity-1) > schemas.MaxRateError {
		over := ""
		if *st.RateFidelity < 1 {
			over = "; overloaded: the requests it could not send on time queued in the client and went out late, at the rate it kept"
		}
		why = append(why, fmt.Sprintf("sent at %s/s against %s/s planned (fidelity %.3f%s)", rateText(*st.AchievedRate), rateText(*st.PlannedRate), *st.RateFidelity, over))
	}
	if limit := lateLimit(st); st.SendLag.Count > 0 && *st.SendLag.P99 > limit {
		lag, lim := fmtMsPair(*st.SendLag.P99, limit)
		why = append(why, fmt.Sprintf("send lag p99 %s > %s", lag, lim))
	}
	st.LoadDelivered = len(why) == 0
	if st.LoadDelivered {
		return
	}
	var text string
	st.LoadBlame, text = a.blame(st)
	if (st.LoadBlame == schemas.BlameServerAccept || st.LoadBlame == schemas.BlameServerBusy) && sharedSaturated(st) {
		text += sharedClause(st)
	}
	st.LoadReason = strings.Join(append(why, text), "; ")
}

// blame says who waited: the client when most of the lateness came before the worker began
// the request (its pacer or CPU) or was spent at its own connection cap; the server when most
// of it was waiting for a connection otherwise (the server accepted new connections too slowly,
// or answered too slowly to free the open ones); the machine when the pacer or the send waited
// for a CPU of a saturated machine the client took little of (machineBusy). The stage's
// footprint columns are set before.
func (a *stageAcc) blame(st *schemas.Stage) (who, why string) {
	share := func(ns int64) float64 { return 100 * float64(ns) / float64(max(a.lateNs, 1)) }
	connectP99 := int64(0)
	if st.Connect.Count > 0 {
		connectP99 = *st.Connect.P99
	}
	switch {
	case st.LateShareClient != nil && *st.LateShareClient >= schemas.ClientLateShare && machineBusy(st):
		return schemas.BlameMachine, machineBlame(st, fmt.Sprintf("%.0f%% of the lateness was before the worker began the request (its pacer waiting for a CPU)", 100**st.LateShareClient))
	case st.LateShareClient != nil && *st.LateShareClient >= schemas.ClientLateShare:
		why = fmt.Sprintf("the client: %.0f%% of the lateness was before the worker began the request (pacer and CPU)", 100**st.LateShareClient)
		if st.WorkerRhoMax == nil || *st.WorkerRhoMax <= schemas.AdviceRho {
			return schemas.BlameClient, why
		}
		return schemas.BlameClientCPU, why + fmt.Sprintf("; worker utilisation %.2f: %d workers would bring it under %.1f", *st.WorkerRhoMax, st.WorkersForRhoHalf, schemas.TargetRho)
	case a.capLateNs*2 >= a.lateNs:
		return schemas.BlameClientCap, fmt.Sprintf("the client's connection cap: %.0f%% of the lateness was %d requests waiting at capture --max-connections", share(a.capLateNs), st.ConnCapped)
	case a.connLateNs*2 >= a.lateNs && (st.SynRetrans > 0 || connectP99 > int64(schemas.MinLateLimit)):
		return schemas.BlameServerAccept, fmt.Sprintf("the server was not accepting connections fast enough: %.0f%% of the lateness was waiting for a connection (connect p99 %s over %d new connections, %d SYN retransmissions: its accept queue overflowed)",
			share(a.connLateNs), fmtMs(connectP99), st.Connect.Count, st.SynRetrans)
	case a.connLateNs*2 >= a.lateNs:
		return schemas.BlameServerBusy, fmt.Sprintf("the server: %.0f%% of the lateness was waiting for a connection while every open one carried an unanswered request", share(a.connLateNs))
	case machineBusy(st):
		return schemas.BlameMachine, machineBlame(st, fmt.Sprintf("%.0f%% of the lateness came after a connection was ready (the sending goroutine waiting for a CPU)", share(a.lateNs-a.pacerLateNs-a.connLateNs-a.capLateNs)))
	default:
		return schemas.BlameSend, fmt.Sprintf("%.0f%% of the lateness came after a connection was ready: the sending goroutine waiting for a CPU (the client's or a busy shared machine's), or the write", share(a.lateNs-a.pacerLateNs-a.connLateNs-a.capLateNs))
	}
}

// fmtMs formats ns as milliseconds for people: three significant digits (271 ms, 8.42 ms,
// 0.500 ms), at most µs resolution.
func fmtMs(ns int64) string { return msDigits(ns, sigDecimals(ns)) }

// fmtMsPair formats a figure and the limit it is compared with as fmtMs does, with more
// decimals (up to µs) while they would read the same: "5.004 ms > 5.00 ms" needs them.
func fmtMsPair(a, b int64) (string, string) {
	da, db := sigDecimals(a), sigDecimals(b)
	for max(da, db) < 3 && msDigits(a, da) == msDigits(b, db) {
		da, db = da+1, db+1
	}
	return msDigits(a, da), msDigits(b, db)
}

// sigDecimals is the number of decimals that give ns in milliseconds three significant digits
// (none for 0).
func sigDecimals(ns int64) int {
	switch ms := math.Abs(float64(ns)) / 1e6; {
	case ns == 0 || ms >= 100:
		return 0
	case ms >= 10:
		return 1
	case ms >= 1:
		return 2
	}
	return 3
}

func msDigits(ns int64, decimals int) string {
	return strconv.FormatFloat(float64(ns)/1e6, 'f', decimals, 64) + " ms"
}

// rateText formats a request rate: 16000, 4067, 12.5 (never 1.6e+04).
func rateText(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
