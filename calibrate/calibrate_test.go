package calibrate

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

func TestSweepRates(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		steps  int
		factor float64
		want   []float64
		err    bool
	}{
		{"five geometric steps", 25, 400, 5, 0, []float64{25, 50, 100, 200, 400}, false},
		{"one step is the max", 10, 1000, 1, 0, []float64{1000}, false},
		{"min equals max", 50, 50, 4, 0, []float64{50}, false},
		{"three steps round to 4 digits", 10, 1000, 3, 0, []float64{10, 100, 1000}, false},
		{"factor 2 stops at max", 10, 100, 0, 2, []float64{10, 20, 40, 80}, false},
		{"factor reaching max exactly", 10, 90, 0, 3, []float64{10, 30, 90}, false},
		{"zero min", 0, 10, 3, 0, nil, true},
		{"max below min", 10, 5, 3, 0, nil, true},
		{"factor not above 1", 10, 100, 0, 1, nil, true},
		{"no steps", 10, 100, 0, 0, nil, true},
		{"too many steps", 1, 2, 100_000_000, 0, nil, true},
		{"factor too small for the range", 1, 1000, 0, 1.0000001, nil, true},
		{"256 steps at most", 1, 1000, 257, 0, nil, true},
	}
	for _, tt := range tests {
		got, err := sweepRates(tt.lo, tt.hi, tt.steps, tt.factor)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("%s: sweepRates(%g, %g, %d, %g) = (%v, %v); want (%v, error %v)", tt.name, tt.lo, tt.hi, tt.steps, tt.factor, got, err, tt.want, tt.err)
		}
	}
}

func TestJudgeAndFaithfulRate(t *testing.T) {
	ok := func(rate float64) schemas.CalibrationRate {
		return schemas.CalibrationRate{TargetRate: rate, Requests: 100, Fidelity: 1, TTFTErr: schemas.Quant{N: 100, P50: 20e3, P99: 200e3}}
	}
	with := func(r schemas.CalibrationRate, f func(*schemas.CalibrationRate)) schemas.CalibrationRate {
		f(&r)
		return r
	}
	tests := []struct {
		name  string
		rates []schemas.CalibrationRate
		want  float64
		bad   []string // substrings of Why, per rate ("" = faithful)
	}{
		{"all faithful: the highest", []schemas.CalibrationRate{ok(10), ok(20), ok(40)}, 40, []string{"", "", ""}},
		{"fidelity just under 98% fails",
			[]schemas.CalibrationRate{ok(10), with(ok(20), func(r *schemas.CalibrationRate) { r.Fidelity = 0.9799 }), ok(40)}, 10, []string{"", "fidelity", ""}},
		{"fidelity above 102% fails (bunched catch-up)",
			[]schemas.CalibrationRate{with(ok(10), func(r *schemas.CalibrationRate) { r.Fidelity = 1.042 })}, 0, []string{"bunched"}},
		{"fidelity exactly 102% passes", []schemas.CalibrationRate{with(ok(10), func(r *schemas.CalibrationRate) { r.Fidelity = 1.02 })}, 10, []string{""}},
		{"fidelity exactly 98% passes", []schemas.CalibrationRate{with(ok(10), func(r *schemas.CalibrationRate) { r.Fidelity = 0.98 })}, 10, []string{""}},
		{"TTFT error p99 of 1 ms fails", []schemas.CalibrationRate{ok(10), with(ok(20), func(r *schemas.CalibrationRate) { r.TTFTErr.P99 = int64(time.Millisecond) })}, 10, []string{"", "TTFT error p99"}},
		{"TTFT error p99 just under 1 ms passes", []schemas.CalibrationRate{with(ok(10), func(r *schemas.CalibrationRate) { r.TTFTErr.P99 = int64(time.Millisecond) - 1 })}, 10, []string{""}},
		{"a pass above a failure does not count", []schemas.CalibrationRate{with(ok(10), func(r *schemas.CalibrationRate) { r.Errors = 1 }), ok(20)}, 0, []string{"failed", ""}},
		{"no server send times", []schemas.CalibrationRate{with(ok(10), func(r *schemas.CalibrationRate) { r.TTFTErr = schemas.Quant{} })}, 0, []string{"no TTFT error sample"}},
		{"unsorted input", []schemas.CalibrationRate{ok(40), with(ok(20), func(r *schemas.CalibrationRate) { r.Fidelity = 0.5 }), ok(10)}, 10, []string{"", "fidelity", ""}},
	}
	for _, tt := range tests {
		for i := range tt.rates {
			judge(&tt.rates[i])
			r := tt.rates[i]
			if want := tt.bad[i]; r.Faithful != (want == "") || !strings.Contains(r.Why, want) {
				t.Errorf("%s: judge(rate %g) = (%v, %q); want faithful=%v, why containing %q", tt.name, r.TargetRate, r.Faithful, r.Why, want == "", want)
			}
		}
		if got := faithfulRate(tt.rates); got != tt.want {
			t.Errorf("%s: faithfulRate = %g; want %g", tt.name, got, tt.want)
		}
	}
}

