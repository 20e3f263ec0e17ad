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
	Workers        int            `help:"Worker processes, each pinned to one CPU (0 = capture.workers from the config, else the CPUs this process may use: affinity mask and cgroup quota)." default:"0"`
	Shard          string         `help:"This host's share of the schedule for multi-host runs: i/n keeps requests (whole conversations) whose key mod n == i." default:"0/1"`
	StartAt        string         `help:"Common start time for multi-host runs: RFC 3339 (2026-01-02T15:04:05Z) or unix nanoseconds. Default: just after every worker is ready."`
	MaxInflight    int            `help:"Per-worker cap on requests in flight; a send that waits on it is recorded as lag and counted (0 = capture.max_inflight, else unlimited)." default:"0"`
	Connections    int            `help:"Connections each worker opens and warms before the start (0 = capture.connections, else 64)." default:"0"`
	MaxConns       int            `name:"max-connections" help:"Most connections each worker may open (0 = capture.max_connections, else what the open-files limit allows). A request that finds no idle connection dials one and takes whichever connection comes first; at this cap it waits without dialing, and is marked conn_capped." default:"0"`
	KeepText       bool           `help:"Store the generated text in raw requests (output_text)."`
	DrainTimeout   time.Duration  `help:"After the first Ctrl-C, wait this long for in-flight requests (0 = capture.drain_timeout, else 30s)." default:"0s"`
	Timeout        *time.Duration `placeholder:"D" help:"End a request (error kind timeout) this long after its send began; 0 = none (default: target.timeout, else 30m)."`
	TTFTTimeout    time.Duration  `name:"ttft-timeout" help:"End a request (ttft_timeout) whose response body has not begun this long after its send, however far its headers have come (0 = target.ttft_timeout, else 10m)." default:"0s"`
	GapTimeout     time.Duration  `help:"End a request (gap_timeout) whose headers or body have begun when no byte arrives for this long (0 = target.gap_timeout, else 60s). A cut request keeps its chunks; its connection is closed." default:"0s"`
	ConnectTimeout time.Duration  `help:"Give up a dial (error kind connect) after this long: TCP connect, its SYN retransmissions bounded to match, and TLS handshake (0 = target.connect_timeout, else 10s)." default:"0s"`
	Watchdog       time.Duration  `help:"Fail the run when a worker that has not finished sends no progress for this long (stopped or hung): it is killed and named (0 = 30s)." default:"0s"`
	PartRows       int            `help:"Roll each worker's shard parts after this many chunk rows (0 = capture.part_rows, else 500000)." default:"0"`
	PartInterval   time.Duration  `help:"... or after this long (0 = capture.part_interval, else 10s)." default:"0s"`
	MemoryBudget   schemas.Bytes  `placeholder:"SIZE" help:"Bytes of response state (events at 256 bytes each, text, buffered lines, whole bodies) each worker's requests in flight may hold together, e.g. 1GiB; past it a request ends with error kind memory_budget, never the worker for want of memory (0 = capture.memory_budget, else 256MiB: 1,048,576 events)." default:"0"`
	Gomaxprocs     int            `help:"GOMAXPROCS of each worker (0 = 4, see README)." default:"0"`
	CPUs           string         `name:"cpus" placeholder:"LIST" help:"CPUs to pin the workers to, worker i to the i-th (mod the list), e.g. 0,2-3 (default: the CPUs this process may use). Hosts sharing one machine give each a CPU of its own."`
	NoPin          bool           `help:"Do not pin workers to CPUs."`
	KeepAwake      bool           `help:"Keep each pinned worker's CPU from halting while the capture runs: a spinner at the lowest priority (SCHED_IDLE) that gives way at once to any other thread. A halted CPU wakes late (on VMs up to milliseconds) and that lateness becomes send and read lag. Costs a full CPU per worker in power and, where a host caps the VM's CPU time or the instance is burstable, in quota: use it on machines whose CPUs are your own. Ignored under a cgroup CPU quota (see README)."`
	StopBelow      float64        `name:"stop-below-fidelity" placeholder:"SHARE" help:"Stop sending once an open-loop stage ends with fewer than this share of its planned sends made on time (e.g. 0.9): the client has broken and later stages would measure only the client. The run ends complete; the manifest says what was not sent. 0 = never." default:"0"`
	Tap            string         `enum:"auto,on,off" default:"auto" help:"Packet tap: record every TCP segment of the run's connections (AF_PACKET, headers only) in raw/segments-PPPP.parquet, so aggregate gives every event the arrival time of the segment that carried it, however late the client read. auto: on where this process may open a packet socket (CAP_NET_RAW) and the target is http or https over IPv4, else off with a note in the log and the manifest; on: fail when it cannot run. One of: ${enum}."`
	Quiet          bool           `help:"No progress output (warnings and errors are still logged)."`
	MetricsListen  string         `placeholder:"ADDR" help:"Serve live metrics in Prometheus text format at http://ADDR/metrics while the capture runs (e.g. :9464): requests planned, sent, done and failed by stage, in flight, open connections, send lag, live TTFT/ITL/E2E histograms, worker CPU (docs/design/live-metrics.md)."`
	MetricsLinger  time.Duration  `help:"Keep serving --metrics-listen this long after the command's work is done, so that a last scrape sees the final figures." default:"0s"`
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
	lock, err := schemas.LockRun(run.Dir, os.Args[1:], log)
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
	cfg := capture.Config{Run: run, Workers: c.Workers, Target: target, MaxInflight: c.MaxInflight, MaxConns: c.MaxConns, Connections: c.Connections,
		KeepText: c.KeepText, DrainTimeout: c.DrainTimeout, Timeout: c.Timeout, TTFTTimeout: c.TTFTTimeout, GapTimeout: c.GapTimeout,
		ConnectTimeout: c.ConnectTimeout, Watchdog: c.Watchdog, PartRows: c.PartRows, PartInterval: c.PartInterval, MemoryBudget: int64(c.MemoryBudget),
		GOMAXPROCS: c.Gomaxprocs, NoPin: c.NoPin, KeepAwake: c.KeepAwake, Tap: c.Tap, StopBelowFidelity: c.StopBelow, Quiet: c.Quiet, Progress: os.Stderr, Args: args, WorkerArgs: lf}
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
