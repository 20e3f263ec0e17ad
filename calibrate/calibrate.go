package calibrate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/schemas"
)

// TruthAllowance widens the simulator's write window [server_sent_ns, server_sent_end_ns] on
// both sides when a time is checked against it (Truth.Outside). The window holds the kernel's
// receive stamp by construction: the kernel takes it inside the write, from the same
// CLOCK_REALTIME the simulator reads, so the window needs no allowance for transit or for the
// simulator being descheduled. What is left is that the three clock reads may be made on
// different CPUs; the kernel uses the TSC as its clock source only when the CPUs' TSCs are
// synchronised (else a slower, global one), which keeps them well within 1 µs of each other.
const TruthAllowance = time.Microsecond

// Faithful-rate thresholds.
const (
	// FaithfulFidelity bounds achieved/target on both sides, as the load verdict of a run does
	// (schemas.MaxRateError): below, sends were lost to lag; above, late sends were bunched up
	// to catch up (the send window shrank). Either way the schedule was not held.
	FaithfulFidelity = 1 - schemas.MaxRateError
	FaithfulTTFTErr  = time.Millisecond
)

// faithfulRule describes judge in words, for the JSON and the table.
var faithfulRule = fmt.Sprintf("fidelity within %.1f%%..%.1f%%, TTFT error p99 < %v, no failed request", FaithfulFidelity*100, (2-FaithfulFidelity)*100, FaithfulTTFTErr)

// judge decides whether one stage was measured faithfully and says why not.
func judge(r *schemas.CalibrationRate) {
	var why []string
	if r.Requests == 0 {
		why = append(why, "no request")
	}
	if r.Fidelity < FaithfulFidelity {
		why = append(why, fmt.Sprintf("fidelity %.2f%% < %.1f%%", r.Fidelity*100, FaithfulFidelity*100))
	} else if r.Fidelity > 2-FaithfulFidelity+1e-12 {
		why = append(why, fmt.Sprintf("fidelity %.2f%% > %.1f%% (late sends bunched up)", r.Fidelity*100, (2-FaithfulFidelity)*100))
	}
	if r.TTFTErr.N == 0 {
		why = append(why, "no TTFT error sample (no server send times)")
	} else if r.TTFTErr.P99 >= int64(FaithfulTTFTErr) {
		why = append(why, fmt.Sprintf("TTFT error p99 %s >= %v", fmtNs(float64(r.TTFTErr.P99)), FaithfulTTFTErr))
	}
	if r.Errors > 0 {
		why = append(why, fmt.Sprintf("%d failed requests", r.Errors))
	}
	r.Faithful, r.Why = len(why) == 0, strings.Join(why, "; ")
}

// faithfulRate returns the highest target rate such that it and every lower rate were faithful
// (rates sorted by target rate); 0 when the lowest already failed. A pass above a failure does
// not count: it is luck, not capacity.
// clientCPU sets the client's CPU per request, the coordinator's (the packet tap's recorder
// included) with the workers', and how busy the machine was, from the stage's usage.
func clientCPU(r *schemas.CalibrationRate, usage []schemas.StageUsage) {
	for _, u := range usage {
		if u.Stage != r.Stage || u.WallNs <= 0 || r.AchievedRate <= 0 {
			continue
		}
		perSecond := r.CPUPerSecond + float64(u.CoordinatorCPUNs)/float64(u.WallNs)
		if u.ClientCPUNs > 0 { // coordinator and workers, read at the same moments
			perSecond = float64(u.ClientCPUNs) / float64(u.WallNs)
		}
		r.ClientCPUPerReqNs = perSecond * 1e9 / r.AchievedRate
		if u.MachineTotalNs > 0 {
			r.MachineBusy = float64(u.MachineBusyNs) / float64(u.MachineTotalNs)
		}
	}
}

// faithfulCPU is the client's CPU per request at the faithful rate (0 when none).
func faithfulCPU(rates []schemas.CalibrationRate, faithful float64) float64 {
	for _, r := range rates {
		if faithful > 0 && r.TargetRate == faithful {
			return r.ClientCPUPerReqNs
		}
	}
	return 0
}

func faithfulRate(rates []schemas.CalibrationRate) float64 {
	s := slices.Clone(rates)
	slices.SortFunc(s, func(a, b schemas.CalibrationRate) int { return cmp.Compare(a.TargetRate, b.TargetRate) })
	best := 0.0
	for _, r := range s {
		if !r.Faithful {
			break
		}
		best = r.TargetRate
	}
	return best
}

