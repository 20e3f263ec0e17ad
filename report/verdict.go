package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// levelRank orders the levels from best to worst.
var levelRank = map[string]int{schemas.TrustGreen: 0, schemas.TrustAmber: 1, schemas.TrustRed: 2}

// clientLate reports whether the stage's load was not delivered and the load verdict blames
// the client (its pacer or CPU, or its connection cap).
func clientLate(s *schemas.Stage) bool {
	switch s.LoadBlame {
	case schemas.BlameClient, schemas.BlameClientCPU, schemas.BlameClientCap:
		return !s.LoadDelivered
	}
	return false
}

// cpuBound reports whether the load verdict blames the client's CPU (busy workers): the only
// case where more workers or hosts help.
func cpuBound(s *schemas.Stage) bool {
	return !s.LoadDelivered && s.LoadBlame == schemas.BlameClientCPU
}

// missingData reports whether some of the stage's planned requests are not in its figures: a
// host's share, a part or a request's events missing or damaged (schemas.Stage.Missing).
func missingData(s *schemas.Stage) bool {
	return !s.LoadDelivered && s.LoadBlame == schemas.BlameMissing
}

// stageLevel is one stage's trust level. A stage without an ok request is red: it measured no
// latency, so there is nothing its figures could be trusted for (whether the server or the
// client failed, its errors_by_kind say).
func stageLevel(s *schemas.Stage) string {
	switch {
	case s.ClientBound || clientLate(s) || missingData(s) || s.Completed == 0:
		return schemas.TrustRed
	case !s.LoadDelivered || unbounded(s) || s.ServerDisturbed || s.ConnectionSpiral:
		return schemas.TrustAmber
	}
	return schemas.TrustGreen
}

// unbounded reports whether the stage's latency bounds are too wide because its events have no
// lower bound, not because of the client (schemas.Stage.ClientBoundReason).
func unbounded(s *schemas.Stage) bool { return !s.ClientBound && s.ClientBoundReason != "" }

// footprintClauses say, for the trust sentence, where the client disturbed the server: by its
// CPU on a machine they shared (server_disturbed), or by opening far more connections than its
// requests in flight needed (connection_spiral).
func footprintClauses(s *schemas.Stage, label string) []string {
	var why []string
	if s.ServerDisturbed {
		why = append(why, fmt.Sprintf("server disturbed in stage %s (%s)", label, orNone(s.ServerDisturbedReason)))
	}
	if s.ConnectionSpiral {
		why = append(why, fmt.Sprintf("stage %s opened %d connections for at most %d requests in flight and %d warm (a connection spiral: slow answers left none idle and each dial added work for the server; or the server closed its connections)",
			label, s.ConnectionsOpened, s.InflightPeak, s.ConnectionsWarm))
	}
	return why
}

// Trust says in one sentence whether the figures of a run's stages can be trusted: level is
// red when a stage is client-bound, the client kept its load from being sent as planned,
// planned requests are missing from its figures (a host, a part, events: load_blame missing) or
// it has no ok request, amber when only the server, the connections or a shared machine did, or
// when the client disturbed the server (its CPU on their shared machine, a connection spiral),
// else green. The sentence names the stages and reasons behind a non-green level, then quotes
// the widest client uncertainty and the worst p99 lateness against the schedule.
func Trust(stages []schemas.Stage) (level, sentence string) {
	if len(stages) == 0 {
		return schemas.TrustAmber, "no measured stage: nothing to judge."
	}
	level = schemas.TrustGreen
	var why []string
	names := namesOf(stages)
	for i := range stages {
		s := &stages[i]
		label := stageTitle(s.Stage, s.Name, names)
		if l := stageLevel(s); levelRank[l] > levelRank[level] {
			level = l
		}
		if r := noOK(s.Requests, s.Completed, errorKinds(s.ErrorsByKind)); r != "" {
			why = append(why, fmt.Sprintf("stage %s %s", label, r))
		}
		if s.ClientBound {
			why = append(why, fmt.Sprintf("stage %s is client-bound (%s)", label, orNone(s.ClientBoundReason)))
		}
		if unbounded(s) {
			why = append(why, fmt.Sprintf("stage %s's latencies have wide bounds (%s)", label, s.ClientBoundReason))
		}
		switch {
		case missingData(s):
			why = append(why, fmt.Sprintf("stage %s lacks data: its figures leave out requests it planned (%s)", label, orNone(s.Missing)))
		case !s.LoadDelivered:
			why = append(why, fmt.Sprintf("stage %s did not get its planned load (%s)", label, orNone(s.LoadReason)))
		}
		why = append(why, footprintClauses(s, label)...)
	}
	why = append(why, uncertaintyClause(stages), latenessClause(stages))
	return level, strings.Join(why, "; ") + "."
}

