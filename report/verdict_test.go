package report

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// verdictStages returns two trusted stages, "a" and "b"; edit changes the second.
func verdictStages(edit func(*schemas.Stage)) []schemas.Stage {
	st := []schemas.Stage{
		{Stage: 0, Name: "a", Requests: 10, Completed: 10, UncertaintyNs: ptr[int64](41_000), UncertaintyFigure: "ttft p99", LoadDelivered: true,
			SendLag: schemas.Dist{Count: 10, P99: ptr[int64](300_000)}, Workers: 2},
		{Stage: 1, Name: "b", Requests: 10, Completed: 10, UncertaintyNs: ptr[int64](20_000), UncertaintyFigure: "itl p50", LoadDelivered: true,
			SendLag: schemas.Dist{Count: 10, P99: ptr[int64](120_000)}, Workers: 2},
	}
	if edit != nil {
		edit(&st[1])
	}
	return st
}

// stageC is a third stage, "c", changed by edit.
func stageC(edit func(*schemas.Stage)) schemas.Stage {
	s := verdictStages(edit)[1]
	s.Stage, s.Name = 2, "c"
	return s
}

const (
	trusted   = `client uncertainty ≤ 41.0µs on every p50, p90 and p99 of TTFT, TPOT, ITL, E2E and NTPOT (widest: ttft p99 of stage a)`
	serverWhy = "send lag p99 6.300 ms > 5.000 ms; the server was not accepting connections fast enough: 83% of the lateness was connecting (connect p99 12.000 ms over 40 new connections)"
	connWhy   = "send lag p99 6.300 ms > 5.000 ms; waiting for a connection or writing: 70% of the lateness came after the worker began the request"
	clientWhy = "sent at 22.32/s against 24/s planned (fidelity 0.930); the client: 91% of the lateness was before the worker began the request (pacer and CPU); worker utilisation 0.86: 4 workers would bring it under 0.5"
	boundWhy  = "itl p99 bound [38.000 ms, 40.200 ms] is 2.200 ms wide > 0.500 ms"
)

func late(reason string) func(*schemas.Stage) {
	blame := map[string]string{serverWhy: schemas.BlameServerAccept, connWhy: schemas.BlameSend, clientWhy: schemas.BlameClientCPU}[reason]
	return func(s *schemas.Stage) {
		s.LoadDelivered, s.LoadReason, s.LoadBlame, s.SendLag.P99 = false, reason, blame, ptr[int64](6_300_000)
	}
}

// unboundedWhy is the reason of a stage whose bounds are wide because its events have no lower
// bound, not because of the client.
const unboundedWhy = "not client-bound: 12.0% of events have no lower bound but the send (...): " + boundWhy

func noLowerBound(s *schemas.Stage) {
	s.ClientBoundReason, s.UnboundedShare, s.UncertaintyNs, s.UncertaintyFigure = unboundedWhy, ptr(0.12), ptr[int64](2_200_000), "itl p99"
}

const missingWhy = "runs/x: 40 requests recorded without all their events, missing or damaged files: runs/x/raw/chunks-w01-0000.parquet: corrupt parquet file, 120 of its 160 planned requests recorded"

func dataMissing(s *schemas.Stage) {
	s.LoadDelivered, s.LoadBlame, s.Missing, s.LoadReason = false, schemas.BlameMissing, missingWhy, "part of the planned load is missing: "+missingWhy
}

func clientBound(s *schemas.Stage) {
	s.ClientBound, s.ClientBoundReason, s.UncertaintyNs, s.UncertaintyFigure = true, boundWhy, ptr[int64](2_200_000), "itl p99"
}

