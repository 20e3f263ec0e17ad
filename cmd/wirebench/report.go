package main

import (
	"context"
	"log/slog"
)

// ReportCmd is not built yet.
type ReportCmd struct{}

func (c *ReportCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("report") }
