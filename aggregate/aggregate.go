package aggregate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

// Config says what to aggregate.
type Config struct {
	Runs          []string // run directories: one run, or the hosts of one distributed run (same run id)
	Out           string   // directory that receives metrics/ and the manifest step; default Runs[0]
	Force         bool     // let Out replace another run it holds (checkOut) once the inputs are read and checked
	Strict        bool     // turn warnings (missing, short or damaged part, lost events, manifest disagreement, dead worker) into errors
	IncludeWarmup bool     // count warmup requests and stages in the stage metrics
	// Decomposition is the source of queue/prefill/decode: auto (or empty: server, else
	// histograms, else fit, per request), or one of server, histograms, fit forced for every
	// request; forcing a source the run cannot support is an error naming what is missing.
	Decomposition string
	// ClockTolerance is the largest clock max error a host may have, when the hosts read
	// different clocks, before aggregate warns (with Strict: fails); 0 = DefaultClockTolerance.
	ClockTolerance time.Duration
	Args           []string // the command line, recorded in the files and the manifest
	// KeepSamples keeps the values each stage's intervals were drawn from in Summary.Samples,
	// for benchmarks that pool several runs' values (bench/intervals).
	KeepSamples bool
}

// Summary is what Run wrote.
type Summary struct {
	RunID           string
	Out             string           // directory holding metrics/
	Requests        int64            // raw request rows read
	Chunks          int64            // raw chunk rows read
	Stages          []schemas.Stage  // the rows of metrics/stages.parquet
	SaturationStage int32            // stage index of the saturation stage; -1 when none
	Warnings        []string         // "file: text"
	Outages         []schemas.Outage // when the target could not be reached (also in the manifest)
	// Samples, with Config.KeepSamples: by stage index, by latency ("ttft", "ttfc", "tpot",
	// "itl", "e2e", "ntpot"), the values its intervals were drawn from: every value of the
	// stage's counted requests, or of every k-th request past 131,072 values (schemas.CI's
	// Values says how many).
	Samples map[int32]map[string][]int64
}

type aggregator struct {
	cfg          Config
	log          *slog.Logger
	w            *warner
	tok          tokenizer.Tokenizer
	slo          schemas.SLO
	bias         schemas.Bias // with defaults
	allow        int64        // bias.stamp_allowance in ns
	startNs      int64
	stages       map[int32]*stageAcc
	spill        string
	pendErr      error
	requestsRead int64
	chunksRead   int64
	srvRows      int64 // requests with server-reported timings
	outs         *outageScan
	outages      []schemas.Outage // found after pass 1, counted in pass 2
	seqs         *ledger          // which file recorded each seq
	manifestPath string           // the reference host's manifest: named by warnings about stages
	breakdowns   []*breakdown     // the request columns stages are split by (target.models)
}

// newStage makes and registers the accumulator of stage info.
func (a *aggregator) newStage(info schemas.StageInfo, startNs int64) *stageAcc {
	acc := newStageAcc(info, startNs, a.spill)
	if a.cfg.KeepSamples {
		acc.samples = map[string][]int64{}
	}
	a.stages[info.Index] = acc
	return acc
}

// samples returns the stages' kept interval samples (Config.KeepSamples), nil without.
func (a *aggregator) samples() map[int32]map[string][]int64 {
	if !a.cfg.KeepSamples {
		return nil
	}
	out := map[int32]map[string][]int64{}
	for i, acc := range a.stages {
		if len(acc.samples) > 0 {
			out[i] = acc.samples
		}
	}
	return out
}

// stageOf returns the accumulator of stage idx, making one (with a warning) for a stage the
// manifest does not list.
func (a *aggregator) stageOf(idx int32, file string) *stageAcc {
	if acc := a.stages[idx]; acc != nil {
		return acc
	}
	if err := a.w.warn(file, "stage %d is not in the manifest", idx); err != nil && a.pendErr == nil {
		a.pendErr = err
	}
	return a.newStage(schemas.StageInfo{Index: idx, Name: fmt.Sprintf("stage %d", idx), Mode: schemas.ModeOpen}, a.startNs)
}

