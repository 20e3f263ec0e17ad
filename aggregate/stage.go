package aggregate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/wirebench/wirebench/internal/interval"
	"github.com/wirebench/wirebench/schemas"
)

// bucketNs is the timeseries resolution.
const bucketNs = int64(100e6)

// maxBuckets caps a stage's timeseries (about 116 hours); later times go to the last bucket.
const maxBuckets = 1 << 22

// fitSample is how many (I, TTFT) points per stage the robust fit keeps (a seeded reservoir).
const fitSample = 1000

type tsBucket struct {
	sends, completions, errors, ends, inTok, outTok int64
	ttft                                            []int64
}

// stageAcc accumulates one stage's metrics over both passes.
type stageAcc struct {
	info    schemas.StageInfo
	startNs int64 // planned stage start: manifest start_ns + the stage's offset_ns

	requests, completed, errors, good int64
	cancelled                         int64 // cancelled_by_client: neither completed nor errors
	errKinds                          map[string]int64
	firstSent, lastSent, endNs        int64
	firstStart, lastStart             int64 // send_start_ns of the stage's requests
	firstDone, lastDone               int64 // ok completions
	inTok, outTok                     int64 // of completed requests
	docs                              int64 // documents of completed requests
	hasDocs                           bool  // some request carried documents (ranking, embeddings)
	busyNs                            int64 // sum over requests of (end − S): in-flight integral
	events, exact, tapped, unbounded  int64

	// Latencies carry the client's error: bounded. Tokens, prefill (an estimate, not a
	// measurement), read lag and connect times are plain.
	ttft, tpot, itl, itlW, e2e, ntpot, ttftP, e2eP bounded
	queue, decode, sendLag, ttfc                   bounded
	prefill, inD, outD, readLag, connect, connWait *dist
	// The same latencies' values in request order, for their sampling intervals.
	ttftCI, ttfcCI, tpotCI, itlCI, e2eCI, ntpotCI *ciSample
	samples                                       map[string][]int64 // their values once finished, by latency; nil unless Config.KeepSamples
	reasonD, answerD                              *dist

	// planned send times, for the schedule's own rate; lateness split by who waited
	firstPlanned, lastPlanned int64
	lateNs, pacerLateNs       int64 // sums over requests of max(0, S − P) and of max(0, min(pacer lag, S − P))
	connLateNs, capLateNs     int64 // sums of the connection waits within that lateness: not at / at the cap
	synRetrans, connCapped    int64

	fit     []fitPoint
	fitSeen int64
	rng     *rand.Rand

	ts []tsBucket

	// decomposition for requests without server timings
	histPerTokNs  float64 // from server histograms; 0 when none
	sources       map[string]int64
	srvPrefill    int64 // sums over server-decomposed requests, for prefill_per_token_ns
	srvIn         int64
	prefillPerTok *float64 // nil without a decomposition
}

type fitPoint struct{ in, ttft int64 }

func newStageAcc(info schemas.StageInfo, startNs int64, spill string) *stageAcc {
	nd := func() *dist { return newDist(spill, false) }
	nb := func() bounded { return newBounded(spill, false) }
	return &stageAcc{
		info: info, startNs: startNs, errKinds: map[string]int64{}, sources: map[string]int64{},
		firstSent: math.MaxInt64, lastSent: math.MinInt64, endNs: math.MinInt64,
		firstDone: math.MaxInt64, lastDone: math.MinInt64,
		firstPlanned: math.MaxInt64, lastPlanned: math.MinInt64, firstStart: math.MaxInt64, lastStart: math.MinInt64,
		ttft: nb(), tpot: nb(), itl: nb(), itlW: newBounded(spill, true), e2e: nb(), ntpot: nb(),
		ttftP: nb(), e2eP: nb(), queue: nb(), decode: nb(), sendLag: nb(), ttfc: nb(),
		prefill: nd(), inD: nd(), outD: nd(), readLag: nd(), connect: nd(), connWait: nd(),
		reasonD: nd(), answerD: nd(),
		ttftCI: newCISample(), ttfcCI: newCISample(), tpotCI: newCISample(), itlCI: newCISample(),
		e2eCI: newCISample(), ntpotCI: newCISample(),
		rng: rand.New(rand.NewPCG(uint64(info.Index), 0x77697265)),
	}
}

// finisher is a dist or a bounded dist.
type finisher interface {
	finish() (schemas.Dist, error)
	close()
}

