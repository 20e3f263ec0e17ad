package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/search"
)

// SearchCmd is `wirebench search CONFIG -o DIR`: the highest rate at which the config's SLOs
// hold, one run directory per step.
type SearchCmd struct {
	Config      string       `arg:"" type:"existingfile" help:"Run config (YAML) with a search section (min_rate, max_rate; goodput, precision, duration, arrival, max_steps)."`
	Out         string       `short:"o" required:"" placeholder:"DIR" help:"Search directory to create: DIR/step-NN (one run each), DIR/search.json, DIR/summary.md; or s3://BUCKET/PREFIX, uploaded when the search ends."`
	Target      string       `placeholder:"URL" help:"Base URL of the server under test; overrides target.url of the config."`
	Calibration string       `placeholder:"FILE" help:"A calibrate DIR/calibration.json of this machine: the search says so when search.max_rate is past its faithful rate."`
	Capture     CaptureFlags `embed:""`
}

// Help is shown under `wirebench search --help`.
func (c *SearchCmd) Help() string {
	return `Runs one step per rate, each an ordinary run directory (replay, capture, aggregate: 'wirebench
report DIR/step-NN' draws it) with the config's warmup, workload and SLOs and one stage of
search.duration at the step's rate. A step passes when its goodput share is at least
search.goodput; it is untrusted, neither pass nor fail, when its load or latency verdict is not
green, and the search then stops and says why (e.g. the client could not deliver the rate). The
rates bisect [min_rate, max_rate] geometrically until a passing and a failing rate are within
search.precision of each other; a step already certain to fail (more misses than the goodput
allows) is stopped early. See docs/design/search.md.`
}

func (c *SearchCmd) Run(ctx context.Context, log *slog.Logger, lf logFlags) (err error) {
	args := os.Args[1:]
	ccfg, err := c.Capture.config("", c.Target, args, lf)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	stopLive, err := c.Capture.serveLive(ctx, &ccfg, log)
	if err != nil {
		return err
	}
	defer stopLive()
	dir, err := stageRun(ctx, c.Out, true, args, log)
	if err != nil {
		return err
	}
	defer finishRun(ctx, dir, &err, log)
	cfg := search.Config{ConfigPath: c.Config, Dir: dir.Dir, Target: c.Target, Calibration: c.Calibration, Capture: ccfg,
		ToolVersion: Version(), Args: args, Out: os.Stdout}
	_, err = search.Run(ctx, cfg, log)
	if errors.Is(err, capture.ErrInterrupted) {
		return &exitError{code: 130, err: err}
	}
	return err
}
