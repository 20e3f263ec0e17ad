package capture

import (
	"fmt"
	"time"
)

// The watchdog (Config.Watchdog): a running worker reports its progress every second until it
// has sent "done" and exited, so a worker silent for the watchdog's time is stopped (SIGSTOP, a
// debugger) or hung. Waiting on it would hang the capture, and a worker resumed later would
// let the run end complete with a gap in its data; the coordinator kills it instead (its
// finished parts are kept), the others go on, and the run fails naming it.

// heard records a message from p.
func (p *workerProc) heard(now time.Time) { p.lastMsg = now }

// watch kills every running worker silent for longer than the watchdog allows.
func (c *coord) watch(now time.Time) {
	for _, p := range c.procs {
		silent := now.Sub(p.lastMsg)
		if p.exit != nil || p.stuck != "" || p.lastMsg.IsZero() || silent <= c.cfg.Watchdog {
			continue
		}
		p.stuck = fmt.Sprintf("worker %d (cpu %d) stuck: no message for %v (watchdog %v) with %s; killed",
			p.cfg.Worker, p.cfg.CPU, silent.Round(time.Second), c.cfg.Watchdog, p.unfinished())
		c.log.Error("worker stuck: killing it; the others go on", "worker", p.cfg.Worker, "cpu", p.cfg.CPU, "silent", silent.Round(time.Second), "watchdog", c.cfg.Watchdog)
		if err := p.cmd.Process.Kill(); err != nil {
			c.log.Error("kill stuck worker", "worker", p.cfg.Worker, "err", err)
		}
	}
}

// unfinished says how many of p's requests had not finished at its last progress report.
func (p *workerProc) unfinished() string {
	if p.done != nil {
		return "its requests finished"
	}
	var n int64
	if p.last != nil {
		for i := range p.last.Done {
			n += p.last.Done[i]
		}
		for i := range p.last.Errors {
			n += p.last.Errors[i]
		}
	}
	return fmt.Sprintf("%d of its %d requests unfinished", p.planned-n, p.planned)
}