// workersFor returns the smallest k with IdleRho + slope·rate/k <= TargetRho, or 0 when no k
// does (the idle cost alone reaches it, or nothing was fitted).
func workersFor(f schemas.WorkerFit, rate float64) int {
	if f.CPUPerReqNs <= 0 || f.IdleRho >= schemas.TargetRho || rate <= 0 {
		return 0
	}
	k := math.Ceil(f.CPUPerReqNs * 1e-9 * rate / (schemas.TargetRho - f.IdleRho))
	return max(1, int(k))
}

// fitCPU fits the worker CPU model over the faithful stages (every stage when none is faithful;
// one faithful stage gives CPU per request with no idle cost). k is the number of workers.
func fitCPU(rates []schemas.CalibrationRate, k int) schemas.WorkerFit {
	var xs, ys []float64
	for _, r := range rates {
		if r.Faithful && r.AchievedRate > 0 {
			xs, ys = append(xs, r.AchievedRate), append(ys, r.CPUPerSecond)
		}
	}
	method := "least squares over the faithful stages: total worker CPU per second = A + c × achieved rate"
	if len(xs) == 0 {
		xs, ys = xs[:0], ys[:0]
		for _, r := range rates {
			if r.AchievedRate > 0 {
				xs, ys = append(xs, r.AchievedRate), append(ys, r.CPUPerSecond)
			}
		}
		method = "least squares over every stage (none faithful): total worker CPU per second = A + c × achieved rate"
	}
	f := schemas.WorkerFit{Points: len(xs)}
	if len(xs) == 0 || k < 1 {
		f.Method = "no stage with requests: nothing to fit"
		return f
	}
	a, c := 0.0, 0.0
	if len(xs) >= 2 {
		a, c = ols(xs, ys)
	}
	if len(xs) < 2 || c <= 0 || a < 0 {
		// One point (a single faithful stage: overloaded stages would bend the line), or a slope
		// or intercept that noise made meaningless: no idle cost, the median CPU per request.
		per := make([]float64, len(xs))
		for i := range xs {
			per[i] = ys[i] / xs[i]
		}
		slices.Sort(per)
		a, c = 0, per[len(per)/2]
		method = "median CPU seconds per request over the stages (no usable linear fit): idle cost taken as 0"
	}
	f.Method = method
	f.IdleRho = a / float64(k)
	f.CPUPerReqNs = c * 1e9
	if c > 0 && f.IdleRho < 1 {
		f.Mu = (1 - f.IdleRho) / c
	}
	return f
}

// ols returns the intercept and slope of the least-squares line through (xs, ys).
func ols(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return sy / n, 0
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b
}

// sweepRates returns the geometric sweep from lo to hi: steps rates (lo·(hi/lo)^(i/(steps-1)))
// when factor is 0, else lo, lo·factor, ... up to hi (with a small tolerance for rounding).
func sweepRates(lo, hi float64, steps int, factor float64) ([]float64, error) {
	switch {
	case lo <= 0 || hi <= 0:
		return nil, fmt.Errorf("rates must be > 0 (min %g, max %g)", lo, hi)
	case hi < lo:
		return nil, fmt.Errorf("max rate %g is below min rate %g", hi, lo)
	case factor != 0 && factor <= 1:
		return nil, fmt.Errorf("geometric factor %g: want > 1", factor)
	case factor == 0 && (steps < 1 || steps > schemas.MaxSweepStages):
		return nil, fmt.Errorf("steps %d: want 1..%d", steps, schemas.MaxSweepStages)
	case factor > 1 && math.Log(hi/lo)/math.Log(factor) >= schemas.MaxSweepStages:
		return nil, fmt.Errorf("geometric factor %g from %g to %g: more than %d steps; want a larger factor", factor, lo, hi, schemas.MaxSweepStages)
	}
	var out []float64
	if factor > 0 {
		for r := lo; r <= hi*(1+1e-9); r *= factor {
			out = append(out, round4(r))
		}
		return out, nil
	}
	if steps == 1 || lo == hi {
		return []float64{round4(hi)}, nil
	}
	for _, r := range (schemas.Sweep{MinRate: lo, MaxRate: hi, Stages: steps, Scale: schemas.ScaleGeometric}).Rates() {
		out = append(out, round4(r))
	}
	return out, nil
}

