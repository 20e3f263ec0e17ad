package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/report"
	"github.com/wirebench/wirebench/schemas"
)

// RunCmd is `wirebench run CONFIG -o RUN`: replay, capture, aggregate and report in one go.
type RunCmd struct {
	Config  string       `arg:"" help:"Run config (YAML). Start from examples/my-server.yaml."`
	Out     string       `short:"o" required:"" placeholder:"RUN" help:"Run directory to create, or s3://BUCKET/PREFIX: written to a local staging copy, parts uploaded as they roll, the manifest last (see README)."`
	Target  string       `placeholder:"URL" help:"Base URL of the server under test; overrides target.url of the config."`
	Force   bool         `help:"Replace the run RUN holds (see replay --force); the config and every capture option are checked first, so a run that would fail to start leaves the old one whole."`
	Open    bool         `help:"Open the report in a browser when one is available."`
	Capture CaptureFlags `embed:""`
}

func (c *RunCmd) Run(ctx context.Context, log *slog.Logger, lf logFlags) (err error) {
	args := os.Args[1:]
	cfg, err := c.Capture.config(c.Out, c.Target, args, lf)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	stopLive, err := c.Capture.serveLive(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer stopLive()
	// The manifest keeps the target's secrets redacted: capture gets them from the config.
	loaded, err := replay.LoadConfig(c.Config)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	cfg.Secrets = &loaded.Target
	run, err := stageRun(ctx, c.Out, true, args, log)
	if err != nil {
		return err
	}
	defer finishRun(ctx, run, &err, log)
	out := run.Dir
	cfg.Run = out
	lock, err := rundir.Acquire(out, args, log)
	if err != nil {
		return err
	}
	defer lock.Release()
	cfg.Lock = lock.File()
	check := func(rc *schemas.Config) error { return capture.Check(cfg, rc) }
	if err := replay.Run(ctx, replay.Options{ConfigPath: c.Config, Out: out, Target: c.Target, Force: c.Force,
		ToolVersion: Version(), Args: args, NeedEnv: true, Check: check}, log); err != nil {
		lock.RemoveIfCreated()
		return fmt.Errorf("replay: %w", err)
	}
	// Room to record a failure in the manifest when the disk fills up (see capture.Reserve).
	release, err := capture.Reserve(out)
	if err != nil {
		return err
	}
	defer release()
	stop := run.Watch(ctx)
	capErr := capture.Run(ctx, cfg, log)
	stop()
	interrupted := errors.Is(capErr, capture.ErrInterrupted)
	if capErr != nil && !interrupted && !errors.Is(capErr, capture.ErrWorkerDied) {
		return fmt.Errorf("capture: %w", capErr)
	}
	// An interrupted capture keeps every finished part: aggregate and report what is there,
	// even though the context is cancelled (a second Ctrl-C still exits at once).
	actx := context.WithoutCancel(ctx)
	started := time.Now()
	if _, err := aggregate.Run(actx, aggregate.Config{Runs: []string{out}, Args: args}, log); err != nil {
		return recordFailure(out, schemas.StepAggregate, started, args, err, log)
	}
	started = time.Now()
	if err := report.Run(actx, report.Config{Runs: []string{out}, Open: c.Open, Args: args}, log); err != nil {
		return recordFailure(out, schemas.StepReport, started, args, err, log)
	}
	if err := report.Summary(os.Stdout, out); err != nil {
		return err
	}
	fmt.Printf("report: %s\n", run.Show(filepath.Join(out, "report", report.IndexName)))
	if interrupted {
		return &exitError{code: 130, err: capErr}
	}
	return capErr
}

// recordFailure marks the run failed in its manifest, naming the step and its error (a full
// disk names the file it could not write), and returns the error for the exit status.
func recordFailure(dir, step string, started time.Time, args []string, err error, log *slog.Logger) error {
	err = fmt.Errorf("%s: %w", step, err)
	if merr := markFailed(dir, schemas.Step{Name: step, Args: args, Started: started, Ended: time.Now(),
		Status: schemas.StatusFailed, Error: err.Error()}); merr != nil {
		log.Error("the manifest does not say the run failed", "err", merr)
	}
	return err
}

// markFailed appends the failed step to RUN/manifest.json and sets the run's status to failed.
func markFailed(dir string, step schemas.Step) error {
	path := filepath.Join(dir, schemas.ManifestName)
	m, err := schemas.ReadManifest(path)
	if err != nil {
		return err
	}
	m.Steps = append(m.Steps, step)
	m.Status = schemas.StatusFailed
	return m.Write(path)
}
