package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/schemas"
)

// CaptureCmd is `wirebench capture RUN`.
type CaptureCmd struct {
	RunDir  string       `arg:"" name:"run" help:"Run directory written by replay (manifest.json and schedule/), or s3://BUCKET/PREFIX: parts are written to a local staging copy and uploaded as they roll (see README)." type:"rundir"`
	Target  string       `help:"Base URL of the server, overriding target.url (e.g. http://127.0.0.1:8000)."`
	Capture CaptureFlags `embed:""`
}

// CaptureFlags are the capture options shared by `capture` and `run`.
type CaptureFlags struct {
	Workers int    `help:"Worker processes, each pinned to one CPU (0 = capture.workers from the config, else the CPUs this process may use: affinity mask and cgroup quota); at most 4 a CPU." default:"0"`
	Shard   string `help:"This host's share of the schedule for multi-host runs: i/n keeps requests (whole conversations) whose key mod n == i." default:"0/1"`
	StartAt string `help:"Common start time for multi-host runs: RFC 3339 (2026-01-02T15:04:05Z) or unix nanoseconds. Default: just after every worker is ready."`
	// The options capture.Config shares with its workers: --max-inflight to --gomaxprocs.
	capture.Options
	CPUs string `name:"cpus" placeholder:"LIST" help:"CPUs to pin the workers to, worker i to the i-th (mod the list), e.g. 0,2-3 (default: the CPUs this process may use). Hosts sharing one machine give each a CPU of its own."`
	// The coordinator's own options capture.Config holds: --no-pin to --quiet.
	capture.CoordOptions
	MetricsListen string        `placeholder:"ADDR" help:"Serve live metrics in Prometheus text format at http://ADDR/metrics while the capture runs (e.g. :9464): requests planned, sent, done and failed by stage, in flight, open connections, send lag, live TTFT/ITL/E2E histograms, worker CPU (docs/design/live-metrics.md)."`
	MetricsLinger time.Duration `help:"Keep serving --metrics-listen this long after the command's work is done, so that a last scrape sees the final figures." default:"0s"`
}

func (c *CaptureCmd) Run(ctx context.Context, log *slog.Logger, lf logFlags) (err error) {
	cfg, err := c.Capture.config(c.RunDir, c.Target, os.Args[1:], lf)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	stopLive, err := c.Capture.serveLive(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer stopLive()
	run, err := stageRun(ctx, c.RunDir, true, os.Args[1:], log)
	if err != nil {
		return err
	}
	defer finishRun(ctx, run, &err, log)
	cfg.Run = run.Dir
	lock, err := rundir.Acquire(run.Dir, os.Args[1:], log)
	if err != nil {
		return err
	}
	defer lock.Release()
	cfg.Lock = lock.File()
	stop := run.Watch(ctx)
	err = capture.Run(ctx, cfg, log)
	stop()
	if errors.Is(err, capture.ErrInterrupted) {
		return &exitError{code: 130, err: err}
	}
	return err
}

func (c *CaptureFlags) config(run, target string, args []string, lf logFlags) (capture.Config, error) {
	cfg := capture.Config{Run: run, Workers: c.Workers, Target: target, Options: c.Options, CoordOptions: c.CoordOptions,
		Progress: os.Stderr, Args: args, WorkerArgs: lf}
	var err error
	if cfg.Shard, cfg.Shards, err = schemas.ParseShard(c.Shard); err != nil {
		return cfg, err
	}
	if c.CPUs != "" {
		if cfg.CPUs, err = capture.ParseCPUs(c.CPUs); err != nil {
			return cfg, err
		}
	}
	if c.StartAt != "" {
		if cfg.StartAt, err = capture.ParseStartAt(c.StartAt); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// serveLive starts the --metrics-listen endpoint, if asked for, and returns what stops it
// (after --metrics-linger, or at once on an interrupt).
func (c *CaptureFlags) serveLive(ctx context.Context, cfg *capture.Config, log *slog.Logger) (stop func(), err error) {
	if c.MetricsListen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", c.MetricsListen)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("--metrics-listen: %w", err)}
	}
	cfg.Live = capture.NewLiveMetrics()
	mux := http.NewServeMux()
	mux.Handle("/metrics", cfg.Live.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	log.Info("serving live metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		if c.MetricsLinger > 0 {
			select {
			case <-time.After(c.MetricsLinger):
			case <-ctx.Done():
			}
		}
		srv.Close()
	}, nil
}
