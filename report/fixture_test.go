package report

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// fixtureRun describes a hand-made run: a sweep over rates against a server with the given
// capacity (completions/s); the stage at clientBound (when >= 0) is client-bound and its load
// not delivered for the client's CPU; the stage at serverLate (when >= 0) did not get its load
// because the server accepted connections too slowly. Stages are -1 when none. With failedLast
// every request of the last stage failed: it has no latency figure at all.
type fixtureRun struct {
	id          string
	capacity    float64
	rates       []float64
	clientBound int
	serverLate  int
	failedLast  bool
	missing     []string
	name        func(i int, rate float64) string // stage i's name; nil: "r" and the rate (r12)
	queueMs     float64                          // scale of the queueing delay past rho 0.5; 0: 25
	lateShare   float64                          // the client's share of each stage's lateness; 0: 0.35
}

var (
	fixtureA = fixtureRun{id: "run-a", capacity: 14, rates: []float64{1, 2, 4, 8, 12, 16, 20, 24}, clientBound: 7, serverLate: -1}
	fixtureB = fixtureRun{id: "run-b", capacity: 19, rates: []float64{1, 2, 4, 8, 12, 16, 20, 24}, clientBound: -1, serverLate: 6}
	// fixtureDemo is like `make demo` at its widest: a sweep of 20 stages named sweep-00 ...
	// sweep-19 from 5 to 160 requests/s across a knee near 60/s, TTFT from about 40 ms at low
	// load to about 40 s at saturation; most of the little lateness of its stages, all sent as
	// planned, is the pacer's (as on a laptop).
	fixtureDemo = fixtureRun{id: "demo", capacity: 60, rates: geometric(5, 160, 20), clientBound: -1, serverLate: -1,
		name: func(i int, _ float64) string { return fmt.Sprintf("sweep-%02d", i) }, queueMs: 200, lateShare: 0.95}
	// fixtureDemo6 is `make demo` itself: six stages, 5 to 160 requests/s.
	fixtureDemo6 = fixtureRun{id: "demo-6", capacity: 60, rates: geometric(5, 160, 6), clientBound: -1, serverLate: -1,
		name: func(i int, _ float64) string { return fmt.Sprintf("sweep-%02d", i) }, queueMs: 200, lateShare: 0.95}
	// fixtureLongNames has 20 stages with long names that share no prefix (their bar labels must
	// stand upright), fixtureOne a single stage.
	fixtureLongNames = fixtureRun{id: "long-names", capacity: 60, rates: geometric(5, 160, 20), clientBound: 12, serverLate: 15,
		name: func(_ int, rate float64) string { return fmt.Sprintf("%.0frps-poisson-arrivals", rate) }}
	fixtureOne = fixtureRun{id: "one", capacity: 60, rates: []float64{10}, clientBound: -1, serverLate: -1}
)

// geometric returns n rates from lo to hi in a geometric progression, as a sweep plans them.
func geometric(lo, hi float64, n int) []float64 {
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = lo * math.Pow(hi/lo, float64(i)/float64(n-1))
	}
	return rs
}

// dist returns a distribution with the given median and a tail that grows with load; its
// bounds are points (lo = hi = value).
func dist(n int64, p50 float64, tail float64) schemas.Dist {
	at := func(f float64) *int64 { return ptr(int64(p50 * f)) }
	d := schemas.Dist{Count: n, P50: at(1), P90: at(1 + 0.4*tail), P95: at(1 + 0.6*tail),
		P99: at(1 + tail), P999: at(1 + 1.5*tail), Max: at(1 + 2*tail), Mean: at(1 + 0.1*tail)}
	return bounded(d, 0, 0)
}

// bounded sets the bounds of p50, p90 and p99 to [p - below, p + above], the p99 bound twice as
// wide and the p90 bound 1.5 times (the tail's events coalesce more).
func bounded(d schemas.Dist, below, above int64) schemas.Dist {
	d.P50Lo, d.P50Hi = ptr(*d.P50-below), ptr(*d.P50+above)
	d.P90Lo, d.P90Hi = ptr(*d.P90-below*3/2), ptr(*d.P90+above*3/2)
	d.P99Lo, d.P99Hi = ptr(*d.P99-2*below), ptr(*d.P99+2*above)
	return d
}

func ptr[T any](v T) *T { return &v }

// fmtMs formats ns as aggregate's verdict reasons do.
func fmtMs(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }

// clientBoundStage makes s client-bound (ITL p99 known only within 2.2 ms, few exact
// timestamps) with its load not delivered for the client's CPU (busy workers).
func clientBoundStage(s *schemas.Stage) {
	s.ITL.P99Lo, s.ITL.P99Hi = ptr(*s.ITL.P99-1_300_000), ptr(*s.ITL.P99+900_000)
	s.UncertaintyNs, s.UncertaintyFigure = ptr[int64](2_200_000), "itl p99"
	s.ExactShare = ptr(0.31)
	s.ClientBound = true
	s.ClientBoundReason = fmt.Sprintf("itl p99 bound [%s, %s] is 2.200 ms wide > 0.500 ms", fmtMs(*s.ITL.P99Lo), fmtMs(*s.ITL.P99Hi))
	s.RateFidelity, s.AchievedRate = ptr(0.93), ptr(*s.PlannedRate*0.93)
	s.SendLag = bounded(dist(s.SendLag.Count, 900e3, 3.7), 0, 20e3)
	s.WorkerRhoMax, s.WorkersForRhoHalf, s.LateShareClient = ptr(0.86), 4, ptr(0.91)
	s.LoadDelivered, s.LoadBlame = false, schemas.BlameClientCPU
	s.LoadReason = fmt.Sprintf("sent at %.4g/s against %.4g/s planned (fidelity 0.930); send lag p99 %s > %s; the client: 91%% of the lateness was before the worker began the request (pacer and CPU); worker utilisation 0.86: 4 workers would bring it under 0.5",
		*s.AchievedRate, *s.PlannedRate, fmtMs(*s.SendLag.P99), fmtMs(int64(0.1e9 / *s.PlannedRate)))
}

// serverLateStage makes s late because the server accepted its connections slowly.
func serverLateStage(s *schemas.Stage) {
	s.SendLag = bounded(dist(s.SendLag.Count, 2.1e6, 2), 0, 20e3)
	s.Connect = dist(40, 1.8e6, 5)
	s.LateShareClient = ptr(0.04)
	s.LoadDelivered, s.LoadBlame = false, schemas.BlameServerAccept
	s.LoadReason = fmt.Sprintf("send lag p99 %s > %s; the server was not accepting connections fast enough: 83%% of the lateness was connecting (connect p99 %s over 40 new connections)",
		fmtMs(*s.SendLag.P99), fmtMs(int64(0.1e9 / *s.PlannedRate)), fmtMs(*s.Connect.P99))
}

// failedStage makes every request of s fail (the server answered 503): no distribution but
// send lag and connect has a value, so their figures are null; its rates are measured zeros.
func failedStage(s *schemas.Stage) {
	s.Completed, s.Errors, s.ErrorsByKind = 0, s.Requests, fmt.Sprintf(`{"http_status":%d}`, s.Requests)
	for _, d := range []*schemas.Dist{&s.TTFT, &s.TPOT, &s.ITL, &s.ITLWeighted, &s.E2E, &s.NTPOT, &s.TTFTFromPlanned,
		&s.E2EFromPlanned, &s.Queue, &s.Prefill, &s.Decode, &s.InputTokens, &s.OutputTokens, &s.ReadLag} {
		*d = schemas.Dist{}
	}
	s.CompletionRate, s.InputTPS, s.OutputTPS, s.TotalTPS, s.SteadyOutputTPS = ptr(0.0), ptr(0.0), ptr(0.0), ptr(0.0), ptr(0.0)
	s.GoodputShare, s.GoodputRate = ptr(0.0), ptr(0.0)
	s.ExactShare, s.PrefillPerTokenNs, s.DecompositionSource = nil, nil, ""
	s.UncertaintyNs, s.UncertaintyFigure = nil, ""
}