func (a *stageAcc) dists() []finisher {
	return []finisher{a.ttft, a.tpot, a.itl, a.itlW, a.e2e, a.ntpot, a.ttftP, a.e2eP, a.queue, a.prefill, a.decode, a.inD, a.outD, a.sendLag, a.readLag, a.connect, a.connWait, a.ttfc, a.reasonD, a.answerD}
}

func (a *stageAcc) close() {
	for _, d := range a.dists() {
		d.close()
	}
}

// bucket returns the timeseries bucket of time t, growing the series as needed.
func (a *stageAcc) bucket(t int64) *tsBucket {
	i := (t - a.startNs) / bucketNs
	if t < a.startNs {
		i = 0
	}
	i = min(i, maxBuckets-1)
	for int64(len(a.ts)) <= i {
		a.ts = append(a.ts, tsBucket{})
	}
	return &a.ts[i]
}

// addRequest adds a finished request (pass 1) to the stage.
func (a *stageAcc) addRequest(s *reqState, m *schemas.MetricRequest) {
	a.requests++
	a.hasDocs = a.hasDocs || m.Documents > 0
	if !s.unsent {
		a.firstSent = min(a.firstSent, s.sentNs)
		a.lastSent = max(a.lastSent, s.sentNs)
	}
	end := s.endNs()
	a.endNs = max(a.endNs, end)
	a.busyNs += max(end-s.sentNs, 0)
	a.addLateness(s, m)
	a.bucket(s.sentNs).sends++
	eb := a.bucket(end)
	eb.ends++
	if m.ErrorKind == schemas.ErrCancelledByClient {
		a.cancelled++ // the client ended it as planned: no failure, no latency, no goodput miss
		return
	}
	if !m.OK {
		a.errors++
		kind := m.ErrorKind
		if kind == "" {
			kind = "incomplete"
			if m.Status != 200 {
				kind = "http_status"
			}
		}
		a.errKinds[kind]++
		eb.errors++
		return
	}
	a.addDone(s, m, eb, end)
}

// addDone adds an ok request's completion, tokens and latencies; eb is the bucket it ended in.
func (a *stageAcc) addDone(s *reqState, m *schemas.MetricRequest, eb *tsBucket, end int64) {
	a.completed++
	a.firstDone = min(a.firstDone, end)
	a.lastDone = max(a.lastDone, end)
	if m.SLOMet {
		a.good++
	}
	eb.completions++
	in, out := int64(*m.InputTokens), int64(*m.OutputTokens)
	a.docs += int64(m.Documents)
	a.inTok += in
	a.outTok += out
	eb.inTok += in
	a.inD.add(in)
	a.outD.add(out)
	// Output tokens were credited to buckets per content event as they arrived (one per event,
	// or the event's own count); credit the difference to N at the last content event.
	if s.content > 0 {
		a.bucket(s.lastNs).outTok += out - s.credited
	} else {
		eb.outTok += out
	}
	a.addLatencies(s, m)
}

// addLatencies adds an ok request's latencies with their intervals, and its TTFT to the fit
// sample.
func (a *stageAcc) addLatencies(s *reqState, m *schemas.MetricRequest) {
	for _, p := range []struct {
		v, lo, hi *int64
		d         bounded
		ci        *ciSample
	}{
		{m.TTFTNs, m.TTFTLoNs, m.TTFTHiNs, a.ttft, a.ttftCI}, {m.TPOTNs, m.TPOTLoNs, m.TPOTHiNs, a.tpot, a.tpotCI},
		{m.E2ENs, m.E2ELoNs, m.E2EHiNs, a.e2e, a.e2eCI}, {m.NTPOTNs, m.NTPOTLoNs, m.NTPOTHiNs, a.ntpot, a.ntpotCI},
		{m.TTFCNs, m.TTFCLoNs, m.TTFCHiNs, a.ttfc, a.ttfcCI},
	} {
		if p.v != nil {
			p.d.addB(*p.v, *p.lo, *p.hi, 1)
			p.ci.add(*p.v, *p.lo, *p.hi)
		}
	}
	a.itlCI.addUnit(s.itlGaps)
	if m.ReasoningTokens != nil {
		a.reasonD.add(int64(*m.ReasoningTokens))
	}
	if m.AnswerTokens != nil {
		a.answerD.add(int64(*m.AnswerTokens))
	}
	// From the planned time P (exact, from the schedule) the interval is the arrival's.
	if m.TTFTFromPlannedNs != nil {
		a.ttftP.addB(*m.TTFTFromPlannedNs, s.first.lo-s.plannedNs, s.first.hi-s.plannedNs, 1)
	}
	if m.E2EFromPlannedNs != nil {
		d := s.doneSpan()
		a.e2eP.addB(*m.E2EFromPlannedNs, d.lo-s.plannedNs, d.hi-s.plannedNs, 1)
	}
	if m.TTFTNs != nil {
		fb := a.bucket(s.firstNs)
		fb.ttft = append(fb.ttft, *m.TTFTNs)
		a.fitSeen++
		pt := fitPoint{int64(*m.InputTokens), *m.TTFTNs}
		if len(a.fit) < fitSample {
			a.fit = append(a.fit, pt)
		} else if j := a.rng.Int64N(a.fitSeen); j < fitSample {
			a.fit[j] = pt
		}
	}
}

