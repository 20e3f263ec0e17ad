package search

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/schemas"
)

// ClearlyFailing returns why a step is already certain to fail (its misses so far exceed what
// the whole step may have), or "" while it may still pass. l is the capture's live progress,
// stage the step's stage index. The misses counted are a lower bound: failed requests, plus,
// with a TTFT SLO, half of the requests counted in the live TTFT histogram when their median
// is over the SLO (at least 4 of them). Requests still waiting are not counted: the live
// counts cannot tell one waiting for its first token from one streaming. It never stops a step
// whose sends are behind its schedule (by more than the counts' age): its load verdict decides.
func ClearlyFailing(l capture.Live, stage int32, rate, goodput float64, ttftSLO time.Duration) string {
	if l.Stage != stage || l.Planned == 0 || l.Elapsed <= 0 {
		return ""
	}
	// Progress comes once a second: the counts may be a second older than Elapsed.
	if float64(l.Sent) < 0.95*rate*(l.Elapsed-progressAge).Seconds()-1 {
		return "" // the load is not being delivered: leave it to the load verdict
	}
	misses := l.Errors
	var parts []string
	if l.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", l.Errors))
	}
	if ttftSLO > 0 && l.TTFTCount >= 4 && l.TTFTP50 > ttftSLO*101/100 {
		misses += l.TTFTCount / 2
		parts = append(parts, fmt.Sprintf("TTFT p50 %v of %d over the SLO %v", l.TTFTP50.Round(time.Millisecond), l.TTFTCount, ttftSLO))
	}
	allowed := (1 - goodput) * float64(l.Planned)
	if float64(misses) <= allowed {
		return ""
	}
	return fmt.Sprintf("already clearly failing after %v: at least %d of %d planned requests miss an SLO (%s), more than the %.0f a goodput of %g allows",
		l.Elapsed.Round(100*time.Millisecond), misses, l.Planned, strings.Join(parts, "; "), math.Floor(allowed), goodput)
}

// progressAge is how much older than Live.Elapsed its counts may be (workers report once a
// second; a little more for the coordinator's tick).
const progressAge = 1500 * time.Millisecond

// Judge gives a finished step its verdict from its stage row (metrics/stages.parquet): pass
// when goodput_share ≥ goodput, fail below; untrusted when the load or latency verdict is not
// green (the load not delivered, or the latencies client-bound or unbounded). An early stop
// (ClearlyFailing) is a fail whatever the load verdict says of the cut stage.
func Judge(st *schemas.Stage, goodput float64, earlyStop string) (verdict, reason string) {
	switch {
	case earlyStop != "":
		return schemas.StepFail, earlyStop
	case !st.LoadDelivered:
		return schemas.StepUntrusted, fmt.Sprintf("load verdict: not delivered (%s: %s)", st.LoadBlame, st.LoadReason)
	case st.ClientBound || st.ClientBoundReason != "":
		return schemas.StepUntrusted, "latency verdict: " + st.ClientBoundReason
	case st.GoodputShare == nil:
		return schemas.StepUntrusted, "no request recorded: no goodput to judge"
	case *st.GoodputShare >= goodput:
		return schemas.StepPass, fmt.Sprintf("goodput %.2f%% ≥ %g%%", 100**st.GoodputShare, 100*goodput)
	}
	return schemas.StepFail, fmt.Sprintf("goodput %.2f%% < %g%%", 100**st.GoodputShare, 100*goodput)
}

// Advice says what an untrusted step means and what to do about it.
func Advice(st *schemas.SearchStep) string {
	switch st.LoadBlame {
	case schemas.BlameClientCPU, schemas.BlameClient, schemas.BlameClientCap:
		return fmt.Sprintf("the client could not deliver %s req/s (%s): this is past this machine's faithful rate; give it more workers (capture --workers), more hosts, or a lower search.max_rate", Rate(st.Rate), st.LoadBlame)
	case schemas.BlameMissing:
		return fmt.Sprintf("step %d lacks data (planned requests are missing from its figures); rerun the search", st.Index)
	case "":
		return fmt.Sprintf("the latencies of step %d could not be measured within tolerance (%s); see docs/failure-modes.md", st.Index, st.LatencyNote)
	}
	return fmt.Sprintf("the server did not take %s req/s (%s): it neither passes nor fails the SLOs; the search stopped there", Rate(st.Rate), st.LoadBlame)
}

// countMisses counts the requests of one stage that missed each SLO (warmup left out).
func countMisses(rows []schemas.MetricRequest, stage int32, slo schemas.SLO) schemas.Misses {
	var m schemas.Misses
	over := func(v *int64, limit schemas.Duration) bool { return limit > 0 && v != nil && *v > int64(limit) }
	for i := range rows {
		r := &rows[i]
		if r.Stage != stage || r.Warmup {
			continue
		}
		if !r.OK {
			m.Failed++
			continue
		}
		m.TTFT += b2i(over(r.TTFTNs, slo.TTFT))
		m.TPOT += b2i(over(r.TPOTNs, slo.TPOT))
		m.ITL += b2i(over(r.ITLMaxNs, slo.ITL))
		m.NTPOT += b2i(over(r.NTPOTNs, slo.NTPOT))
		m.E2E += b2i(over(r.E2ENs, slo.E2E))
	}
	return m
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// LimitedBy names the SLO with the most misses, with the percentile the goodput puts it at
// ("TTFT p99"), or "failed requests"; "" when nothing missed.
func LimitedBy(m schemas.Misses, goodput float64) string {
	best, name := int64(0), ""
	for _, c := range []struct {
		n    int64
		name string
	}{{m.Failed, "failed requests"}, {m.TTFT, "TTFT"}, {m.TPOT, "TPOT"}, {m.ITL, "ITL"}, {m.NTPOT, "NTPOT"}, {m.E2E, "E2E"}} {
		if c.n > best {
			best, name = c.n, c.name
		}
	}
	if name == "" || name == "failed requests" {
		return name
	}
	return fmt.Sprintf("%s p%g", name, round4(100*goodput))
}
