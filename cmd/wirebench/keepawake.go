package main

import (
	"os"

	"github.com/wirebench/wirebench/capture"
)

// KeepAwakeCmd spins at SCHED_IDLE priority on each CPU in --cpus until stdin closes; started
// by `wirebench capture` for the CPUs its workers are pinned to (see --keep-awake).
type KeepAwakeCmd struct {
	CPUs []int `name:"cpus" required:"" help:"CPUs to keep awake (comma-separated)."`
}

func (c *KeepAwakeCmd) Run() error { return capture.KeepAwake(c.CPUs, os.Stdin, os.Stdout) }
