//go:build amd64 || arm64

package capture

// spinPause executes the CPU's spin-wait hint once (PAUSE on amd64, YIELD on arm64).
func spinPause()