func TestFitCPU(t *testing.T) {
	// Two workers, each idle at ρ 0.02, 50 µs of CPU per request: total CPU per second
	// = 0.04 + 50e-6 × rate.
	model := func(rate float64) schemas.CalibrationRate {
		return schemas.CalibrationRate{TargetRate: rate, AchievedRate: rate, Faithful: true, CPUPerSecond: 0.04 + 50e-6*rate}
	}
	rates := []schemas.CalibrationRate{model(100), model(200), model(400), model(800)}
	f := fitCPU(rates, 2)
	if math.Abs(f.IdleRho-0.02) > 1e-9 || math.Abs(f.CPUPerReqNs-50e3) > 1e-3 || f.Points != 4 {
		t.Fatalf("fitCPU = idle %g, %g ns/request, %d points; want 0.02, 50000, 4", f.IdleRho, f.CPUPerReqNs, f.Points)
	}
	if want := 0.98 / 50e-6; math.Abs(f.Mu-want) > 1e-6 {
		t.Errorf("fitCPU μ = %g; want %g", f.Mu, want)
	}
	// Unfaithful stages are left out while two faithful ones remain.
	broken := schemas.CalibrationRate{TargetRate: 1600, AchievedRate: 900, CPUPerSecond: 1.9}
	if g := fitCPU(append(slices.Clone(rates), broken), 2); math.Abs(g.CPUPerReqNs-50e3) > 1e-3 || g.Points != 4 {
		t.Errorf("fitCPU with an unfaithful stage = %g ns/request over %d points; want 50000 over 4", g.CPUPerReqNs, g.Points)
	}
	// One faithful stage among broken ones: that stage alone, no idle cost.
	one := []schemas.CalibrationRate{model(100), broken, {TargetRate: 3200, AchievedRate: 1000, CPUPerSecond: 1.95}}
	if g := fitCPU(one, 2); g.IdleRho != 0 || g.Points != 1 || math.Abs(g.CPUPerReqNs-450e3) > 1e-3 {
		t.Errorf("fitCPU(one faithful) = idle %g, %g ns/request, %d points; want 0, 450000 (0.045 CPU-s/s at 100/s), 1", g.IdleRho, g.CPUPerReqNs, g.Points)
	}
	// One point: no intercept, CPU per request.
	if g := fitCPU([]schemas.CalibrationRate{{AchievedRate: 100, CPUPerSecond: 0.01}}, 1); g.IdleRho != 0 || math.Abs(g.CPUPerReqNs-100e3) > 1e-3 {
		t.Errorf("fitCPU(one point) = idle %g, %g ns/request; want 0, 100000", g.IdleRho, g.CPUPerReqNs)
	}
	// A negative slope (noise) falls back to the median CPU per request.
	noisy := []schemas.CalibrationRate{{AchievedRate: 100, CPUPerSecond: 0.03, Faithful: true}, {AchievedRate: 200, CPUPerSecond: 0.02, Faithful: true}}
	if g := fitCPU(noisy, 1); g.IdleRho != 0 || !strings.Contains(g.Method, "median") || math.Abs(g.CPUPerReqNs-300e3) > 1e-3 {
		t.Errorf("fitCPU(negative slope) = idle %g, %g ns/request, %q; want 0, 300000 (median of 300 µs and 100 µs), median method", g.IdleRho, g.CPUPerReqNs, g.Method)
	}
	if g := fitCPU(nil, 2); g.Mu != 0 || g.Points != 0 {
		t.Errorf("fitCPU(nil) = %+v; want nothing fitted", g)
	}
}

