package main

import (
	"context"
	"log/slog"
)

// CalibrateCmd is not built yet.
type CalibrateCmd struct{}

func (c *CalibrateCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("calibrate") }