// addDecomposition adds a request's final decomposition (pass 2).
func (a *stageAcc) addDecomposition(m *schemas.MetricRequest) {
	if !m.OK || m.QueueNs == nil {
		return
	}
	// The prefill estimate is taken as given: the queue's interval is TTFT's less it. Decode =
	// E2E − TTFT lies in [e2e_lo − ttft_hi, e2e_hi − ttft_lo] (wider than E − t_first's own by
	// the write's duration on each side).
	p := *m.PrefillNs
	a.queue.addB(*m.QueueNs, max(*m.TTFTLoNs-p, 0), max(*m.TTFTHiNs-p, 0), 1)
	a.prefill.add(p)
	a.decode.addB(*m.DecodeNs, max(*m.E2ELoNs-*m.TTFTHiNs, 0), *m.E2EHiNs-*m.TTFTLoNs, 1)
	a.sources[m.DecompositionSource]++
	if m.DecompositionSource == schemas.DecompositionServer {
		a.srvPrefill += *m.PrefillNs
		a.srvIn += int64(*m.InputTokens)
	}
}

// workerStats is one worker's share of a stage.
type workerStats struct {
	shard, worker int32
	rho           float64
	gcNs          int64
	inflightPeak  int64
	connsOpened   int64
	connsPeak     int64
	connsWarm     int64
}

// row computes the stage's row of metrics/stages.parquet, all but the footprint and the load
// verdict (stageRows adds them: the verdict needs the footprint).
func (a *stageAcc) row(workers []workerStats, done *completions, bias schemas.Bias) (schemas.Stage, error) {
	st := schemas.Stage{
		Stage: a.info.Index, Name: a.info.Name, Mode: a.info.Mode, TargetRate: a.info.Rate,
		Concurrency: a.info.Concurrency, StartNs: a.startNs, Requests: a.requests,
		Completed: a.completed, Errors: a.errors, Cancelled: a.cancelled,
	}
	b, _ := json.Marshal(a.errKinds)
	st.ErrorsByKind = string(b)
	if a.requests > 0 {
		st.StartNs = min(a.startNs, a.firstSent)
		st.EndNs = a.endNs
	} else {
		st.EndNs = a.startNs
	}
	window := float64(st.EndNs-st.StartNs) / 1e9
	if r, ok := schemas.AchievedRate(a.requests, a.firstSent, a.lastSent); ok {
		st.AchievedRate = &r
	}
	a.rates(&st, done, window)
	if window > 0 {
		st.InflightMean = ptr(float64(a.busyNs) / float64(st.EndNs-st.StartNs))
	}
	if judged := a.requests - a.cancelled; judged > 0 {
		share := float64(a.good) / float64(judged)
		st.GoodputShare = &share
		if st.CompletionRate != nil {
			st.GoodputRate = ptr(share * *st.CompletionRate)
		}
	}
	st.Overloaded, st.OverloadedReason = a.overloaded()
	if err := a.finishDists(&st); err != nil {
		return st, err
	}
	st.DecompositionSource = majority(a.sources)
	st.PrefillPerTokenNs = a.prefillPerTok
	if a.events > 0 {
		st.ExactShare = ptr(float64(a.exact) / float64(a.events))
		st.TapShare = ptr(float64(a.tapped) / float64(a.events))
		st.UnboundedShare = ptr(float64(a.unbounded) / float64(a.events))
	}
	workerFigures(&st, workers)
	st.SynRetrans, st.ConnCapped = a.synRetrans, a.connCapped
	a.planned(&st)
	judgeLatency(&st, bias)
	return st, nil
}

