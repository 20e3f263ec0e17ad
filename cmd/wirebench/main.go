// Command wirebench measures LLM serving stacks without the client distorting the result.
// This package only parses flags (kong) and calls the stage packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/wirebench/wirebench/internal/redact"
)

// CLI is the command tree. Each command is a struct with Run(ctx, logger) in a file of its own.
type CLI struct {
	LogLevel  string `help:"Log level: debug, info, warn, error." default:"info" enum:"debug,info,warn,error"`
	LogFormat string `help:"Log format on stderr: text or json." default:"text" enum:"text,json"`

	Replay    ReplayCmd    `cmd:"" help:"Turn a config into a deterministic schedule: RUN/schedule/*.parquet and RUN/manifest.json."`
	Capture   CaptureCmd   `cmd:"" help:"Execute RUN/schedule against the target; write wire-timestamped raw shards to RUN/raw/."`
	Aggregate AggregateCmd `cmd:"" help:"Derive per-request and per-stage metrics from raw shards into RUN/metrics/."`
	Report    ReportCmd    `cmd:"" help:"Draw latency profiles and tables from RUN/metrics into RUN/report/."`
	Run       RunCmd       `cmd:"" help:"Replay, capture, aggregate and report in one go: the everyday command."`
	Sim       SimCmd       `cmd:"" help:"Serve a built-in OpenAI-compatible streaming server (continuous-batching model)."`
	Calibrate CalibrateCmd `cmd:"" help:"Measure this machine's own client overhead and the highest rate it measures faithfully."`
	Search    SearchCmd    `cmd:"" help:"Find the highest rate at which the config's SLOs hold (capacity under SLO), one run per step."`
	Compare   CompareCmd   `cmd:"" help:"Compare run NEW with run BASE: every percentile's change with its interval; --fail-on gates CI on it."`
	K8s       K8sCmd       `cmd:"" name:"k8s" help:"Write the Kubernetes manifests of a multi-host run: volume, replay Job, Indexed capture Job, aggregate and report Job."`
	Schema    SchemaCmd    `cmd:"" help:"Print the schema of every file kind (column, type, unit, meaning)."`
	Version   VersionCmd   `cmd:"" help:"Print the version."`
	Worker    WorkerCmd    `cmd:"" hidden:"" help:"Internal: one capture worker process."`
	KeepAwake KeepAwakeCmd `cmd:"" hidden:"" name:"keep-awake" help:"Internal: keeps the given CPUs from halting while a capture runs."`
	HostDirs  HostDirsCmd  `cmd:"" hidden:"" name:"host-dirs" help:"Internal (wirebench k8s): make capture hosts' run directories afresh from a replay's."`
}

// logFlags are the global log flags as given, for the processes a command starts (workers).
type logFlags []string

// exitError carries a process exit code through kong's Run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	var cli CLI
	kctx := kong.Parse(&cli,
		kong.Name("wirebench"),
		kong.Description("LLM serving benchmark: load split over pinned workers, every token timestamped at the wire, every run stored as Parquet."),
		kong.UsageOnError(),
		kong.NamedMapper("rundir", runDirMapper),
	)
	log := newLogger(cli.LogLevel, cli.LogFormat)

	ctx, cancel := context.WithCancel(context.Background())
	var interrupted atomic.Bool
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs // SIGTERM is the first Ctrl-C too (Kubernetes, systemd, timeout(1))
		log.Warn("interrupt: stopping and draining; interrupt again to exit at once", "signal", sig.String())
		interrupted.Store(true)
		cancel()
		<-sigs
		log.Error("second interrupt: exiting now")
		os.Exit(130)
	}()

	kctx.BindTo(ctx, (*context.Context)(nil))
	kctx.Bind(log)
	kctx.Bind(logFlags{"--log-level", cli.LogLevel, "--log-format", cli.LogFormat})
	err := kctx.Run()
	cancel()
	if err != nil {
		code := 1
		var ee *exitError
		switch {
		case errors.As(err, &ee):
			code = ee.code
		case interrupted.Load():
			code = 130 // the command stopped at the interrupt (every command watches ctx)
		}
		fmt.Fprintf(stderr, "wirebench %s: %v\n", kctx.Command(), err)
		os.Exit(code)
	}
}

// stderr takes every log line, the progress output and the final error: each write with the
// process's registered secrets and any URL's userinfo redacted (internal/redact).
var stderr = redact.Writer(os.Stderr)

func newLogger(level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(stderr, opts))
	}
	return slog.New(slog.NewTextHandler(stderr, opts))
}
