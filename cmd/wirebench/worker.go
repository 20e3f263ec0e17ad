package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/capture"
)

// WorkerCmd is one capture worker process, started by `wirebench capture`: it reads its
// configuration as a JSON line on stdin, writes messages on stdout and logs on stderr.
type WorkerCmd struct{}

func (c *WorkerCmd) Run(ctx context.Context, log *slog.Logger) error {
	wc, rest, err := capture.ReadWorkerConfig(os.Stdin)
	if err != nil {
		return err
	}
	wc.In, wc.Out = rest, os.Stdout
	// The coordinator stops workers through stdin; a worker's own SIGINT (ctx) also drains.
	return capture.RunWorker(ctx, wc, log)
}