// rates sets the stage's throughput figures. Throughput is what the server delivered while
// this stage's load was offered: ok completions of any stage's requests (done) inside the
// stage's windows, counted where they complete. Counting only this stage's own requests would
// show a saturated stage, whose requests finish long after it, as delivering nothing.
// completion_rate and steady_output_tps use the steady part (the middle 80% of the send
// window), the token rates the send window [first S, last S]. A stage without a send window
// falls back to its own completions over the stage window (window seconds; no steady part); a
// stage without either has no rate (null, not 0).
func (a *stageAcc) rates(st *schemas.Stage, done *completions, window float64) {
	if from, to, ok := a.sendWindow(); ok {
		_, in, out, docs := done.sums(from, to)
		sec := float64(to-from) / 1e9
		st.InputTPS, st.OutputTPS, st.TotalTPS = ptr(float64(in)/sec), ptr(float64(out)/sec), ptr(float64(in+out)/sec)
		if a.hasDocs {
			st.DocumentsPerS = ptr(float64(docs) / sec)
		}
		w := (to - from) / 10
		n, _, out := done.within(from+w, to-w)
		sec = float64(to-from-2*w) / 1e9
		st.CompletionRate, st.SteadyOutputTPS = ptr(float64(n)/sec), ptr(float64(out)/sec)
	} else if window > 0 {
		in, out := float64(a.inTok)/window, float64(a.outTok)/window
		st.CompletionRate = ptr(float64(a.completed) / window)
		st.InputTPS, st.OutputTPS, st.TotalTPS = ptr(in), ptr(out), ptr(in+out)
		if a.hasDocs {
			st.DocumentsPerS = ptr(float64(a.docs) / window)
		}
	}
}

// finishDists sets the stage's distributions and the intervals of its latency percentiles (none
// for an overloaded stage: its latencies have no steady distribution to sample).
func (a *stageAcc) finishDists(st *schemas.Stage) error {
	var err error
	for _, p := range []struct {
		d   finisher
		out *schemas.Dist
	}{
		{a.ttft, &st.TTFT}, {a.tpot, &st.TPOT}, {a.itl, &st.ITL}, {a.itlW, &st.ITLWeighted},
		{a.e2e, &st.E2E}, {a.ntpot, &st.NTPOT}, {a.ttftP, &st.TTFTFromPlanned}, {a.e2eP, &st.E2EFromPlanned},
		{a.queue, &st.Queue}, {a.prefill, &st.Prefill}, {a.decode, &st.Decode}, {a.inD, &st.InputTokens},
		{a.outD, &st.OutputTokens}, {a.sendLag, &st.SendLag}, {a.readLag, &st.ReadLag}, {a.connect, &st.Connect}, {a.connWait, &st.ConnWait},
		{a.ttfc, &st.TTFC}, {a.reasonD, &st.ReasoningTokens}, {a.answerD, &st.AnswerTokens},
	} {
		if *p.out, err = p.d.finish(); err != nil {
			return fmt.Errorf("stage %d: %w", a.info.Index, err)
		}
	}
	for _, p := range []struct {
		name string
		ci   *ciSample
		out  *schemas.CI
	}{
		{"ttft", a.ttftCI, &st.TTFTCI}, {"ttfc", a.ttfcCI, &st.TTFCCI}, {"tpot", a.tpotCI, &st.TPOTCI},
		{"itl", a.itlCI, &st.ITLCI}, {"e2e", a.e2eCI, &st.E2ECI}, {"ntpot", a.ntpotCI, &st.NTPOTCI},
	} {
		if a.samples != nil {
			a.samples[p.name] = p.ci.vals
		}
		if st.Overloaded {
			*p.out = p.ci.withheld()
			continue
		}
		if *p.out, err = p.ci.interval(fmt.Sprintf("%d/%s", a.info.Index, p.name), interval.BlockFloor(st.InflightMean)); err != nil {
			return fmt.Errorf("stage %d: %s intervals: %w", a.info.Index, p.name, err)
		}
	}
	return nil
}

