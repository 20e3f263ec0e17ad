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
// capacity (completions/s); the stage at clientBound (when >= 0) fails the bias checks.
type fixtureRun struct {
	id          string
	capacity    float64
	rates       []float64
	clientBound int
	missing     []string
}

var (
	fixtureA = fixtureRun{id: "run-a", capacity: 14, rates: []float64{1, 2, 4, 8, 12, 16, 20, 24}, clientBound: 7}
	fixtureB = fixtureRun{id: "run-b", capacity: 19, rates: []float64{1, 2, 4, 8, 12, 16, 20, 24}, clientBound: -1}
)

// dist returns a distribution with the given median and a tail that grows with load.
func dist(n int64, p50 float64, tail float64) schemas.Dist {
	return schemas.Dist{Count: n, P50: int64(p50), P90: int64(p50 * (1 + 0.4*tail)), P95: int64(p50 * (1 + 0.6*tail)),
		P99: int64(p50 * (1 + tail)), P999: int64(p50 * (1 + 1.5*tail)), Max: int64(p50 * (1 + 2*tail)), Mean: int64(p50 * (1 + 0.1*tail))}
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
		queueMs := 0.0
		if rho > 0.5 {
			queueMs = 25 * (rho - 0.5) / math.Max(0.05, 1-math.Min(rho, 0.97)) * (1 + 3*math.Max(0, rho-1))
		}
		prefillMs, decodeMs := 38.0*(1+0.2*rho), 900.0*(1+0.5*rho)
		ttft := (queueMs + prefillMs + 4) * 1e6
		tpot := 7.0e6 * (1 + 0.5*rho)
		n := int64(rate * 2)
		s := schemas.Stage{
			Stage: int32(i), Name: fmt.Sprintf("r%g", rate), Mode: "open", TargetRate: rate,
			StartNs: start + int64(i)*stageNs, EndNs: start + int64(i+1)*stageNs,
			Requests: n, Completed: int64(float64(n) * done / rate), AchievedRate: rate, CompletionRate: done,
			InputTPS: done * 512, OutputTPS: done * 128, TotalTPS: done * 640, SteadyOutputTPS: done * 128,
			InflightMean: done * (ttft + 127*tpot) / 1e9,
			TTFT:         dist(n, ttft, 0.5+rho), TPOT: dist(n, tpot, 0.2+rho/2), ITL: dist(n*127, tpot, 0.6+rho),
			ITLWeighted: dist(n*127, tpot, 0.5+rho), E2E: dist(n, ttft+127*tpot, 0.3+rho/2),
			NTPOT: dist(n, (ttft+127*tpot)/128, 0.3+rho/2), TTFTFromPlanned: dist(n, ttft*1.01, 0.5+rho),
			E2EFromPlanned: dist(n, ttft+127*tpot, 0.3+rho/2), Queue: dist(n, queueMs*1e6, 1),
			Prefill: dist(n, prefillMs*1e6, 0.2), Decode: dist(n, decodeMs*1e6, 0.2),
			InputTokens: dist(n, 512, 0.5), OutputTokens: dist(n, 128, 0), SendLag: dist(n, 60e3, 1),
			ReadLag: dist(n*127, 15e3, 1), PrefillPerTokenNs: prefillMs * 1e6 / 512, DecompositionSource: "fit",
			RateFidelity: 1, ExactShare: 0.998, WorkerRhoMax: 0.02 * rate, WorkerRho: "[0.1,0.1]",
			GCPauseNs: int64(rate * 1e5), Workers: 2, WorkersForRhoHalf: 1,
		}
		s.GoodputShare = math.Max(0, 1-math.Max(0, rho-0.7)*1.5)
		s.GoodputRate = s.GoodputShare * done
		if rho > 1 {
			s.Errors = int64(float64(n) * (rho - 1) / 4)
			s.ErrorsByKind = fmt.Sprintf(`{"timeout":%d}`, s.Errors)
		}
		if i == f.clientBound {
			s.RateFidelity, s.AchievedRate = 0.93, rate*0.93
			s.SendLag = dist(n, 900e3, 3.7)
			s.WorkerRhoMax, s.WorkersForRhoHalf = 0.86, 4
			s.ClientBound, s.ClientBoundReason = true, "rate fidelity 0.930 < 0.99; send lag p99 4.23ms > 1ms; worker rho 0.86 > 0.7"
		}
		stages = append(stages, s)
		for b := int64(0); b < stageNs/1e8; b++ {
			w := 1 + 0.15*math.Sin(float64(b)/2+float64(i))
			p50, p99 := int64(ttft*w), int64(ttft*w*(1.5+rho))
			ts = append(ts, schemas.Timeseries{Stage: int32(i), BucketNs: s.StartNs + b*1e8,
				Sends: int64(rate / 10 * 2 * float64(b%5) / 4), Completions: int64(math.Round(done / 10 * w)),
				Inflight: int64(s.InflightMean * w), InputTokens: int64(done * 51 * w), OutputTokens: int64(done * 13 * w),
				TTFTP50Ns: &p50, TTFTP99Ns: &p99})
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
