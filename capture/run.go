package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/hostclock"
	"github.com/wirebench/wirebench/internal/secret"
	"github.com/wirebench/wirebench/schemas"
)

// Run captures cfg.Run: it starts the workers, gives them a common start time, follows their
// progress, records every finished part in the manifest as it is reported, and ends with the
// manifest's status: complete, interrupted (first Ctrl-C: ctx cancelled; sending stops, in-flight
// requests get DrainTimeout), or failed (target down, a dead worker, an error). Finished parts
// are kept in every case.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (err error) {
	p, err := prepare(ctx, cfg, log)
	if err != nil {
		return err
	}
	readClock := p.cfg.Clock
	if readClock == nil {
		readClock = hostclock.Read
	}
	clock := readClock()
	c := newCoord(p, clock, log)
	// Room for the last manifest writes when the disk fills up; deleted after them.
	release, err := Reserve(p.cfg.Run)
	if err != nil {
		return err
	}
	defer release()
	if err := c.m.Write(c.mpath); err != nil {
		return err
	}
	// The tap starts before any worker dials (its join needs each connection's handshake) and
	// stops after the last worker has exited.
	rec, tapStatus, err := startTap(p.cfg, p.pl.local, log)
	if err != nil {
		return err
	}
	c.m.Tap = tapStatus
	p.cfg.ReadCoalesce = p.pl.readCoalesce(p.cfg.ReadCoalesce, rec != nil, log)
	c.m.ReadCoalesceNs = p.cfg.ReadCoalesce.Nanoseconds()
	c.m.OpenFilesLimit = worker.OpenFilesLimit()
	c.m.MaxConnections = worker.ConnCap(p.cfg.MaxConnections, p.cfg.MaxInflight, c.m.OpenFilesLimit)
	defer func() {
		if rec != nil {
			if terr := rec.finish(c.m); terr != nil && err == nil {
				err = fmt.Errorf("packet tap: %w", terr)
			}
		}
		c.finish(err)
		end := hostclock.Worse(clock, readClock())
		c.m.Clock = &end
		if werr := c.m.Write(c.mpath); werr != nil && err == nil {
			err = werr
		}
	}()
	stopAwake, err := c.startWorkers(p)
	if err != nil {
		return err
	}
	defer stopAwake()
	return c.loop(ctx, p.rc.Target)
}

// prepared is a capture whose options are resolved and checked, before anything is written or
// started.
type prepared struct {
	cfg     Config
	rc      schemas.Config
	m       *schemas.Manifest
	mpath   string
	planned map[int32]int64 // this host's planned requests per stage
	total   int64
	pl      placement
	cpus    []int  // the CPUs to pin workers to
	exe     string // the binary that runs `worker`
}

// MaxWorkersPerCPU bounds the worker processes: workers share the CPUs they are pinned to
// (worker i on CPU i mod n), and a mistyped count (100,000) would otherwise start that many
// processes and exhaust the machine's memory.
const MaxWorkersPerCPU = 4

// prepare reads the manifest, resolves cfg against its config and checks everything that can be
// checked before the capture starts: variables and secrets, an empty raw/, the schedule, the
// CPUs and where the target runs.
func prepare(ctx context.Context, cfg Config, log *slog.Logger) (*prepared, error) {
	p := &prepared{mpath: filepath.Join(cfg.Run, schemas.ManifestName)}
	var err error
	if p.m, err = schemas.ReadManifest(p.mpath); err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if p.rc, err = p.m.RunConfig(); err != nil {
		return nil, fmt.Errorf("%s: %w", p.mpath, err)
	}
	rc := &p.rc
	if s := cfg.Secrets; s != nil {
		rc.Target.URL, rc.Target.MetricsURL, rc.Target.Headers = s.URL, s.MetricsURL, s.Headers
		if len(s.URLs) == len(rc.Target.URLs) {
			rc.Target.URLs = s.URLs // the manifest's, with their user:password
		}
	}
	if cfg.Target != "" {
		rc.Target.URL = cfg.Target
	}
	// Every variable set, no secret missing, before anything is written or started; from here
	// on, the target's secrets are kept out of what this process writes and logs.
	if _, err := secret.Resolve(rc.Target); err != nil {
		return nil, inFile(p.mpath, err)
	}
	if err := resolve(&cfg, rc); err != nil {
		return nil, err
	}
	rawDir := filepath.Join(cfg.Run, "raw")
	if old, _ := filepath.Glob(filepath.Join(rawDir, "*.parquet")); len(old) > 0 {
		return nil, fmt.Errorf("%s already holds a capture (%s); capture into a fresh run directory or remove raw/", rawDir, filepath.Base(old[0]))
	}
	if p.planned, p.total, err = plannedPerStage(cfg.Run, cfg.Shard, cfg.Shards); err != nil {
		return nil, err
	}
	cpus, usable, err := cpuset.Allowed()
	if err != nil {
		return nil, err
	}
	if len(cfg.CPUs) > 0 {
		cpus, usable = cfg.CPUs, min(usable, len(cfg.CPUs))
	}
	p.pl = locate(ctx, cfg.Target, log)
	p.cpus = p.pl.applyColocated(&cfg, cpus, usable)
	if cfg.Workers == 0 {
		cfg.Workers = usable
	}
	if limit := MaxWorkersPerCPU * len(cpus); cfg.Workers > limit {
		return nil, fmt.Errorf("workers %d: at most %d here (%d for each of the %d CPUs workers may be pinned to): each worker is a process", cfg.Workers, limit, MaxWorkersPerCPU, len(cpus))
	}
	if p.exe = cfg.Exe; p.exe == "" {
		if p.exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find wirebench binary for workers: %w", err)
		}
	}
	p.cfg = cfg
	return p, nil
}