// workerFigures sets the stage's worker utilisation figures and GC pauses.
func workerFigures(st *schemas.Stage, workers []workerStats) {
	rhos := make([]float64, len(workers))
	var rhoSum float64
	for i, w := range workers {
		rhos[i] = w.rho
		rhoSum += w.rho
		if st.WorkerRhoMax == nil || w.rho > *st.WorkerRhoMax {
			st.WorkerRhoMax = ptr(w.rho)
		}
		st.GCPauseNs += w.gcNs
	}
	b, _ := json.Marshal(rhos)
	st.WorkerRho = string(b)
	st.Workers = int32(len(workers))
	st.WorkersForRhoHalf = int32(math.Ceil(rhoSum / schemas.TargetRho))
}

// timeseries returns the stage's rows of metrics/timeseries.parquet; clockNs is the stage's
// cross-host clock uncertainty, which every bucket carries.
func (a *stageAcc) timeseries(clockNs int64) []schemas.Timeseries {
	out := make([]schemas.Timeseries, len(a.ts))
	var sends, ends int64
	for i := range a.ts {
		b := &a.ts[i]
		sends += b.sends
		ends += b.ends
		r := schemas.Timeseries{
			Stage: a.info.Index, BucketNs: a.startNs + int64(i)*bucketNs, Sends: b.sends,
			Completions: b.completions, Errors: b.errors, Inflight: sends - ends,
			InputTokens: b.inTok, OutputTokens: b.outTok, ClockUncertaintyNs: clockNs,
		}
		if len(b.ttft) > 0 {
			sort.Slice(b.ttft, func(i, j int) bool { return b.ttft[i] < b.ttft[j] })
			n := int64(len(b.ttft))
			r.TTFTP50Ns = ptr(b.ttft[NearestRank(0.5, n)-1])
			r.TTFTP99Ns = ptr(b.ttft[NearestRank(0.99, n)-1])
		}
		out[i] = r
	}
	return out
}

// majority returns the decomposition source most requests used; a tie goes to the preferred
// source (server, then histograms, then fit).
func majority(m map[string]int64) string {
	best, n := "", int64(0)
	for _, k := range []string{schemas.DecompositionServer, schemas.DecompositionHistograms, schemas.DecompositionFit} {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}

// steadyRates returns the send and completion rates (1/s) over the middle 80% of the send
// window, in whole timeseries buckets; ok is false when the window holds no whole bucket.
// (Saturation compares the stage's own sends and completions, so it looks at own requests.)
func (a *stageAcc) steadyRates() (send, done float64, ok bool) {
	if a.requests < 2 || a.lastSent <= a.firstSent {
		return 0, 0, false
	}
	w := a.lastSent - a.firstSent
	from, to := a.firstSent+w/10, a.lastSent-w/10
	var s, c, n int64
	for i := range a.ts {
		b0 := a.startNs + int64(i)*bucketNs
		if b0 >= from && b0+bucketNs <= to {
			s += a.ts[i].sends
			c += a.ts[i].completions
			n++
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	sec := float64(n*bucketNs) / 1e9
	return float64(s) / sec, float64(c) / sec, true
}

// sendWindow is [first S, last S] of the stage's requests; ok is false with fewer than two
// sends or all at one instant.
func (a *stageAcc) sendWindow() (from, to int64, ok bool) {
	if a.requests < 2 || a.lastSent <= a.firstSent {
		return 0, 0, false
	}
	return a.firstSent, a.lastSent, true
}

// completions are the ok completions of the whole run (every stage, warmup included), sorted by
// time, so a stage's throughput counts whatever the server finished while the stage ran. 16
// bytes a request.
type completions []completion

type completion struct {
	endNs         int64
	in, out, docs int32
}

func (c completions) sort() {
	slices.SortFunc(c, func(a, b completion) int { return cmp.Compare(a.endNs, b.endNs) })
}

// within counts the completions in [from, to) and sums their input and output tokens.
func (c completions) within(from, to int64) (n, in, out int64) {
	n, in, out, _ = c.sums(from, to)
	return n, in, out
}

// sums counts the completions in [from, to) and sums their input and output tokens and
// documents.
func (c completions) sums(from, to int64) (n, in, out, docs int64) {
	i, _ := slices.BinarySearchFunc(c, from, func(x completion, t int64) int { return cmp.Compare(x.endNs, t) })
	for ; i < len(c) && c[i].endNs < to; i++ {
		n++
		in += int64(c[i].in)
		out += int64(c[i].out)
		docs += int64(c[i].docs)
	}
	return n, in, out, docs
}