func TestTrust(t *testing.T) {
	tests := []struct {
		name                string
		stages              []schemas.Stage
		wantLevel, wantSent string
	}{
		{"green", verdictStages(nil), schemas.TrustGreen,
			trusted + `; load sent as planned, p99 lateness ≤ 300µs (stage a).`},
		{"amber: the server", verdictStages(late(serverWhy)), schemas.TrustAmber,
			`stage b did not get its planned load (` + serverWhy + "); " + trusted + `; p99 lateness up to 6.30ms (stage b).`},
		{"amber: connections", verdictStages(late(connWhy)), schemas.TrustAmber,
			`stage b did not get its planned load (` + connWhy + "); " + trusted + `; p99 lateness up to 6.30ms (stage b).`},
		{"red: client-bound", verdictStages(clientBound), schemas.TrustRed,
			`stage b is client-bound (` + boundWhy + `); client uncertainty up to 2.20ms (itl p99 of stage b); load sent as planned, p99 lateness ≤ 300µs (stage a).`},
		{"red: the client was late", verdictStages(late(clientWhy)), schemas.TrustRed,
			`stage b did not get its planned load (` + clientWhy + "); " + trusted + `; p99 lateness up to 6.30ms (stage b).`},
		{"red: data missing", verdictStages(dataMissing), schemas.TrustRed,
			`stage b lacks data: its figures leave out requests it planned (` + missingWhy + "); " + trusted + `; p99 lateness up to 300µs (stage a).`},
		{"red over amber", append(verdictStages(late(serverWhy)), stageC(clientBound)), schemas.TrustRed,
			`stage b did not get its planned load (` + serverWhy + `); stage c is client-bound (` + boundWhy +
				`); client uncertainty up to 2.20ms (itl p99 of stage c); p99 lateness up to 6.30ms (stage b).`},
		{"amber: events without a lower bound", verdictStages(noLowerBound), schemas.TrustAmber,
			`stage b's latencies have wide bounds (` + unboundedWhy + `); client uncertainty up to 2.20ms (itl p99 of stage b); load sent as planned, p99 lateness ≤ 300µs (stage a).`},
		{"every request failed", verdictStages(func(s *schemas.Stage) {
			s.Completed, s.Errors, s.ErrorsByKind, s.UncertaintyNs, s.UncertaintyFigure = 0, 10, `{"http_status":3,"not_streamed":7}`, nil, ""
		}), schemas.TrustRed, `stage b has no ok request (10 failed: not_streamed 7, http_status 3), so it measured no latency; ` + trusted + `; load sent as planned, p99 lateness ≤ 300µs (stage a).`},
		{"no request", []schemas.Stage{{Name: "x", LoadDelivered: true}}, schemas.TrustRed, `stage x recorded no request, so it measured nothing; no latency to judge; no send to judge lateness by.`},
		{"empty", nil, schemas.TrustAmber, "no measured stage: nothing to judge."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			level, sentence := Trust(tt.stages)
			if level != tt.wantLevel || sentence != tt.wantSent {
				t.Errorf("Trust(%s) = %q, %q; want %q, %q", tt.name, level, sentence, tt.wantLevel, tt.wantSent)
			}
		})
	}
}

func TestAdvice(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*schemas.Stage)
		cpus      int
		want, not string // substrings the advice has and must not have
	}{
		{"trusted", nil, 2, "", "Stage"},
		{"no ok request", func(s *schemas.Stage) { s.Completed, s.ErrorsByKind = 0, `{"reset":10}` }, 2,
			`Stage b has no ok request (10 failed: reset 10), so it measured no latency.`, "client-bound"},
		{"client-bound only", clientBound, 2, `Stage b is client-bound (` + boundWhy + ")", "workers"},
		{"the server", late(serverWhy), 2, `Stage b did not get its planned load (` + serverWhy + ").", "--workers"},
		{"connections", late(connWhy), 2, "did not get its planned load", "--workers"},
		{"the client's CPU", func(s *schemas.Stage) { late(clientWhy)(s); s.WorkersForRhoHalf = 4 }, 8, "Run it with --workers 4 (now 2)", "hosts"},
		{"the client's CPU, too few CPUs", func(s *schemas.Stage) { late(clientWhy)(s); s.WorkersForRhoHalf = 4 }, 2, "split the load over 2 hosts", "--workers"},
		{"the client's pacer, idle workers", func(s *schemas.Stage) {
			late(clientWhy)(s)
			s.LoadReason, s.LoadBlame = strings.Split(clientWhy, "; worker")[0], schemas.BlameClient
		}, 2, "other processes are not competing", "hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := verdictStages(tt.edit)[1]
			got := advice(&s, stageTitle(s.Stage, s.Name, nil), tt.cpus)
			if (tt.want == "" && got != "") || !strings.Contains(got, tt.want) || (tt.not != "" && strings.Contains(got, tt.not)) {
				t.Errorf("advice(%s) = %q; want it to contain %q and not %q", tt.name, got, tt.want, tt.not)
			}
		})
	}
}

