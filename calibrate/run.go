package calibrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/internal/simproc"
	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/schemas"
)

// Config is one `wirebench calibrate`: a geometric rate sweep of capture against the
// built-in simulator, planned by replay, captured, aggregated, then compared with the
// simulator's own send times.
type Config struct {
	Dir           string        // run directory to create (must not hold a schedule)
	Workers       int           // 0 = the CPUs left after the simulator's
	InputTokens   int           // prompt length (whitespace tokens)
	OutputTokens  int           // tokens per response (ignore_eos)
	MinRate       float64       // first rate of the sweep
	MaxRate       float64       // last rate
	Steps         int           // rates in the sweep (when Factor is 0)
	Factor        float64       // > 1: rates MinRate, MinRate·Factor, ... up to MaxRate
	StageDuration time.Duration // length of each rate
	Warmup        time.Duration // a warmup stage at MinRate first; 0 = none
	TTFT          time.Duration // simulator: fixed time to first token
	ITL           time.Duration // simulator: fixed inter-token gap
	StampLead     time.Duration // simulator: delay between its send stamp and the write (tests)
	Target        string        // a running `wirebench sim` to use instead of starting one
	SingleProcess bool          // the naive client: 1 worker, GOMAXPROCS 1, no kernel stamps, stamp after decoding
	Tap           string        // packet tap of the capture: auto (""), on, off; the single process runs without
	ForRate       float64       // rate to size workers for at ρ = 0.5; 0 = MaxRate
	Exe           string        // wirebench binary (sim, worker); "" = os.Executable()
	ToolVersion   string
	WorkerArgs    []string // global flags for the capture workers (log level and format)
	Args          []string
	Out           io.Writer // the table; nil = none
}

// breakFidelity is the share of a rate's sends, made on time, below which the client counts as
// broken and the sweep stops.
const breakFidelity = 0.9

// Run runs the calibration and writes DIR/calibration.json; DIR is also a normal,
// aggregated run directory. The sweep is one schedule made by replay; capture stops it early
// (Config.StopBelowFidelity = breakFidelity) once a rate ends with under 90% of its sends made
// on time: the client has broken, and faster rates would only measure it more.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*schemas.Calibration, error) {
	rates, err := setup(&cfg)
	if err != nil {
		return nil, err
	}
	lock, err := rundir.Acquire(cfg.Dir, cfg.Args, log)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	cal, err := newCalibration(&cfg)
	if err != nil {
		return nil, err
	}
	target := cfg.Target
	if target == "" {
		url, stop, err := startSim(cfg, cal.SimCPU, log)
		if err != nil {
			return nil, err
		}
		defer stop()
		target = url
	}
	if err := planSweep(ctx, cfg, rates, target, log); err != nil {
		return nil, err
	}
	log.Info("calibrating", "rates", rates, "stage", cfg.StageDuration, "workers", cal.Workers, "single_process", cfg.SingleProcess, "target", target)
	if err := capture.Run(ctx, captureConfig(cfg, cal, target, lock.File()), log); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	var aggErr error
	if _, err := aggregate.Run(ctx, aggregate.Config{Runs: []string{cfg.Dir}, Args: cfg.Args}, log); err != nil {
		aggErr = fmt.Errorf("aggregate %s (calibration.json is still written): %w", cfg.Dir, err)
		log.Error("aggregate", "err", err)
	}
	d, err := loadRaw(ctx, cfg.Dir)
	if err != nil {
		return nil, err
	}
	summarise(cal, d, cfg.ForRate)
	if aggErr == nil { // the bounds are aggregate's
		aggErr = addBounds(cal, cfg.Dir, d)
	}
	if err := write(cal, filepath.Join(cfg.Dir, "calibration.json")); err != nil {
		return cal, err
	}
	if cfg.Out != nil {
		if err := WriteTable(cfg.Out, cal); err != nil {
			return cal, fmt.Errorf("write table: %w", err)
		}
	}
	return cal, aggErr
}

// setup checks cfg and fills in its defaults; it returns the rates of the sweep.
func setup(cfg *Config) ([]float64, error) {
	if err := checkCalibrate(cfg); err != nil {
		return nil, err
	}
	rates, err := sweepRates(cfg.MinRate, cfg.MaxRate, cfg.Steps, cfg.Factor)
	if err != nil {
		return nil, err
	}
	if cfg.Exe == "" {
		if cfg.Exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find wirebench binary: %w", err)
		}
	}
	if ents, _ := os.ReadDir(cfg.Dir); len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: calibrate writes a fresh run directory", cfg.Dir)
	}
	if cfg.ForRate == 0 {
		cfg.ForRate = cfg.MaxRate
	}
	return rates, nil
}

