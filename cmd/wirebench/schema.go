package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/schemas"
)

// SchemaCmd prints file schemas.
type SchemaCmd struct {
	Kind   string `arg:"" optional:"" help:"File kind (schedule-requests, prompts, raw-requests, raw-chunks, workers, server-metrics, metric-requests, stages, timeseries); all when omitted."`
	Format string `help:"Output format: text or md (Markdown, as in schemas/SCHEMAS.md)." default:"text" enum:"text,md"`
}

func (c *SchemaCmd) Run(ctx context.Context, log *slog.Logger) error {
	kinds := schemas.Kinds
	if c.Kind != "" {
		k, err := schemas.LookupKind(c.Kind)
		if err != nil {
			return err
		}
		kinds = []schemas.Kind{k}
	} else if c.Format == "md" {
		return schemas.WriteSchemasMarkdown(os.Stdout)
	}
	for i, k := range kinds {
		if i > 0 {
			fmt.Println()
		}
		var err error
		if c.Format == "md" {
			err = k.WriteMarkdown(os.Stdout)
		} else {
			err = k.WriteText(os.Stdout)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