// Run reads the raw shards of cfg.Runs and writes OUT/metrics/requests.parquet, stages.parquet
// and timeseries.parquet (atomically), then records an aggregate step in OUT/manifest.json.
//
// Memory: each worker part is joined on its own (a request's events are in the chunks file of
// the worker and part that holds its row), reading Arrow record batches of batchRows rows, so
// memory is bounded by the batch size, one part's per-request state and the percentile
// accumulators (memValues values each, the rest spilled to OUT/metrics/.spill-*).
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Summary, error) {
	started := time.Now()
	mode, err := checkDecomposition(cfg.Decomposition)
	if err != nil {
		return nil, err
	}
	w := &warner{log: log, strict: cfg.Strict}
	runs, err := openRuns(cfg.Runs, w)
	if err != nil {
		return nil, err
	}
	if err := checkHosts(runs, cmp.Or(cfg.ClockTolerance, DefaultClockTolerance), w); err != nil {
		return nil, err
	}
	out := cmp.Or(cfg.Out, runs[0].dir)
	replace, err := checkOut(out, runs, cfg.Force)
	if err != nil {
		return nil, err
	}
	metricsDir := filepath.Dir(schemas.FileOf[schemas.Stage](out))
	if err := os.MkdirAll(metricsDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", metricsDir, err)
	}
	spill, err := os.MkdirTemp(metricsDir, schemas.SpillPrefix)
	if err != nil {
		return nil, fmt.Errorf("create spill directory: %w", err)
	}
	defer os.RemoveAll(spill)
	a, err := newAggregator(cfg, runs, spill, w, log)
	if err != nil {
		return nil, err
	}
	defer a.close()
	prod := schemas.Producer{Command: "aggregate", Args: cfg.Args}

	res, err := a.compute(ctx, runs, spill, prod, mode, w)
	if err != nil {
		return nil, err
	}
	// The last point an interrupt stops at: from here the run in out is replaced.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := a.publish(out, replace, res, runs, cfg, started, prod); err != nil {
		return nil, err
	}
	log.Info("aggregate: done", "out", metricsDir, "requests", a.requestsRead, "chunks", a.chunksRead, "stages", len(res.rows), "warnings", len(w.list))
	return &Summary{RunID: runs[0].manifest.RunID, Out: out, Requests: a.requestsRead, Chunks: a.chunksRead, Stages: res.rows, SaturationStage: res.sat, Warnings: w.list, Outages: a.outages, Samples: a.samples()}, nil
}

// results are what the two passes compute in spill, before Run replaces the metrics in out.
type results struct {
	requests string // requests.parquet, in spill
	n        int64  // its rows
	rows     []schemas.Stage
	ts       []schemas.Timeseries
	bd       []schemas.Breakdown
	sat      int32 // the saturation stage; -1 when none
}

// compute runs the two passes over the runs' raw files and makes the stage, time-series and
// breakdown rows.
func (a *aggregator) compute(ctx context.Context, runs []*runDir, spill string, prod schemas.Producer, mode string, w *warner) (*results, error) {
	// Pass 1: raw parts -> per-request rows without the estimated decomposition.
	pass1 := filepath.Join(spill, "requests-pass1.parquet")
	done, err := a.pass1(ctx, runs, pass1, prod)
	if err != nil {
		return nil, err
	}
	workers, err := readWorkers(runs, w)
	if err != nil {
		return nil, err
	}
	dp, err := a.planDecomposition(runs, mode)
	if err != nil {
		return nil, err
	}
	// Pass 2: fill the decomposition, write requests.parquet (in spill until the end, so an
	// interrupt leaves the earlier metrics whole), add the decomposition dists.
	r := &results{requests: filepath.Join(spill, "requests.parquet")}
	if r.n, err = a.pass2(ctx, pass1, r.requests, prod, dp); err != nil {
		return nil, err
	}
	a.setPrefillPerToken(dp.fb)
	if r.rows, r.ts, r.sat, err = a.stageRows(runs, workers, &done); err != nil {
		return nil, err
	}
	if r.bd, err = a.breakdownRows(r.rows); err != nil {
		return nil, err
	}
	return r, nil
}

