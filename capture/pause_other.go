//go:build !amd64 && !arm64

package capture

// spinPause does nothing where no spin-wait hint is wired up.
func spinPause() {}