// newCalibration is the calibration's record before the sweep: the machine, the simulator's
// timing and where the simulator and the workers run. The single process turns cfg's tap off.
func newCalibration(cfg *Config) (*schemas.Calibration, error) {
	cal := &schemas.Calibration{SimCPU: -1, SingleProcess: cfg.SingleProcess, Kernel: !cfg.SingleProcess,
		InputTokens: cfg.InputTokens, OutputTokens: cfg.OutputTokens, SimTTFTNs: int64(cfg.TTFT), SimITLNs: int64(cfg.ITL),
		SimStampLead: int64(cfg.StampLead), StageNs: int64(cfg.StageDuration), FaithfulRule: faithfulRule, ForRate: cfg.ForRate}
	cal.Host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		cal.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	cpus, usable, err := cpuset.Allowed()
	if err != nil {
		return nil, err
	}
	cal.CPUs = usable
	workerCPUs := placeSim(cal, cfg.Target, cpus)
	if cal.Workers = cfg.Workers; cal.Workers == 0 {
		cal.Workers = max(1, min(len(workerCPUs), usable-boolInt(cal.SimCPU >= 0)))
		if cal.SharedCPUs { // the simulator is a co-located server: capture's default beside one
			cal.Workers = capture.ColocatedWorkers(usable)
			cal.Notes = append(cal.Notes, fmt.Sprintf("%d worker(s), capture's default beside a server on the same CPUs (half of them; --workers overrides)", cal.Workers))
		}
	}
	cal.GOMAXPROCS = capture.DefaultGOMAXPROCS
	if cfg.SingleProcess {
		cal.Workers, cal.GOMAXPROCS = 1, 1
		cfg.Tap = capture.TapOff // the naive client has no tap
	}
	for i := range cal.Workers {
		cal.WorkerCPUs = append(cal.WorkerCPUs, workerCPUs[i%len(workerCPUs)])
	}
	return cal, nil
}

// placeSim gives the simulator the last allowed CPU of its own when there are 3 or more (none
// when calibrating against a running target); with fewer, client and simulator share them and
// the notes say so. It returns the CPUs left to the workers.
func placeSim(cal *schemas.Calibration, target string, cpus []int) []int {
	switch {
	case target != "":
		cal.Notes = append(cal.Notes, "calibrating against "+target+" (not started by calibrate): its CPU placement is unknown")
	case cal.CPUs >= 3 && len(cpus) >= 3:
		cal.SimCPU = cpus[len(cpus)-1]
		return cpus[:len(cpus)-1]
	default:
		cal.SharedCPUs = true
		cal.Notes = append(cal.Notes, fmt.Sprintf("this machine has %d usable CPUs (fewer than 3): the client and the simulator SHARE them, so the simulator's own CPU use and the client's interfere; figures are pessimistic", cal.CPUs))
	}
	return cpus
}

// planSweep plans the sweep into cfg.Dir with replay, the one place schedules are made, and
// keeps its config as DIR/calibrate.yaml. It plans what that file says (LoadConfig), so the
// kept config is the one planned and an error in it (a bad --target) names the file's line, as
// for any config file.
func planSweep(ctx context.Context, cfg Config, rates []float64, target string, log *slog.Logger) error {
	sweep, err := sweepConfig(cfg, rates, target)
	if err != nil {
		return fmt.Errorf("plan calibration: %w", err)
	}
	path := filepath.Join(cfg.Dir, "calibrate.yaml")
	if err := replay.WriteConfig(path, sweep, "Written by wirebench calibrate: one constant-rate stage per rate of the sweep."); err != nil {
		return fmt.Errorf("write calibration config: %w", err)
	}
	if sweep, err = replay.LoadConfig(path); err != nil {
		return fmt.Errorf("plan calibration: %w", err)
	}
	if err := replay.Plan(ctx, sweep, replay.Options{ConfigPath: path, Out: cfg.Dir, ToolVersion: cfg.ToolVersion, Args: cfg.Args}, log); err != nil {
		return fmt.Errorf("plan calibration: %w", err)
	}
	return nil
}

// sweepConfig is the replay config of the sweep: a constant run (internal/construn) of one
// stage per rate against the simulator's model "sim", after a warmup at the first rate when
// cfg asks for one.
func sweepConfig(cfg Config, rates []float64, target string) (*schemas.Config, error) {
	stages := make([]construn.Stage, len(rates))
	for i, r := range rates {
		stages[i] = construn.Stage{Rate: r, Duration: cfg.StageDuration, InputTokens: int32(cfg.InputTokens), MaxTokens: int32(cfg.OutputTokens)}
	}
	timeout := schemas.Duration(60 * time.Second)
	sweep, err := construn.Config(schemas.Target{URL: target, API: schemas.APICompletions, Model: "sim", Timeout: &timeout}, stages)
	if err != nil {
		return nil, err
	}
	sweep.Name, sweep.Seed = "calibrate", 1
	if cfg.Warmup > 0 {
		sweep.Load.Warmup = &schemas.StageSpec{Rate: rates[0], Duration: schemas.Duration(cfg.Warmup), Arrival: schemas.ArrivalConstant}
	}
	return sweep, nil
}