// publish replaces the metrics in out with r (when replace, the earlier ones first) and records
// the step in out's manifest.
func (a *aggregator) publish(out string, replace bool, r *results, runs []*runDir, cfg Config, started time.Time, prod schemas.Producer) error {
	if replace {
		if err := replaceOut(out, a.log); err != nil {
			return err
		}
	}
	if err := os.Rename(r.requests, schemas.FileOf[schemas.MetricRequest](out)); err != nil {
		return err
	}
	if err := schemas.WriteFile(schemas.FileOf[schemas.Stage](out), r.rows, prod); err != nil {
		return err
	}
	if err := schemas.WriteFile(schemas.FileOf[schemas.Timeseries](out), r.ts, prod); err != nil {
		return err
	}
	if err := schemas.WriteFile(schemas.FileOf[schemas.Breakdown](out), r.bd, prod); err != nil {
		return err
	}
	for _, o := range a.outages {
		a.log.Warn("the target could not be reached", "outage", o.String())
	}
	return writeManifest(out, runs, cfg, started, r.n, int64(len(r.rows)), int64(len(r.ts)), int64(len(r.bd)), a.outages)
}

// RecordFailure records a failed aggregate step, with its error, in the manifest of cfg's
// output directory when that manifest is of the run aggregated (OUT is the run, or a merged
// run written before), so the run says why it has no fresh metrics; the run's status, which
// says how its capture ended, is left as it is. It returns why it could not.
func RecordFailure(cfg Config, started time.Time, stepErr error) error {
	if len(cfg.Runs) == 0 {
		return nil
	}
	run, err := schemas.ReadManifest(filepath.Join(cfg.Runs[0], schemas.ManifestName))
	if err != nil {
		return err
	}
	path := filepath.Join(cmp.Or(cfg.Out, cfg.Runs[0]), schemas.ManifestName)
	m, err := schemas.ReadManifest(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a fresh OUT: no run there to record it in
	}
	if err != nil {
		return err
	}
	if m.RunID != run.RunID {
		return fmt.Errorf("%s is run %q, not %q: the failure is not recorded there", path, m.RunID, run.RunID)
	}
	status := schemas.StatusFailed
	if errors.Is(stepErr, context.Canceled) {
		status = schemas.StatusInterrupted // Ctrl-C, SIGTERM: nothing of it was written
	}
	m.Steps = append(m.Steps, schemas.Step{Name: schemas.StepAggregate, Args: cfg.Args, Started: started, Ended: time.Now(), Status: status, Error: stepErr.Error()})
	return m.Write(path)
}

// newAggregator makes the aggregator of runs: the first run's SLO, bias and tokenizer, and one
// accumulator per planned stage (spilling into spill).
func newAggregator(cfg Config, runs []*runDir, spill string, w *warner, log *slog.Logger) (*aggregator, error) {
	ref := reference(runs)
	m0 := ref.manifest
	bias := runs[0].config.Bias.WithDefaults()
	a := &aggregator{cfg: cfg, log: log, w: w, slo: runs[0].config.SLO, bias: bias, allow: int64(bias.StampAllowance),
		startNs: m0.StartNs, stages: map[int32]*stageAcc{}, spill: spill, outs: newOutageScan(m0.StartNs), seqs: newLedger(plannedRequests(m0)),
		manifestPath: filepath.Join(ref.dir, schemas.ManifestName)}
	var err error
	if a.tok, err = tokenizer.Load(runs[0].config.Tokenizer); err != nil {
		if werr := w.warn(filepath.Join(runs[0].dir, schemas.ManifestName), "tokenizer: %v; output tokens without usage are counted as content events", err); werr != nil {
			return nil, werr
		}
		a.tok = nil
	}
	for _, si := range m0.Stages {
		a.newStage(si, m0.StartNs+si.OffsetNs)
	}
	a.breakdowns = newBreakdowns(&runs[0].config.Target, spill)
	return a, nil
}

