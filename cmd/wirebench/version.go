package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"

	"github.com/wirebench/wirebench/schemas"
)

// version is set at build time with -ldflags "-X main.version=..."; otherwise the module version.
var version = ""

// Version returns the tool version written into manifests.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// VersionCmd prints the tool, schema and Go versions.
type VersionCmd struct{}

func (c *VersionCmd) Run(ctx context.Context, log *slog.Logger) error {
	fmt.Printf("wirebench %s (schema version %d, %s %s/%s)\n", Version(), schemas.SchemaVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