// uncertaintyClause quotes the widest bound of any judged percentile over the stages.
func uncertaintyClause(stages []schemas.Stage) string {
	w, bound := -1, false
	for i := range stages {
		s := &stages[i]
		bound = bound || s.ClientBound || unbounded(s)
		if s.UncertaintyNs != nil && (w < 0 || *s.UncertaintyNs > *stages[w].UncertaintyNs) {
			w = i
		}
	}
	if w < 0 {
		return "no latency to judge"
	}
	s := &stages[w]
	label := stageTitle(s.Stage, s.Name, namesOf(stages))
	if bound {
		return fmt.Sprintf("client uncertainty up to %s (%s of stage %s)", fmtDur(*s.UncertaintyNs), s.UncertaintyFigure, label)
	}
	return fmt.Sprintf("client uncertainty ≤ %s on every p50, p90 and p99 of TTFT, TPOT, ITL, E2E and NTPOT (widest: %s of stage %s)",
		fmtDur(*s.UncertaintyNs), s.UncertaintyFigure, label)
}

// latenessClause quotes the worst send lag p99 (lateness against the schedule) over the stages.
func latenessClause(stages []schemas.Stage) string {
	w, delivered := -1, true
	for i := range stages {
		s := &stages[i]
		delivered = delivered && s.LoadDelivered
		if s.SendLag.Count > 0 && (w < 0 || *s.SendLag.P99 > *stages[w].SendLag.P99) {
			w = i
		}
	}
	if w < 0 {
		return "no send to judge lateness by"
	}
	worst := fmt.Sprintf("%s (stage %s)", fmtDur(*stages[w].SendLag.P99), stageTitle(stages[w].Stage, stages[w].Name, namesOf(stages)))
	if delivered {
		return "load sent as planned, p99 lateness ≤ " + worst
	}
	return "p99 lateness up to " + worst
}

// noOK says why a stage without an ok request measured nothing: it recorded no request, or
// every one failed (with the counts by kind); empty when some request ended ok.
func noOK(requests, completed int64, byKind map[string]int64) string {
	switch {
	case completed > 0:
		return ""
	case requests == 0:
		return "recorded no request, so it measured nothing"
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(byKind[b], byKind[a]), cmp.Compare(a, b)) })
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%s %d", k, byKind[k])
	}
	return fmt.Sprintf("has no ok request (%d failed: %s), so it measured no latency", requests, orNone(strings.Join(kinds, ", ")))
}

// errorKinds decodes a stage's errors_by_kind; a malformed object gives none (the error count
// is still in errors).
func errorKinds(js string) map[string]int64 {
	m := map[string]int64{}
	_ = json.Unmarshal([]byte(js), &m)
	return m
}

// orNone stands in for an empty verdict reason.
func orNone(reason string) string {
	if reason == "" {
		return "no reason recorded"
	}
	return reason
}

// levelMark is the coloured mark of a trust level in Markdown.
func levelMark(level string) string {
	switch level {
	case schemas.TrustRed:
		return "🔴"
	case schemas.TrustAmber:
		return "🟠"
	}
	return "🟢"
}
