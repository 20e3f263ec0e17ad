package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/report"
)

// RunCmd is `wirebench run CONFIG -o RUN`: replay, capture, aggregate and report in one go.
type RunCmd struct {
	Config  string       `arg:"" type:"existingfile" help:"Run config (YAML). See examples/."`
	Out     string       `short:"o" required:"" placeholder:"RUN" help:"Run directory to create."`
	Target  string       `placeholder:"URL" help:"Base URL of the server under test; overrides target.url of the config."`
	Force   bool         `help:"Overwrite an existing non-empty RUN/schedule."`
	Open    bool         `help:"Open the report in a browser when one is available."`
	Capture CaptureFlags `embed:""`
}

func (c *RunCmd) Run(ctx context.Context, log *slog.Logger) error {
	args := os.Args[1:]
	if err := replay.Run(ctx, replay.Options{ConfigPath: c.Config, Out: c.Out, Target: c.Target, Force: c.Force,
		ToolVersion: Version(), Args: args}, log); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	cfg, err := c.Capture.config(c.Out, c.Target, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	capErr := capture.Run(ctx, cfg, log)
	interrupted := errors.Is(capErr, capture.ErrInterrupted)
	if capErr != nil && !interrupted && !errors.Is(capErr, capture.ErrWorkerDied) {
		return fmt.Errorf("capture: %w", capErr)
	}
	// An interrupted capture keeps every finished part: aggregate and report what is there,
	// even though the context is cancelled (a second Ctrl-C still exits at once).
	actx := context.WithoutCancel(ctx)
	if _, err := aggregate.Run(actx, aggregate.Config{Runs: []string{c.Out}, Args: args}, log); err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	if err := report.Run(actx, report.Config{Runs: []string{c.Out}, Open: c.Open, Args: args}, log); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := report.Summary(os.Stdout, c.Out); err != nil {
		return err
	}
	if interrupted {
		return &exitError{code: 130, err: capErr}
	}
	return capErr
}
