package main

import (
	"context"
	"log/slog"
)

// ReplayCmd is not built yet.
type ReplayCmd struct{}

func (c *ReplayCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("replay") }