func (a *aggregator) close() {
	for _, acc := range a.stages {
		acc.close()
	}
	a.closeBreakdowns()
}

// stageOrder returns the stage indexes in order.
func (a *aggregator) stageOrder() []int32 {
	idxs := slices.Collect(maps.Keys(a.stages))
	slices.Sort(idxs)
	return idxs
}

// pass1 reads every raw part of runs, writes one metric row per request to path (without the
// estimated decomposition), feeds the stage accumulators and returns the ok completions in
// time order.
func (a *aggregator) pass1(ctx context.Context, runs []*runDir, path string, prod schemas.Producer) (completions, error) {
	pw, err := schemas.Create[schemas.MetricRequest](path, prod)
	if err != nil {
		return nil, err
	}
	pr := &partReader{agg: a, index: map[int64]int32{}, kinds: map[string]string{}}
	var done completions
	lastLog := time.Now()
	for _, r := range runs {
		if r.tap, err = loadTap(ctx, r, a.w); err != nil {
			pw.Abort()
			return nil, err
		}
		for _, p := range r.parts {
			if err := a.addPart(ctx, pr, p, pw, &done); err != nil {
				pw.Abort()
				return nil, err
			}
			if time.Since(lastLog) > time.Second {
				lastLog = time.Now()
				a.log.Info("aggregate: reading parts", "requests", a.requestsRead, "chunks", a.chunksRead, "part", p.requests)
			}
		}
	}
	if err := pw.Close(); err != nil {
		return nil, err
	}
	if err := nothingRead(runs); err != nil {
		return nil, err
	}
	done.sort()
	a.outages = a.outs.windows()
	return done, nil
}

// addPart reads part p and writes its requests' metric rows.
func (a *aggregator) addPart(ctx context.Context, pr *partReader, p *part, pw *schemas.Writer[schemas.MetricRequest], done *completions) error {
	states, err := pr.read(ctx, p)
	if err == nil {
		err = a.pendErr
	}
	if err != nil {
		return err
	}
	pr.rows = pr.rows[:0]
	for i := range states {
		s := &states[i]
		if s.lost {
			p.run.lost[s.stage]++ // not a measurement: counted missing (stageNote), no row
			continue
		}
		m := s.metric(a.slo)
		p.run.recorded[m.Stage]++
		p.run.lastSentNs = max(p.run.lastSentNs, s.sentNs)
		if m.DecompositionSource == schemas.DecompositionServer {
			a.srvRows++
		}
		if s.acc != nil {
			s.acc.addRequest(s, &m)
		}
		if m.OK {
			c := completion{endNs: s.endNs(), in: *m.InputTokens, out: *m.OutputTokens, docs: m.Documents}
			*done = append(*done, c)
			a.addCompletion(s, c)
		}
		for _, g := range s.groups {
			if g != nil {
				g.addRequest(s, &m)
			}
		}
		a.outs.add(s)
		pr.rows = append(pr.rows, m)
	}
	return pw.Write(pr.rows)
}

// planDecomposition decides how queue and prefill are estimated: the server's /metrics
// histograms per stage, and a Theil-Sen fit of TTFT on input tokens over the least-loaded
// measured stage with two TTFTs; it checks the requested mode has what it needs.
func (a *aggregator) planDecomposition(runs []*runDir, mode string) (*plan, error) {
	samples, err := readServerMetrics(runs, a.w)
	if err != nil {
		return nil, err
	}
	deltas := histDeltas(samples)
	var least *stageAcc
	dp := &plan{mode: mode, hist: map[int32]histStage{}}
	var measured []int32
	for _, i := range a.stageOrder() {
		acc := a.stages[i]
		meanIn := 0.0
		if acc.completed > 0 {
			meanIn = float64(acc.inTok) / float64(acc.completed)
		}
		dp.hist[i] = histStats(deltas[i], meanIn)
		acc.histPerTokNs = dp.hist[i].perTokNs()
		if acc.info.Warmup && !a.cfg.IncludeWarmup {
			continue
		}
		measured = append(measured, i)
		if len(acc.fit) >= 2 && (least == nil || lessLoaded(acc.info, least.info)) {
			least = acc
		}
	}
	if least != nil {
		dp.fa, dp.fb, dp.fitOK = theilSen(least.fit)
	}
	if err := dp.check(runs, a.srvRows, len(samples), measured, least, a.w); err != nil {
		return nil, err
	}
	return dp, nil
}

