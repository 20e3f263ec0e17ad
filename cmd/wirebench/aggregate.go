package main

import (
	"context"
	"log/slog"
)

// AggregateCmd is not built yet.
type AggregateCmd struct{}

func (c *AggregateCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("aggregate") }