// newCoord makes the coordinator of p and marks its manifest running (in memory; Run writes it):
// the manifest says "running" and what may be missing until the end rewrites it, so a killed
// coordinator leaves an honest manifest behind.
func newCoord(p *prepared, clock schemas.Clock, log *slog.Logger) *coord {
	cfg, m := p.cfg, p.m
	m.Steps = append(m.Steps, schemas.Step{Name: schemas.StepCapture, Args: cfg.Args, Started: time.Now(), Status: schemas.StatusRunning})
	m.Status = schemas.StatusRunning
	if cfg.Shards > 1 {
		m.Shard = fmt.Sprintf("%d/%d", cfg.Shard, cfg.Shards)
	}
	m.Workers = nil
	m.ShardPlanned = p.planned
	m.Clock = &clock
	if h, err := os.Hostname(); err == nil {
		m.Host = h
	}
	m.Colocation = p.pl.col
	m.StageUsage = nil
	m.Missing = []string{"capture did not finish (the coordinator stopped while status was running): parts not listed in files, raw/workers.parquet and raw/server-metrics.parquet may be absent"}
	return &coord{cfg: cfg, log: log, m: m, mpath: p.mpath, stepIdx: len(m.Steps) - 1, planned: p.planned, total: p.total,
		msgs: make(chan workerMsg, 256), exits: make(chan workerExit, cfg.Workers)}
}

// startWorkers keeps the workers' CPUs awake when asked to and starts one worker process per
// Config.Workers, pinned round-robin to p.cpus; it returns what stops the keep-awake spinners.
// When a worker cannot start, those started are stopped and waited for.
func (c *coord) startWorkers(p *prepared) (stopAwake func(), err error) {
	cfg := p.cfg
	var pinned []int
	for i := range cfg.Workers {
		if !cfg.NoPin && len(p.cpus) > 0 {
			pinned = append(pinned, p.cpus[i%len(p.cpus)])
		}
	}
	stopAwake = func() {}
	if cfg.KeepAwake {
		if a := keepAwake(p.exe, pinned, c.log); a != nil {
			stopAwake = a.stop
			c.spinPID = a.pid()
		}
	}
	for i := range cfg.Workers {
		cpu := -1
		if len(pinned) > 0 {
			cpu = pinned[i]
		}
		wc := worker.Config{Run: cfg.Run, Worker: i, Workers: cfg.Workers, Shard: cfg.Shard, Shards: cfg.Shards, CPU: cpu,
			PacerNice: p.pl.pacerNice, Target: cfg.Target, Targets: cfg.Targets, Headers: p.rc.Target.Headers, Args: cfg.Args,
			Options: cfg.Options, NoKernelTimestamps: cfg.NoKernelTimestamps, StampAfterDecode: cfg.StampAfterDecode, Live: cfg.Live != nil}
		if err := c.start(p.exe, wc); err != nil {
			c.stopAll()
			c.waitAll()
			stopAwake()
			return nil, err
		}
	}
	return stopAwake, nil
}

// inFile prefixes each of the errors joined in err with the file they are about.
func inFile(path string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s: %w", path, e)
	}
	return errors.Join(out...)
}

// plannedPerStage counts this host's planned requests per stage.
func plannedPerStage(run string, shard, shards int) (map[int32]int64, int64, error) {
	rows, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](run))
	if err != nil {
		return nil, 0, fmt.Errorf("read schedule: %w", err)
	}
	out := map[int32]int64{}
	var total int64
	for i := range rows {
		if s, _ := worker.Owner(&rows[i], shards, 1); s == shard {
			out[rows[i].Stage]++
			total++
		}
	}
	return out, total, nil
}