// setPrefillPerToken sets each stage's prefill time per input token from the source most of
// its requests used (fitB: the fit's slope).
func (a *aggregator) setPrefillPerToken(fitB float64) {
	for _, acc := range a.stages {
		switch majority(acc.sources) {
		case schemas.DecompositionHistograms:
			acc.prefillPerTok = ptr(acc.histPerTokNs)
		case schemas.DecompositionFit:
			acc.prefillPerTok = ptr(fitB)
		case schemas.DecompositionServer:
			if acc.srvIn > 0 {
				acc.prefillPerTok = ptr(float64(acc.srvPrefill) / float64(acc.srvIn))
			}
		}
	}
}

// stageRows makes the stages.parquet and timeseries.parquet rows of the measured stages, flags
// those short of a host's share (stageGap), gives each the clock uncertainty of the hosts in it,
// and marks the saturation stage (its index, or -1).
func (a *aggregator) stageRows(runs []*runDir, workers map[int32][]workerStats, done *completions) ([]schemas.Stage, []schemas.Timeseries, int32, error) {
	var rows []schemas.Stage
	var accs []*stageAcc
	var ts []schemas.Timeseries
	for _, i := range a.stageOrder() {
		acc := a.stages[i]
		if acc.info.Warmup && !a.cfg.IncludeWarmup {
			continue
		}
		st, err := acc.row(workers[i], done, a.bias)
		if err != nil {
			return nil, nil, -1, err
		}
		setFootprint(&st, runs, workers[i])
		acc.judgeLoad(&st)
		if err := a.flagGap(&st, stageGap(runs, acc.info, a.startNs)); err != nil {
			return nil, nil, -1, err
		}
		st.ClockUncertaintyNs = stageClock(runs, i)
		rows = append(rows, st)
		accs = append(accs, acc)
		ts = append(ts, acc.timeseries(st.ClockUncertaintyNs)...)
	}
	sat := int32(-1)
	if s := saturation(rows, accs); s >= 0 {
		rows[s].Saturated = true
		sat = rows[s].Stage
	}
	for _, r := range rows {
		if r.ClientBound {
			a.log.Warn("client-bound stage: its numbers may be distorted by the client", "stage", r.Stage, "name", r.Name, "reason", r.ClientBoundReason)
		}
	}
	return rows, ts, sat, nil
}

// lessLoaded orders stages by offered load: open loop by target rate before closed loop by
// concurrency.
func lessLoaded(x, y schemas.StageInfo) bool {
	xc, yc := x.Mode == schemas.ModeClosed, y.Mode == schemas.ModeClosed
	if xc != yc {
		return !xc
	}
	if xc {
		return x.Concurrency < y.Concurrency
	}
	return x.Rate < y.Rate
}

func (a *aggregator) pass2(ctx context.Context, in, out string, prod schemas.Producer, dp *plan) (int64, error) {
	f, err := schemas.Open[schemas.MetricRequest](in)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := parquet.NewGenericReader[schemas.MetricRequest](f.File)
	defer r.Close()
	wr, err := schemas.Create[schemas.MetricRequest](out, prod)
	if err != nil {
		return 0, err
	}
	buf := make([]schemas.MetricRequest, 8<<10)
	for {
		if err := ctx.Err(); err != nil {
			wr.Abort()
			return 0, err
		}
		n, rerr := r.Read(buf)
		for i := range buf[:n] {
			m := &buf[i]
			acc := a.stages[m.Stage]
			dp.decompose(m)
			countOutage(a.outages, m)
			if acc != nil && (!m.Warmup || a.cfg.IncludeWarmup) {
				acc.addDecomposition(m)
			}
		}
		if err := wr.Write(buf[:n]); err != nil {
			wr.Abort()
			return 0, err
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				break
			}
			wr.Abort()
			return 0, fmt.Errorf("%s: %w", in, rerr)
		}
	}
	if err := wr.Close(); err != nil {
		return 0, err
	}
	return wr.Rows(), nil
}

