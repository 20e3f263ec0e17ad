// Package simkit starts the built-in simulator as a process and plans constant-rate runs
// against it: what calibrate, the benchmarks and the end-to-end tests share. It sits above the
// stages (it plans with replay and pins the simulator with internal/cpuset) and below calibrate
// and the tests.
package simkit