func TestWorkersFor(t *testing.T) {
	// k = ceil(c·rate / (0.5 - idle)), c in CPU seconds per request.
	rows := []struct {
		fit  schemas.WorkerFit
		rate float64
		want int
	}{
		{schemas.WorkerFit{IdleRho: 0, CPUPerReqNs: 100e3}, 1000, 1},   // 0.1 / 0.5 = 0.2 → 1
		{schemas.WorkerFit{IdleRho: 0, CPUPerReqNs: 1e6}, 1000, 2},     // 1.0 / 0.5 = 2
		{schemas.WorkerFit{IdleRho: 0.1, CPUPerReqNs: 50e3}, 10000, 2}, // 0.5 / 0.4 = 1.25 → 2
		{schemas.WorkerFit{IdleRho: 0.5, CPUPerReqNs: 50e3}, 1000, 0},  // idle alone reaches 0.5
		{schemas.WorkerFit{}, 1000, 0},                                 // nothing fitted
		{schemas.WorkerFit{IdleRho: 0.02, CPUPerReqNs: 20e3}, 10, 1},   // tiny load: at least one worker
		{schemas.WorkerFit{IdleRho: 0, CPUPerReqNs: 25e3}, 40000, 2},   // 1.0 / 0.5 = 2 exactly
	}
	for _, r := range rows {
		if got := workersFor(r.fit, r.rate); got != r.want {
			t.Errorf("Fit{idle %g, %g ns}: workersFor(%g) = %d; want %d", r.fit.IdleRho, r.fit.CPUPerReqNs, r.rate, got, r.want)
		}
	}
}

func TestQuant(t *testing.T) {
	v := make([]int64, 0, 100)
	for i := range 100 {
		v = append(v, int64(i+1)) // 1..100
	}
	if q := quant(slices.Clone(v), false); q.N != 100 || q.P50 != 50 || q.P99 != 99 {
		t.Errorf("quant(1..100) = %+v; want {100 50 99}", q)
	}
	// abs: the p99 is of |v|, the median stays signed.
	w := []int64{-500, -1, 0, 1, 2}
	if q := quant(w, true); q.P50 != 0 || q.P99 != 500 {
		t.Errorf("quant(%v, abs) = %+v; want p50 0, p99 500", []int64{-500, -1, 0, 1, 2}, q)
	}
	if q := quant(nil, false); q.N != 0 {
		t.Errorf("quant(nil) = %+v; want empty", q)
	}
}

