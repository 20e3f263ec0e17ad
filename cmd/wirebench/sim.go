package main

import (
	"context"
	"log/slog"
)

// SimCmd is not built yet.
type SimCmd struct{}

func (c *SimCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("sim") }
