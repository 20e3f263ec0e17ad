package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/replay"
)

// ReplayCmd plans a run: it turns a config into RUN/schedule/*.parquet and RUN/manifest.json.
type ReplayCmd struct {
	Config string `arg:"" help:"Run config (YAML): target, load, workload, tokenizer, slo, capture. See examples/."`
	Out    string `short:"o" placeholder:"RUN" help:"Run directory to write schedule/requests.parquet, schedule/prompts.parquet and manifest.json into, or s3://BUCKET/PREFIX (required unless --dry-run)."`
	Target string `placeholder:"URL" help:"Base URL of the server under test (e.g. http://127.0.0.1:8000); overrides target.url of the config."`
	DryRun bool   `help:"Plan and print a table per stage (requests, rate, duration, input/output token percentiles); write nothing."`
	Force  bool   `help:"Replace the run RUN holds: once the new schedule is planned, RUN's raw/, metrics/ and report/ are removed and the schedule and manifest replaced (without --force a RUN holding a run is refused)."`
}

func (c *ReplayCmd) Run(ctx context.Context, log *slog.Logger) (err error) {
	opts := replay.Options{
		ConfigPath:  c.Config,
		Out:         c.Out,
		Target:      c.Target,
		DryRun:      c.DryRun,
		Force:       c.Force,
		ToolVersion: Version(),
		Args:        os.Args[1:],
		DryRunOut:   os.Stdout,
	}
	if c.DryRun || c.Out == "" {
		return replay.Run(ctx, opts, log)
	}
	run, err := stageRun(ctx, c.Out, true, os.Args[1:], log)
	if err != nil {
		return err
	}
	defer finishRun(ctx, run, &err, log)
	opts.Out = run.Dir
	lock, err := rundir.Acquire(run.Dir, os.Args[1:], log)
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := replay.Run(ctx, opts, log); err != nil {
		lock.RemoveIfCreated()
		return err
	}
	return nil
}
