package main

import (
	"context"
	"log/slog"
)

// RunCmd is not built yet.
type RunCmd struct{}

func (c *RunCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("run") }