// write writes manifest.json, metrics/stages.parquet and metrics/timeseries.parquet of the
// fixture under dir and returns the run directory.
func (f fixtureRun) write(t testing.TB, dir string) string {
	t.Helper()
	rd := filepath.Join(dir, f.id)
	const stageNs = int64(2 * time.Second)
	start := int64(1_750_000_000) * 1e9
	var stages []schemas.Stage
	var ts []schemas.Timeseries
	for i, rate := range f.rates {
		rho := math.Min(rate/f.capacity, 1.6)
		done := math.Min(rate, f.capacity*0.97)
		queueMs, scale := 0.0, f.queueMs
		if scale == 0 {
			scale = 25
		}
		if rho > 0.5 {
			queueMs = scale * (rho - 0.5) / math.Max(0.05, 1-math.Min(rho, 0.97)) * (1 + 3*math.Max(0, rho-1))
		}
		prefillMs, decodeMs := 38.0*(1+0.2*rho), 900.0*(1+0.5*rho)
		ttft := (queueMs + prefillMs + 4) * 1e6
		tpot := 7.0e6 * (1 + 0.5*rho)
		n := int64(rate * 2)
		name := fmt.Sprintf("r%g", rate)
		if f.name != nil {
			name = f.name(i, rate)
		}
		s := schemas.Stage{
			Stage: int32(i), Name: name, Mode: "open", TargetRate: rate,
			StartNs: start + int64(i)*stageNs, EndNs: start + int64(i+1)*stageNs,
			Requests: n, Completed: int64(float64(n) * done / rate), AchievedRate: ptr(rate), CompletionRate: ptr(done),
			InputTPS: ptr(done * 512), OutputTPS: ptr(done * 128), TotalTPS: ptr(done * 640), SteadyOutputTPS: ptr(done * 128),
			InflightMean: ptr(done * (ttft + 127*tpot) / 1e9),
			TTFT:         bounded(dist(n, ttft, 0.5+rho), 12e3, 0), TPOT: bounded(dist(n, tpot, 0.2+rho/2), 150, 150),
			ITL: bounded(dist(n*127, tpot, 0.6+rho), 8e3, 8e3), ITLWeighted: dist(n*127, tpot, 0.5+rho),
			E2E:   bounded(dist(n, ttft+127*tpot, 0.3+rho/2), 12e3, 0),
			NTPOT: bounded(dist(n, (ttft+127*tpot)/128, 0.3+rho/2), 94, 0), TTFTFromPlanned: dist(n, ttft*1.01, 0.5+rho),
			E2EFromPlanned: dist(n, ttft+127*tpot, 0.3+rho/2), Queue: dist(n, queueMs*1e6, 1),
			Prefill: dist(n, prefillMs*1e6, 0.2), Decode: dist(n, decodeMs*1e6, 0.2),
			InputTokens: dist(n, 512, 0.5), OutputTokens: dist(n, 128, 0), SendLag: bounded(dist(n, 60e3, 1), 0, 15e3),
			ReadLag: dist(n*127, 15e3, 1), Connect: dist(2, 150e3, 0.5), PrefillPerTokenNs: ptr(prefillMs * 1e6 / 512),
			DecompositionSource: "fit", PlannedRate: ptr(rate), RateFidelity: ptr(1.0), ExactShare: ptr(0.998), WorkerRhoMax: ptr(0.02 * rate),
			WorkerRho: "[0.1,0.1]", GCPauseNs: int64(rate * 1e5), Workers: 2, WorkersForRhoHalf: 1,
			UncertaintyNs: ptr[int64](32e3), UncertaintyFigure: "itl p99", LoadDelivered: true, LateShareClient: ptr(0.35),
		}
		if f.lateShare > 0 {
			s.LateShareClient = ptr(f.lateShare)
		}
		s.GoodputShare = ptr(math.Max(0, 1-math.Max(0, rho-0.7)*1.5))
		s.GoodputRate = ptr(*s.GoodputShare * done)
		if rho > 1 {
			s.Errors = int64(float64(n) * (rho - 1) / 4)
			s.ErrorsByKind = fmt.Sprintf(`{"timeout":%d}`, s.Errors)
		}
		if i == f.clientBound {
			clientBoundStage(&s)
		}
		if i == f.serverLate {
			serverLateStage(&s)
		}
		failed := f.failedLast && i == len(f.rates)-1
		if failed {
			failedStage(&s)
		}
		stages = append(stages, s)
		for b := int64(0); b < stageNs/1e8; b++ {
			w := 1 + 0.15*math.Sin(float64(b)/2+float64(i))
			b := schemas.Timeseries{Stage: int32(i), BucketNs: s.StartNs + b*1e8,
				Sends: int64(rate / 10 * 2 * float64(b%5) / 4), Completions: int64(math.Round(done / 10 * w)),
				Inflight: int64(*s.InflightMean * w), InputTokens: int64(done * 51 * w), OutputTokens: int64(done * 13 * w),
				TTFTP50Ns: ptr(int64(ttft * w)), TTFTP99Ns: ptr(int64(ttft * w * (1.5 + rho)))}
			if failed {
				b.Completions, b.InputTokens, b.OutputTokens, b.TTFTP50Ns, b.TTFTP99Ns = 0, 0, 0, nil, nil
			}
			ts = append(ts, b)
		}
	}
	// the first planned (knee) rule: the last stage whose completions still follow the load.
	for i := range stages {
		if stages[i].TargetRate >= f.capacity {
			stages[i-1].Saturated = true
			break
		}
	}
	p := schemas.Producer{Command: "test"}
	if err := schemas.WriteFile(filepath.Join(rd, "metrics", "stages.parquet"), stages, p); err != nil {
		t.Fatal(err)
	}
	if err := schemas.WriteFile(filepath.Join(rd, "metrics", "timeseries.parquet"), ts, p); err != nil {
		t.Fatal(err)
	}
	m := &schemas.Manifest{RunID: f.id, ToolVersion: "v0.0.0-test", Host: "bench-1", CPUs: 2, ClockSource: "CLOCK_REALTIME",
		Created: time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC), Status: schemas.StatusComplete, Missing: f.missing}
	if len(f.missing) > 0 {
		m.Status = schemas.StatusInterrupted
	}
	if err := m.Write(filepath.Join(rd, schemas.ManifestName)); err != nil {
		t.Fatal(err)
	}
	return rd
}