func TestAnalyse(t *testing.T) {
	const ms = int64(time.Millisecond)
	base := int64(1e18)
	d := &rawData{
		stages: []schemas.StageInfo{
			{Index: 0, Name: "warmup", Mode: schemas.ModeOpen, Rate: 5, Warmup: true},
			{Index: 1, Name: "rate-10", Mode: schemas.ModeOpen, Rate: 10},
		},
		workers: []schemas.Worker{
			{Worker: 0, Stage: 1, WallNs: 1e9, CPUUserNs: 30e6, CPUSysNs: 10e6},
			{Worker: 1, Stage: 1, WallNs: 1e9, CPUUserNs: 20e6, CPUSysNs: 0},
			{Worker: 0, Stage: 0, WallNs: 1e9, CPUUserNs: 900e6}, // warmup: ignored
		},
	}
	// Three requests 100 ms apart, sent 1 ms late; the warmup one is ignored.
	for i := range int64(3) {
		d.requests = append(d.requests, schemas.RawRequest{Seq: i, Stage: 1, PlannedNs: base + i*100*ms, SentNs: base + i*100*ms + ms})
	}
	d.requests = append(d.requests, schemas.RawRequest{Seq: 9, Stage: 0, Warmup: true, PlannedNs: base, SentNs: base + 50*ms})
	// Each request: 2 content chunks sent by the server at s and s+10ms; seen 2 ms and 3 ms
	// later (kernel), user 1 ms after kernel; then a [DONE].
	for i := range int64(3) {
		s := base + i*100*ms + 20*ms
		d.chunks = append(d.chunks,
			schemas.RawChunk{Seq: i, Index: 0, Kind: "content", Quality: "exact", RxKernelNs: s + 2*ms, RxUserNs: s + 3*ms, ServerSentNs: s},
			schemas.RawChunk{Seq: i, Index: 1, Kind: "content", Quality: "upper_bound", RxKernelNs: s + 13*ms, RxUserNs: s + 14*ms, ServerSentNs: s + 10*ms},
			schemas.RawChunk{Seq: i, Index: 2, Kind: "done", Quality: "exact", RxKernelNs: s + 13*ms, RxUserNs: s + 14*ms})
	}
	d.chunks = append(d.chunks, schemas.RawChunk{Seq: 9, Kind: "content", RxUserNs: base + 900*ms, ServerSentNs: base}) // warmup
	got := analyse(d)
	if len(got) != 1 {
		t.Fatalf("analyse = %d rates; want 1 (warmup left out)", len(got))
	}
	r := got[0]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"requests", float64(r.Requests), 3},
		{"achieved rate", r.AchievedRate, 10},
		{"fidelity", r.Fidelity, 1},
		{"send lag p99", float64(r.SendLag.P99), float64(ms)},
		{"read lag p99", float64(r.ReadLag.P99), float64(ms)},
		{"TTFT error p50", float64(r.TTFTErr.P50), float64(2 * ms)},
		{"TTFT error n", float64(r.TTFTErr.N), 3},
		{"chunk error p99", float64(r.ChunkErr.P99), float64(3 * ms)},
		{"ITL error p50", float64(r.ITLErr.P50), float64(ms)},
		{"ITL error n", float64(r.ITLErr.N), 3},
		{"exact share", r.ExactShare, 0.5},
		{"worker rho max", r.WorkerRhoMax, 0.04},
		{"CPU per second", r.CPUPerSecond, 0.06},
		{"CPU per request", r.CPUPerReqNs, 6e6}, // 0.06 CPU-s per s / 10 per s
		{"tokens", float64(r.Tokens), 6},
		{"CPU per token", r.CPUPerTokNs, 3e6}, // 2 tokens per request
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-6*math.Max(1, math.Abs(c.want)) {
			t.Errorf("analyse: %s = %g; want %g", c.name, c.got, c.want)
		}
	}
	if r.Faithful {
		t.Errorf("analyse: TTFT error p99 %d ns >= 1 ms judged faithful", r.TTFTErr.P99)
	}
}

func TestWriteTable(t *testing.T) {
	c := &schemas.Calibration{Host: "h", CPUs: 2, SharedCPUs: true, Workers: 2, GOMAXPROCS: 2, Notes: []string{"client and server SHARE the CPUs"},
		Rates:        []schemas.CalibrationRate{{TargetRate: 10, AchievedRate: 10, Fidelity: 1, Faithful: true}, {TargetRate: 20, AchievedRate: 15, Fidelity: 0.75, Why: "fidelity 75.00% < 98.0%"}},
		FaithfulRate: 10, FaithfulRule: faithfulRule, Fit: schemas.WorkerFit{CPUPerReqNs: 50e3, Mu: 20000, Points: 1, Method: "m"}, ForRate: 1000, WorkersFor: 1}
	var b bytes.Buffer
	if err := WriteTable(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NOTE: client and server SHARE", "highest rate held faithfully: 10 requests/s", "not faithful at 20/s: fidelity 75.00%", "μ per worker ≈ 20000", "for 1000 requests/s at ρ = 0.5: 1 worker"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteTable output lacks %q:\n%s", want, b.String())
		}
	}
}
