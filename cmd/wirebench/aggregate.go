package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/report"
	"github.com/wirebench/wirebench/schemas"
)

// AggregateCmd derives per-request, per-stage and per-100 ms metrics from raw shards.
type AggregateCmd struct {
	Runs           []string      `arg:"" name:"RUN" type:"rundir" help:"Run directories (or s3://BUCKET/PREFIX URLs) to aggregate. Several directories are the hosts of one distributed run (capture --shard i/n each) and must share a run id; their times are taken as they are, and how far apart their clocks may be (each host's kernel max error) is carried as clock_uncertainty_ns on stage windows and rates (see docs/distributed.md)."`
	Out            string        `short:"o" placeholder:"DIR" help:"Directory (or s3://BUCKET/PREFIX) that receives metrics/requests.parquet, stages.parquet, timeseries.parquet and the aggregate step in manifest.json (default: the first RUN). A DIR holding another run (another run id, or a capture of its own) is refused unless --force."`
	Force          bool          `help:"Let -o DIR replace the run it holds: its schedule/, raw/ and report/ are removed once the RUNs have been read and checked."`
	Strict         bool          `help:"Treat warnings (a missing, short or damaged part, requests without their events, a manifest that disagrees with the files, a dead worker) as errors; the failure is recorded in the manifest's steps."`
	ClockTolerance time.Duration `default:"1ms" help:"When the hosts read different clocks (different machines), warn (with --strict: fail) about a host whose clock is not synchronised or whose kernel max error exceeds this."`
	IncludeWarmup  bool          `help:"Count warmup requests and warmup stages in the stage metrics (they are always in requests.parquet)."`
	Decomposition  string        `enum:"auto,server,histograms,fit" default:"auto" placeholder:"SOURCE" help:"Source of each request's queue/prefill/decode split (column decomposition_source): server (per-request timings the server sent, e.g. the built-in sim), histograms (per-stage deltas of the vLLM prefill histogram scraped from target.metrics_url), fit (Theil-Sen TTFT = a + b*I on the least-loaded stage), or auto: server, else histograms, else fit, per request. A forced source the run cannot support is an error naming what is missing. One of: ${enum}."`
}

func (c *AggregateCmd) Run(ctx context.Context, log *slog.Logger) (err error) {
	out, runs, err := stageRuns(ctx, cmp.Or(c.Out, c.Runs[0]), c.Runs, []string{"report/"}, log)
	if err != nil {
		return err
	}
	defer finishRuns(ctx, out, runs, &err, log)
	lock, err := rundir.Acquire(out.Dir, os.Args[1:], log)
	if err != nil {
		return err
	}
	defer lock.Release()
	cfg := aggregate.Config{
		Runs: dirs(runs), Force: c.Force, Strict: c.Strict, IncludeWarmup: c.IncludeWarmup,
		Decomposition: c.Decomposition, ClockTolerance: c.ClockTolerance, Args: os.Args[1:],
	}
	if c.Out != "" {
		cfg.Out = out.Dir
	}
	started := time.Now()
	sum, err := aggregate.Run(ctx, cfg, log)
	if err != nil {
		if rerr := aggregate.RecordFailure(cfg, started, err); rerr != nil {
			log.Warn("the manifest does not record the failed aggregate step", "err", rerr)
		}
		lock.RemoveIfCreated()
		return err
	}
	level, sentence := report.Trust(sum.Stages)
	fmt.Printf("trust %s: %s\n", level, sentence)
	labels := report.StageLabels(sum.Stages)
	for i, s := range sum.Stages {
		fmt.Printf("stage %s: %d requests, %d ok, %s req/s, ttft p50 %s, p99 %s, output %s tok/s, %d connections opened (%d open at most)%s\n",
			labels[i], s.Requests, s.Completed, fixed(s.CompletionRate, 1), msBound(s.TTFT.P50, s.TTFT.P50Lo, s.TTFT.P50Hi),
			msBound(s.TTFT.P99, s.TTFT.P99Lo, s.TTFT.P99Hi), fixed(s.OutputTPS, 0), s.ConnectionsOpened, s.ConnectionsPeak, stageMarks(&s))
	}
	return nil
}

// none stands for a figure over nothing (null in the files), never 0.
const none = "–"

// msBound formats a percentile and its bound in milliseconds: "12.345 ms [12.301, 12.345]";
// none for a stage without the figure.
func msBound(v, lo, hi *int64) string {
	if v == nil || lo == nil || hi == nil {
		return none
	}
	return fmt.Sprintf("%.3f ms [%.3f, %.3f]", float64(*v)/1e6, float64(*lo)/1e6, float64(*hi)/1e6)
}

// fixed formats a nullable rate with prec decimals; none for null.
func fixed(v *float64, prec int) string {
	if v == nil {
		return none
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

// stageMarks marks the saturation stage and the failed verdicts, with their reasons.
func stageMarks(s *schemas.Stage) string {
	mark := ""
	if s.Saturated {
		mark += " SATURATED"
	}
	if s.Overloaded {
		mark += " OVERLOADED (" + s.OverloadedReason + "; no intervals)"
	}
	if s.ClientBound {
		mark += " CLIENT-BOUND (" + s.ClientBoundReason + ")"
	}
	if !s.LoadDelivered {
		mark += " LOAD NOT DELIVERED (" + s.LoadReason + ")"
	}
	if s.ServerDisturbed {
		mark += " SERVER DISTURBED (" + s.ServerDisturbedReason + ")"
	}
	if s.ConnectionSpiral {
		mark += fmt.Sprintf(" CONNECTION SPIRAL (%d opened for at most %d in flight, %d warm)", s.ConnectionsOpened, s.InflightPeak, s.ConnectionsWarm)
	}
	if s.ClockUncertaintyNs > 0 {
		mark += fmt.Sprintf(" (hosts' clocks ±%v: rates and windows)", time.Duration(s.ClockUncertaintyNs))
	}
	return mark
}