// captureConfig is the capture of the sweep: the calibration's workers on their CPUs, the naive
// client's settings for the single process, and the early stop once the client breaks.
func captureConfig(cfg Config, cal *schemas.Calibration, target string, lock *os.File) capture.Config {
	return capture.Config{Run: cfg.Dir, Workers: cal.Workers, Target: target, CPUs: cal.WorkerCPUs,
		Options:            capture.Options{GOMAXPROCS: cal.GOMAXPROCS, DrainTimeout: 5 * time.Second},
		NoKernelTimestamps: cfg.SingleProcess, StampAfterDecode: cfg.SingleProcess, Exe: cfg.Exe, Args: cfg.Args, WorkerArgs: cfg.WorkerArgs,
		CoordOptions: capture.CoordOptions{Tap: cmp.Or(cfg.Tap, capture.TapAuto), StopBelowFidelity: breakFidelity},
		Lock:         lock}
}

// summarise fills in the calibration's rates and what follows from them: the faithful rate, the
// client's CPU there, the worker CPU model and the workers forRate needs.
func summarise(cal *schemas.Calibration, d *rawData, forRate float64) {
	cal.Tap = d.tap != nil && len(d.tap.Rx) > 0
	// Rates never sent (the sweep stopped early) are left out.
	for _, r := range analyse(d) {
		if r.Requests > 0 {
			cal.Rates = append(cal.Rates, r)
		}
	}
	cal.FaithfulRate = faithfulRate(cal.Rates)
	cal.FaithfulCPUPerReqNs = faithfulCPU(cal.Rates, cal.FaithfulRate)
	cal.Fit = fitCPU(cal.Rates, cal.Workers)
	cal.WorkersFor = workersFor(cal.Fit, forRate)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkCalibrate(cfg *Config) error {
	var errs []error
	if cfg.Dir == "" {
		errs = append(errs, errors.New("output directory: required (-o DIR)"))
	}
	if cfg.InputTokens < 1 || cfg.InputTokens > replay.MaxLength {
		errs = append(errs, fmt.Errorf("input tokens %d: want 1..%d", cfg.InputTokens, replay.MaxLength))
	}
	if cfg.OutputTokens < 1 || cfg.OutputTokens > replay.MaxLength {
		errs = append(errs, fmt.Errorf("output tokens %d: want 1..%d", cfg.OutputTokens, replay.MaxLength))
	}
	if cfg.StageDuration < time.Second {
		errs = append(errs, fmt.Errorf("stage duration %v: want >= 1s", cfg.StageDuration))
	}
	if cfg.TTFT <= 0 || cfg.ITL <= 0 {
		errs = append(errs, fmt.Errorf("sim ttft %v and itl %v: want both > 0 (fixed mode)", cfg.TTFT, cfg.ITL))
	}
	if cfg.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d: want >= 0 (0 = the CPUs left after the simulator's)", cfg.Workers))
	}
	if cfg.ForRate < 0 {
		errs = append(errs, fmt.Errorf("for-rate %g: want >= 0", cfg.ForRate))
	}
	if cfg.SingleProcess && cfg.Workers > 1 {
		errs = append(errs, fmt.Errorf("--single-process runs one worker; --workers %d contradicts it", cfg.Workers))
	}
	return errors.Join(errs...)
}

// startSim starts the calibration's `wirebench sim` (fixed timing, no queueing) on a free
// loopback port, pinned to cpu when cpu >= 0.
func startSim(cfg Config, cpu int, log *slog.Logger) (string, func(), error) {
	args := []string{"--log-level", "error", "sim", "--listen", "127.0.0.1:0", "--mode", "fixed",
		"--ttft", cfg.TTFT.String(), "--itl", cfg.ITL.String(), "--max-num-seqs", "0", "--stamp-lead", cfg.StampLead.String()}
	url, stop, err := simproc.Start(cfg.Exe, args, cpu, os.Stderr, log)
	if err == nil {
		log.Info("sim started", "url", url, "cpu", cpu, "ttft", cfg.TTFT, "itl", cfg.ITL, "stamp_lead", cfg.StampLead)
	}
	return url, stop, err
}

// loadRaw reads the stages and every raw file the manifest lists.
func loadRaw(ctx context.Context, dir string) (*rawData, error) {
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	d := &rawData{stages: m.Stages, usage: m.StageUsage}
	if d.tap, err = aggregate.LoadTapTimes(ctx, dir); err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		p := filepath.Join(dir, f.Path)
		switch f.Kind {
		case schemas.KindOf[schemas.RawRequest]().Name:
			rows, err := schemas.ReadFile[schemas.RawRequest](p)
			if err != nil {
				return nil, err
			}
			d.requests = append(d.requests, rows...)
		case schemas.KindOf[schemas.RawChunk]().Name:
			rows, err := schemas.ReadFile[schemas.RawChunk](p)
			if err != nil {
				return nil, err
			}
			d.chunks = append(d.chunks, rows...)
		case schemas.KindOf[schemas.Worker]().Name:
			rows, err := schemas.ReadFile[schemas.Worker](p)
			if err != nil {
				return nil, err
			}
			d.workers = append(d.workers, rows...)
		}
	}
	slices.SortStableFunc(d.chunks, func(a, b schemas.RawChunk) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Index, b.Index))
	})
	if len(d.requests) == 0 {
		return nil, fmt.Errorf("%s: the capture recorded no request", dir)
	}
	return d, nil
}