func TestFmtBound(t *testing.T) {
	tests := []struct {
		v, lo, hi int64
		want      string
	}{
		{12_345_000, 12_345_000, 12_345_000, "12.3ms"},                       // a point bound
		{12_345_000, 12_304_000, 12_345_000, "12.3ms"},                       // 41µs < half the last digit (100µs)
		{12_345_000, 12_295_000, 12_345_000, "12.3ms [-50.0µs, +0]"},         // exactly half: shown
		{7_000_000, 6_999_700, 7_000_300, "7.00ms"},                          // 300ns < 5µs
		{7_000_000, 6_990_000, 7_000_300, "7.00ms [-10.0µs, +300ns]"},        // the wider side counts
		{40_300_000, 37_700_000, 42_100_000, "40.3ms [-2.60ms, +1.80ms]"},    // a client-bound ITL p99
		{850, 849, 850, "850ns [-1ns, +0]"},                                  // below 1µs every ns shows
		{2_390_000_000, 2_389_990_000, 2_390_000_000, "2.39s"},               // 10µs < 5ms (half of 10ms)
		{2_390_000_000, 2_384_000_000, 2_390_000_000, "2.39s [-6.00ms, +0]"}, // 6ms >= 5ms
	}
	for _, tt := range tests {
		if got := fmtBound(tt.v, tt.lo, tt.hi); got != tt.want {
			t.Errorf("fmtBound(%d, %d, %d) = %q; want %q", tt.v, tt.lo, tt.hi, got, tt.want)
		}
	}
}

// TestHostsInQualityTable: a stage whose hosts read different clocks shows their uncertainty
// next to its rate; a stage missing a host's share is red (its figures leave out planned
// requests) with the host named, and the profile carries both.
func TestHostsInQualityTable(t *testing.T) {
	const gap = "shard 2/3 not captured by any host given: its 80 planned requests are missing"
	st := verdictStages(func(s *schemas.Stage) {
		s.Missing, s.LoadDelivered, s.LoadBlame = gap, false, schemas.BlameMissing
		s.LoadReason = "part of the planned load is missing: " + gap
	})
	st[0].ClockUncertaintyNs = 1_500_000
	rp := schemas.ProfileRun{}
	for i := range st {
		rp.Stages = append(rp.Stages, stageProfile(&st[i], "", 2))
	}
	rows := qualityTable(rp).Rows
	const rateCol, whyCol = 5, 11
	if got := rows[0].Cells[rateCol]; !strings.Contains(got, "hosts' clocks ±1.50ms") {
		t.Errorf("stage 0 rate cell %q; want the hosts' clock uncertainty ±1.50ms", got)
	}
	if got := rows[1].Cells[rateCol]; strings.Contains(got, "clocks") {
		t.Errorf("stage 1 rate cell %q; want no clock note on one clock", got)
	}
	if q := rp.Stages[1].Quality; q.Trust != schemas.TrustRed || q.Missing != gap || !strings.Contains(rows[1].Cells[whyCol], gap) {
		t.Errorf("stage 1: trust %q, missing %q, why cell %q; want red and the gap named", q.Trust, q.Missing, rows[1].Cells[whyCol])
	}
	if q := rp.Stages[0].Quality; q.ClockUncertaintyNs != 1_500_000 {
		t.Errorf("stage 0 profile clock_uncertainty_ns %d; want 1500000", q.ClockUncertaintyNs)
	}
}

// TestPercentileCell: a percentile with its 95% interval shows the interval in absolute values
// (it covers the client's bound); without one (n too small) the client's bound as offsets.
func TestPercentileCell(t *testing.T) {
	d := schemas.Dist{Count: 500, P50: ptr(int64(40_300_000)), P50Lo: ptr(int64(37_700_000)), P50Hi: ptr(int64(42_100_000)),
		P99: ptr(int64(90_000_000)), P99Lo: ptr(int64(87_000_000)), P99Hi: ptr(int64(90_000_000))}
	ci := schemas.CI{P50Lo: ptr(int64(36_100_000)), P50Hi: ptr(int64(44_000_000))}
	for _, tt := range []struct{ got, want string }{
		{p50(d, ci), "40.3ms [36.1ms, 44.0ms]"},
		{p99(d, ci), "90.0ms [-3.00ms, +0]"},                // p99 of 500: n too small, the bound alone
		{p50(d, schemas.CI{}), "40.3ms [-2.60ms, +1.80ms]"}, // no intervals at all (an older run)
		{p50(schemas.Dist{}, ci), "–"},
	} {
		if tt.got != tt.want {
			t.Errorf("cell %q; want %q", tt.got, tt.want)
		}
	}
}