// round4 keeps 4 significant digits, so that stage names and tables read 126, not 125.99.
func round4(x float64) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// rawData is what analyse reads of a run directory.
type rawData struct {
	stages   []schemas.StageInfo
	requests []schemas.RawRequest
	chunks   []schemas.RawChunk // grouped by seq, in event order within a request
	workers  []schemas.Worker
	usage    []schemas.StageUsage // the coordinator's CPU and the machine's, per stage
	tap      *aggregate.TapTimes
}

// tapRx returns the packet tap's arrival time of chunk c, when the tap saw it.
func (d *rawData) tapRx(c *schemas.RawChunk) (int64, bool) {
	if d.tap == nil {
		return 0, false
	}
	ns, ok := d.tap.Rx[[2]int64{c.Seq, int64(c.Index)}]
	return ns, ok
}

// analyse computes one Rate per non-warmup stage.
func analyse(d *rawData) []schemas.CalibrationRate {
	accs := map[int32]*stageAcc{}
	var order []int32
	for _, s := range d.stages {
		if s.Warmup || s.Mode != schemas.ModeOpen {
			continue
		}
		accs[s.Index] = &stageAcc{r: schemas.CalibrationRate{Stage: s.Index, TargetRate: s.Rate}}
		order = append(order, s.Index)
	}
	bySeq := addRequests(accs, d.requests)
	addChunks(accs, bySeq, d)
	addWorkers(accs, d.workers)
	out := make([]schemas.CalibrationRate, 0, len(order))
	for _, idx := range order {
		out = append(out, accs[idx].rate(d.usage))
	}
	slices.SortFunc(out, func(a, b schemas.CalibrationRate) int { return cmp.Compare(a.TargetRate, b.TargetRate) })
	return out
}

// stageAcc gathers what analyse reads of one stage.
type stageAcc struct {
	r                 schemas.CalibrationRate
	sent              []int64
	lag, rlag, ttft   []int64
	chunk, itl        []int64
	content, exact    int64
	tapped            int64
	cpu, wall, maxRho float64
	workers           int
}

// addRequests counts the requests of each stage analysed, their errors, tokens, send times and
// lags; it returns them by seq.
func addRequests(accs map[int32]*stageAcc, requests []schemas.RawRequest) map[int64]*schemas.RawRequest {
	bySeq := map[int64]*schemas.RawRequest{}
	for i := range requests {
		q := &requests[i]
		a := accs[q.Stage]
		if a == nil || q.Warmup {
			continue
		}
		bySeq[q.Seq] = q
		a.r.Requests++
		if q.ErrorKind != "" {
			a.r.Errors++
		}
		if q.SentNs > 0 {
			a.sent = append(a.sent, q.SentNs)
			a.lag = append(a.lag, q.SentNs-q.PlannedNs)
		}
		if q.UsageComplete != nil {
			a.r.Tokens += int64(*q.UsageComplete)
		}
	}
	return bySeq
}

// addChunks gathers each request's chunks, in order: read lags, exact and tapped shares, and
// the errors of arrival times (the tap's when it saw the event) against the simulator's send
// stamps: every chunk's, the first's (TTFT), and the gaps' (ITL).
func addChunks(accs map[int32]*stageAcc, bySeq map[int64]*schemas.RawRequest, d *rawData) {
	// prevT/prevS are the previous content chunk's times.
	var cur int64 = -1
	var q *schemas.RawRequest
	var a *stageAcc
	var prevT, prevS int64
	first := false
	for i := range d.chunks {
		c := &d.chunks[i]
		if c.Seq != cur || i == 0 {
			cur, q = c.Seq, bySeq[c.Seq]
			a, prevT, prevS, first = nil, 0, 0, true
			if q != nil {
				a = accs[q.Stage]
			}
		}
		if a == nil {
			continue
		}
		if c.RxKernelNs != 0 {
			a.rlag = append(a.rlag, c.RxUserNs-c.RxKernelNs)
		}
		if c.Kind != schemas.ChunkContent {
			continue
		}
		a.content++
		if q.UsageComplete == nil {
			a.r.Tokens++
		}
		if c.Quality == schemas.QualityExact {
			a.exact++
		}
		t := c.Time()
		if ns, ok := d.tapRx(c); ok {
			t = ns // the arrival of the segment that carried the event
			a.tapped++
		}
		if c.ServerSentNs == 0 {
			prevT = 0
			first = false
			continue
		}
		s := c.ServerSentNs
		a.chunk = append(a.chunk, t-s)
		if first {
			a.ttft = append(a.ttft, t-s)
		}
		if prevT != 0 {
			e := (t - prevT) - (s - prevS)
			a.itl = append(a.itl, e)
		}
		prevT, prevS, first = t, s, false
	}
}

