package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"

	"github.com/wirebench/wirebench/capture"
)

// WorkerCmd is one capture worker process, started by `wirebench capture`: it reads its
// configuration as a JSON line on stdin, writes messages on stdout and logs on stderr.
//
// With WIREBENCH_WORKER_CPUPROFILE=DIR set, each worker writes a CPU profile to
// DIR/worker-NN.pprof (for `go tool pprof`), to see where a worker's CPU goes. Its samples
// come from timers on the thread's CPU time, which the kernel checks at its clock tick: on a
// tickless machine a worker that runs in bursts shorter than a tick is undersampled there, and
// perf's timer-driven sampling gives truer shares.
//
// File descriptor 3, when the coordinator passes one, is the run directory's lock file
// (rundir.Acquire): never read, it keeps the coordinator's lock held until this worker exits.
type WorkerCmd struct{}

func (c *WorkerCmd) Run(ctx context.Context, log *slog.Logger) error {
	wp, err := capture.ReadWorker(os.Stdin, os.Stdout)
	if err != nil {
		return err
	}
	// A coordinator killed with SIGKILL leaves this worker's stdout a broken pipe: the next
	// message would raise SIGPIPE and kill the worker with its open parts unwritten. Ignored,
	// the write fails instead; the worker sees stdin's EOF, closes its open parts and exits.
	signal.Ignore(syscall.SIGPIPE)
	if dir := os.Getenv("WIREBENCH_WORKER_CPUPROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%02d.pprof", wp.Index())))
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	// The coordinator stops workers through stdin; a worker's own SIGINT (ctx) also drains.
	return wp.Run(ctx, log)
}
