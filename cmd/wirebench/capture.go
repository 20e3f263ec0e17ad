package main

import (
	"context"
	"log/slog"
)

// CaptureCmd is not built yet.
type CaptureCmd struct{}

func (c *CaptureCmd) Run(ctx context.Context, log *slog.Logger) error { return notBuilt("capture") }
