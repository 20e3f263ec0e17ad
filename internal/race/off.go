//go:build !race

// Package race says whether the race detector is on: tests that run too long under it (load
// and coverage tests) skip there and run plain in make test.
package race

// Enabled reports whether the binary was built with the race detector.
const Enabled = false
