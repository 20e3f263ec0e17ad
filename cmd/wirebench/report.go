package main

import (
	"cmp"
	"context"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/report"
)

// ReportCmd is `wirebench report RUN [RUN...]`.
type ReportCmd struct {
	Runs  []string `arg:"" name:"run" type:"rundir" help:"Run directories (or s3://BUCKET/PREFIX URLs) with metrics/ (from aggregate). With several, the first is the baseline A: profiles are overlaid and a table gives the ratios of every other run to it."`
	Out   string   `short:"o" placeholder:"DIR" help:"Report directory, or s3://BUCKET/PREFIX (default: RUN/report of the first run). Holds index.html (self-contained, inline SVG charts), summary.md with PNG charts, profile.json, stages.csv and one PNG per chart."`
	Open  bool     `help:"Open index.html in a browser when one is available (a desktop session with xdg-open, or macOS)."`
	Quiet bool     `short:"q" help:"Do not print the terminal summary (one line per stage, a warning per client-bound stage) on stdout."`
}

func (c *ReportCmd) Run(ctx context.Context, log *slog.Logger) (err error) {
	// The report goes into -o, else into the first run, whose manifest records it.
	out, runs, err := stageRuns(ctx, cmp.Or(c.Out, c.Runs[0]), c.Runs, metricsOnly, log)
	if err != nil {
		return err
	}
	defer finishRuns(ctx, out, runs, &err, log)
	cfg := report.Config{Runs: dirs(runs), Open: c.Open, Args: os.Args[1:]}
	if c.Out != "" {
		cfg.Out = out.Dir
	} else {
		lock, err := rundir.Acquire(out.Dir, os.Args[1:], log)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	if err := report.Run(ctx, cfg, log); err != nil {
		return err
	}
	if c.Quiet {
		return nil
	}
	return report.Summary(os.Stdout, cfg.Runs...)
}
