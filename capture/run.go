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
	"github.com/wirebench/wirebench/schemas"
)

// Run captures cfg.Run: it starts the workers, gives them a common start time, follows their
// progress, records every finished part in the manifest as it is reported, and ends with the
// manifest's status: complete, interrupted (first Ctrl-C: ctx cancelled; sending stops, in-flight
// requests get DrainTimeout), or failed (target down, a dead worker, an error). Finished parts
// are kept in every case.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (err error) {
	mpath := filepath.Join(cfg.Run, schemas.ManifestName)
	m, err := schemas.ReadManifest(mpath)
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	rc, err := m.RunConfig()
	if err != nil {
		return fmt.Errorf("%s: %w", mpath, err)
	}
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
	if _, err := rc.Target.Resolve(); err != nil {
		return inFile(mpath, err)
	}
	if err := resolve(&cfg, &rc); err != nil {
		return err
	}
	rawDir := filepath.Join(cfg.Run, "raw")
	if old, _ := filepath.Glob(filepath.Join(rawDir, "*.parquet")); len(old) > 0 {
		return fmt.Errorf("%s already holds a capture (%s); capture into a fresh run directory or remove raw/", rawDir, filepath.Base(old[0]))
	}
	planned, total, err := plannedPerStage(cfg.Run, cfg.Shard, cfg.Shards)
	if err != nil {
		return err
	}
	cpus, usable, err := cpuset.Allowed()
	if err != nil {
		return err
	}
	if len(cfg.CPUs) > 0 {
		cpus, usable = cfg.CPUs, min(usable, len(cfg.CPUs))
	}
	pl := locate(ctx, cfg.Target, log)
	cpus = pl.applyColocated(&cfg, cpus, usable)
	if cfg.Workers == 0 {
		cfg.Workers = usable
	}
	exe := cfg.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find wirebench binary for workers: %w", err)
		}
	}

	// The manifest says "running" and what may be missing until the end rewrites it, so a
	// killed coordinator leaves an honest manifest behind.
	step := schemas.Step{Name: schemas.StepCapture, Args: cfg.Args, Started: time.Now(), Status: schemas.StatusRunning}
	m.Steps = append(m.Steps, step)
	stepIdx := len(m.Steps) - 1
	m.Status = schemas.StatusRunning
	if cfg.Shards > 1 {
		m.Shard = fmt.Sprintf("%d/%d", cfg.Shard, cfg.Shards)
	}
	m.Workers = nil
	m.ShardPlanned = planned
	readClock := cfg.Clock
	if readClock == nil {
		readClock = hostclock.Read
	}
	clock := readClock()
	m.Clock = &clock
	if h, err := os.Hostname(); err == nil {
		m.Host = h
	}
	m.Colocation = pl.col
	m.StageUsage = nil
	m.Missing = []string{"capture did not finish (the coordinator stopped while status was running): parts not listed in files, raw/workers.parquet and raw/server-metrics.parquet may be absent"}
	// Room for the last manifest writes when the disk fills up; deleted after them.
	release, err := schemas.Reserve(cfg.Run)
	if err != nil {
		return err
	}
	defer release()
	if err := m.Write(mpath); err != nil {
		return err
	}

	c := &coord{cfg: cfg, log: log, m: m, mpath: mpath, msgs: make(chan workerMsg, 256), exits: make(chan workerExit, cfg.Workers)}
	// The tap starts before any worker dials (its join needs each connection's handshake) and
	// stops after the last worker has exited.
	rec, tapStatus, err := startTap(cfg, pl.local, log)
	if err != nil {
		return err
	}
	m.Tap = tapStatus
	m.OpenFilesLimit = worker.OpenFilesLimit()
	m.MaxConnections = worker.ConnCap(cfg.MaxConns, cfg.MaxInflight, m.OpenFilesLimit)
	defer func() {
		if rec != nil {
			if terr := rec.finish(c.m); terr != nil && err == nil {
				err = fmt.Errorf("packet tap: %w", terr)
			}
		}
		c.finish(err)
		end := hostclock.Worse(clock, readClock())
		c.m.Clock = &end
		if werr := c.m.Write(mpath); werr != nil && err == nil {
			err = werr
		}
	}()
	c.stepIdx = stepIdx
	c.planned, c.total = planned, total
	var pinned []int
	for i := range cfg.Workers {
		if !cfg.NoPin && len(cpus) > 0 {
			pinned = append(pinned, cpus[i%len(cpus)])
		}
	}
	if cfg.KeepAwake {
		if a := keepAwake(exe, pinned, log); a != nil {
			defer a.stop()
			c.spinPID = a.pid()
		}
	}
	for i := range cfg.Workers {
		cpu := -1
		if len(pinned) > 0 {
			cpu = pinned[i]
		}
		wc := worker.Config{Run: cfg.Run, Worker: i, Workers: cfg.Workers, Shard: cfg.Shard, Shards: cfg.Shards, CPU: cpu,
			GOMAXPROCS: cfg.GOMAXPROCS, PacerNice: pl.pacerNice, Target: cfg.Target, Targets: cfg.Targets, Headers: rc.Target.Headers, MaxInflight: cfg.MaxInflight, MaxConns: cfg.MaxConns, Connections: cfg.Connections,
			KeepText: cfg.KeepText, DrainTimeout: cfg.DrainTimeout, Timeout: *cfg.Timeout, TTFTTimeout: cfg.TTFTTimeout, GapTimeout: cfg.GapTimeout,
			ConnectTimeout: cfg.ConnectTimeout, PartRows: cfg.PartRows, PartInterval: cfg.PartInterval, Args: cfg.Args,
			MemoryBudget:       cfg.MemoryBudget,
			NoKernelTimestamps: cfg.NoKernelTimestamps, StampAfterDecode: cfg.StampAfterDecode, Live: cfg.Live != nil}
		if err := c.start(exe, wc); err != nil {
			c.stopAll()
			c.waitAll()
			return err
		}
	}
	return c.loop(ctx, rc.Target)
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