// readWorkers reads raw/workers.parquet of every run: per stage, each worker's ρ = (user + sys
// CPU) / wall and GC pause, ordered by shard and worker.
func readWorkers(runs []*runDir, w *warner) (map[int32][]workerStats, error) {
	out := map[int32][]workerStats{}
	for _, r := range runs {
		if r.shards == 0 {
			continue // never captured: checkHosts said so
		}
		path := schemas.FileOf[schemas.Worker](r.dir)
		rows, err := schemas.ReadFile[schemas.Worker](path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, schemas.ErrCorrupt) {
			if werr := w.warn(path, "unreadable or missing (%v): worker utilisation unknown", errors.Unwrap(err)); werr != nil {
				return nil, werr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, x := range rows {
			rho := 0.0
			if x.WallNs > 0 {
				rho = float64(x.CPUUserNs+x.CPUSysNs) / float64(x.WallNs)
			}
			out[x.Stage] = append(out[x.Stage], workerStats{shard: x.Shard, worker: x.Worker, rho: rho, gcNs: x.GCPauseNs,
				inflightPeak: int64(x.InflightPeak), connsOpened: x.ConnsOpened, connsPeak: int64(x.ConnsPeak), connsWarm: int64(x.ConnsWarm)})
		}
	}
	for _, ws := range out {
		slices.SortFunc(ws, func(a, b workerStats) int {
			if a.shard != b.shard {
				return int(a.shard - b.shard)
			}
			return int(a.worker - b.worker)
		})
	}
	return out, nil
}

// readServerMetrics reads the optional raw/server-metrics.parquet of every run.
func readServerMetrics(runs []*runDir, w *warner) ([]schemas.ServerMetric, error) {
	var out []schemas.ServerMetric
	for _, r := range runs {
		path := schemas.FileOf[schemas.ServerMetric](r.dir)
		rows, err := schemas.ReadFile[schemas.ServerMetric](path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if errors.Is(err, schemas.ErrCorrupt) {
			if werr := w.warn(path, "truncated or not Parquet; server histograms not used"); werr != nil {
				return nil, werr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// writeManifest records the aggregate step, the metrics files and the outages in
// OUT/manifest.json: the first run's manifest when OUT is that run, else a copy of it
// describing the merged run.
func writeManifest(out string, runs []*runDir, cfg Config, started time.Time, reqRows, stageRows, tsRows, bdRows int64, outages []schemas.Outage) error {
	path := filepath.Join(out, schemas.ManifestName)
	var m *schemas.Manifest
	if sameDir(out, runs[0].dir) {
		var err error
		if m, err = schemas.ReadManifest(path); err != nil {
			return fmt.Errorf("update manifest: %w", err)
		}
	} else {
		cp := *reference(runs).manifest
		cp.Files = nil
		cp.Steps = slices.Clone(cp.Steps)
		m = &cp
		mergeManifest(m, runs, clockUncertainty(runs))
	}
	m.Steps = append(m.Steps, schemas.Step{Name: schemas.StepAggregate, Args: cfg.Args, Started: started, Ended: time.Now(), Status: schemas.StepOK})
	m.Outages = outages
	m.AddFile(schemas.EntryOf[schemas.MetricRequest](reqRows))
	m.AddFile(schemas.EntryOf[schemas.Stage](stageRows))
	m.AddFile(schemas.EntryOf[schemas.Timeseries](tsRows))
	m.AddFile(schemas.EntryOf[schemas.Breakdown](bdRows))
	if err := m.Write(path); err != nil {
		return fmt.Errorf("update manifest: %w", err)
	}
	return nil
}