// addWorkers adds up the workers' CPU per stage, and the busiest worker's share of its wall time.
func addWorkers(accs map[int32]*stageAcc, workers []schemas.Worker) {
	for _, w := range workers {
		a := accs[w.Stage]
		if a == nil || w.WallNs <= 0 {
			continue
		}
		cpu := float64(w.CPUUserNs + w.CPUSysNs)
		a.cpu += cpu
		a.wall = max(a.wall, float64(w.WallNs))
		a.maxRho = max(a.maxRho, cpu/float64(w.WallNs))
		a.workers++
	}
}

// rate is the stage's Rate, judged; usage gives the client's CPU beside the workers'.
func (a *stageAcc) rate(usage []schemas.StageUsage) schemas.CalibrationRate {
	r := a.r
	slices.Sort(a.sent)
	if n := len(a.sent); n > 0 {
		r.AchievedRate, _ = schemas.AchievedRate(int64(n), a.sent[0], a.sent[n-1]) // 0: no rate
	}
	if r.TargetRate > 0 {
		r.Fidelity = r.AchievedRate / r.TargetRate
	}
	r.SendLag, r.ReadLag = quant(a.lag, false), quant(a.rlag, false)
	r.TTFTErr, r.ChunkErr, r.ITLErr = quant(a.ttft, false), quant(a.chunk, false), quant(a.itl, true)
	if a.content > 0 {
		r.ExactShare = float64(a.exact) / float64(a.content)
		r.TapShare = float64(a.tapped) / float64(a.content)
	}
	r.WorkerRhoMax = a.maxRho
	if a.wall > 0 {
		r.CPUPerSecond = a.cpu / a.wall
	}
	// Per request: the workers' CPU rate over their stage window divided by the send rate.
	// (CPU / requests would be off: a stage's window runs to the next stage's start, or to the end
	// of the drain for the last.)
	if r.AchievedRate > 0 {
		r.CPUPerReqNs = r.CPUPerSecond * 1e9 / r.AchievedRate
	}
	if r.Tokens > 0 {
		r.CPUPerTokNs = r.CPUPerReqNs * float64(r.Requests) / float64(r.Tokens)
	}
	clientCPU(&r, usage)
	judge(&r)
	return r
}

// quant summarises v (sorted in place): median, and the 99th percentile of v or, with abs, of |v|.
func quant(v []int64, abs bool) schemas.Quant {
	if len(v) == 0 {
		return schemas.Quant{}
	}
	slices.Sort(v)
	q := schemas.Quant{N: len(v), P50: rank(v, 0.5)}
	if abs {
		for i := range v {
			if v[i] < 0 {
				v[i] = -v[i]
			}
		}
		slices.Sort(v)
	}
	q.P99 = rank(v, 0.99)
	return q
}

// rank is the nearest-rank quantile of sorted v, by aggregate's definition.
func rank(v []int64, p float64) int64 { return v[aggregate.NearestRank(p, int64(len(v)))-1] }

// fmtNs formats nanoseconds as µs below 1 ms, else ms.
func fmtNs(ns float64) string {
	switch a := math.Abs(ns); {
	case a < 1e3:
		return fmt.Sprintf("%.0fns", ns)
	case a < 1e6:
		return fmt.Sprintf("%.0fµs", ns/1e3)
	case a < 1e9:
		return fmt.Sprintf("%.2fms", ns/1e6)
	}
	return fmt.Sprintf("%.2fs", ns/1e9)
}

// fmtNsOf is fmtNs of a nullable figure: "–" for null (none measured), never 0.
func fmtNsOf(ns *int64) string {
	if ns == nil {
		return "–"
	}
	return fmtNs(float64(*ns))
}

