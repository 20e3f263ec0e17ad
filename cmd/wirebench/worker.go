package main

import (
	"context"
	"log/slog"
)

// WorkerCmd is not built yet.
type WorkerCmd struct{}

func (c *WorkerCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("worker") }