// WriteTable writes the human-readable calibration table.
func WriteTable(w io.Writer, c *schemas.Calibration) error {
	mode := fmt.Sprintf("%d worker(s), GOMAXPROCS %d, kernel timestamps on, packet tap %s", c.Workers, c.GOMAXPROCS, map[bool]string{true: "on (errors use its times)", false: "off"}[c.Tap])
	if c.SingleProcess {
		mode = "SINGLE PROCESS (naive client): 1 worker, GOMAXPROCS 1, kernel timestamps off, arrival stamped after decoding"
	}
	fmt.Fprintf(w, "calibrate on %s: %d CPUs, load average %s\n", c.Host, c.CPUs, c.LoadAvg)
	for _, n := range c.Notes {
		fmt.Fprintf(w, "NOTE: %s\n", n)
	}
	fmt.Fprintf(w, "client: %s; sim: fixed ttft %v, itl %v, %d input / %d output tokens, stages of %v\n\n",
		mode, time.Duration(c.SimTTFTNs), time.Duration(c.SimITLNs), c.InputTokens, c.OutputTokens, time.Duration(c.StageNs))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rate/s\tachieved\tfidelity\tsend lag p50\tp99\tread lag p99\tTTFT err p50\tp99\tchunk err p50\tp99\tITL err p50\t|p99|\texact\ttapped\tTTFT bound p50\tp99\tcovered\tuncertainty\tworker ρ\tCPU/req\tCPU/token\tfaithful\t")
	for _, r := range c.Rates {
		ok := "yes"
		if !r.Faithful {
			ok = "NO"
		}
		fmt.Fprintf(tw, "%g\t%.1f\t%.2f%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%.1f%%\t%s\t%s\t%.2f%%\t%s\t%.3f\t%.1fµs\t%.1fµs\t%s\t\n",
			r.TargetRate, r.AchievedRate, r.Fidelity*100, fmtNs(float64(r.SendLag.P50)), fmtNs(float64(r.SendLag.P99)),
			fmtNs(float64(r.ReadLag.P99)), fmtNs(float64(r.TTFTErr.P50)), fmtNs(float64(r.TTFTErr.P99)),
			fmtNs(float64(r.ChunkErr.P50)), fmtNs(float64(r.ChunkErr.P99)), fmtNs(float64(r.ITLErr.P50)), fmtNs(float64(r.ITLErr.P99)),
			r.ExactShare*100, r.TapShare*100, fmtNs(float64(r.TTFTBound.P50)), fmtNs(float64(r.TTFTBound.P99)), r.BoundsCoverage*100,
			fmtNsOf(r.Uncertainty), r.WorkerRhoMax, r.CPUPerReqNs/1e3, r.CPUPerTokNs/1e3, ok)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "bounds: covered = share of TTFT intervals meeting the simulator's write (± %v); over %d exact events, simulator stamp to kernel stamp p50 %s p99 %s, its writes p50 %s p99 %s, %d kernel stamps outside their write\n",
		TruthAllowance, c.StampTransit.N, fmtNs(float64(c.StampTransit.P50)), fmtNs(float64(c.StampTransit.P99)),
		fmtNs(float64(c.StampWrite.P50)), fmtNs(float64(c.StampWrite.P99)), c.StampOutside)
	for _, r := range c.Rates {
		if !r.Faithful {
			fmt.Fprintf(w, "not faithful at %g/s: %s\n", r.TargetRate, r.Why)
		}
	}
	if c.FaithfulRate > 0 {
		cpu := ""
		if c.FaithfulCPUPerReqNs > 0 {
			cpu = fmt.Sprintf(", the client using %s of CPU per request there (workers and coordinator)", fmtNs(c.FaithfulCPUPerReqNs))
		}
		fmt.Fprintf(w, "highest rate held faithfully: %g requests/s%s (%s)\n", c.FaithfulRate, cpu, c.FaithfulRule)
	} else {
		fmt.Fprintf(w, "no rate was held faithfully (%s)\n", c.FaithfulRule)
	}
	f := c.Fit
	fmt.Fprintf(w, "worker CPU model: ρ = %.3f + %s × rate per worker (%s, %d points)\n", f.IdleRho, fmtNs(f.CPUPerReqNs), f.Method, f.Points)
	if f.Mu > 0 {
		fmt.Fprintf(w, "μ per worker ≈ %.0f requests/s at ρ = 1\n", f.Mu)
	}
	if c.WorkersFor > 0 {
		fmt.Fprintf(w, "for %g requests/s at ρ = 0.5: %d worker(s) (each needs its own CPU; the server should not share them)\n", c.ForRate, c.WorkersFor)
	} else {
		fmt.Fprintf(w, "for %g requests/s at ρ = 0.5: not reachable with this fit\n", c.ForRate)
	}
	return nil
}

// write writes the calibration to path as indented JSON, atomically.
func write(c *schemas.Calibration, path string) error {
	c.Version = schemas.CalibrationVersion
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return schemas.WriteFileAtomic(path, append(b, '\n'))
}
