package capture

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// result writes the coordinator's files and decides the outcome.
func (c *coord) result() error {
	prod := schemas.Producer{Command: "capture", Args: c.cfg.Args}
	var ferr error
	sort.Slice(c.rows, func(i, j int) bool {
		a, b := c.rows[i], c.rows[j]
		return a.Worker < b.Worker || a.Worker == b.Worker && a.Stage < b.Stage
	})
	if len(c.rows) > 0 {
		if err := schemas.WriteFile(schemas.FileOf[schemas.Worker](c.cfg.Run), c.rows, prod); err != nil {
			ferr = err
		} else {
			c.m.AddFile(schemas.EntryOf[schemas.Worker](int64(len(c.rows))))
		}
	}
	if len(c.server) > 0 {
		if err := schemas.WriteFile(schemas.FileOf[schemas.ServerMetric](c.cfg.Run), c.server, prod); err != nil && ferr == nil {
			ferr = err
		} else if err == nil {
			c.m.AddFile(schemas.EntryOf[schemas.ServerMetric](int64(len(c.server))))
		}
	}
	dead, stuck := c.lost()
	switch {
	case c.failure != nil:
		return c.failure
	case ferr != nil:
		return ferr
	case stuck:
		return fmt.Errorf("%w: %s; the other workers finished and every finished part is kept", ErrWorkerStuck, strings.Join(dead, ", "))
	case len(dead) > 0:
		return fmt.Errorf("%w: %s; the other workers finished and every finished part is kept", ErrWorkerDied, strings.Join(dead, ", "))
	case c.interrupted:
		return ErrInterrupted
	}
	return nil
}

// lost names the workers that died or were killed stuck, and reports whether one was stuck.
func (c *coord) lost() (dead []string, stuck bool) {
	for _, p := range c.procs {
		switch {
		case p.stuck != "":
			dead, stuck = append(dead, p.stuck), true
		case p.exit != nil && !p.exit.ok:
			why := p.exit.status
			if p.done != nil && p.done.Error != "" {
				why += ": " + p.done.Error
			}
			dead = append(dead, fmt.Sprintf("worker %d (%s)", p.cfg.Worker, why))
		}
	}
	return dead, stuck
}

// finish records the outcome in the manifest (written by Run's deferred call).
func (c *coord) finish(err error) {
	m := c.m
	m.Missing = nil
	m.Workers = m.Workers[:0]
	var sent int64
	for _, p := range c.procs {
		ws := schemas.WorkerStatus{Worker: int32(p.cfg.Worker), Shard: int32(p.cfg.Shard), CPU: int32(p.cfg.CPU), Exit: "unknown"}
		if p.exit != nil {
			ws.Exit = p.exit.status
		}
		m.Workers = append(m.Workers, ws)
		switch {
		case p.done != nil:
			sent += p.done.Sent + p.done.Skipped
		case p.last != nil:
			for _, n := range p.last.Sent {
				sent += n
			}
			m.Missing = append(m.Missing, fmt.Sprintf("worker %d (cpu %d) ended with %s: the requests of its open part, its last workers.parquet row and its unsent requests are missing", p.cfg.Worker, p.cfg.CPU, ws.Exit))
		default:
			m.Missing = append(m.Missing, fmt.Sprintf("worker %d (cpu %d) ended with %s before sending", p.cfg.Worker, p.cfg.CPU, ws.Exit))
		}
	}
	if len(c.procs) > 0 && sent < c.total {
		m.Missing = append(m.Missing, fmt.Sprintf("%d of %d planned requests were not sent", c.total-sent, c.total))
	}
	if c.earlyStop != "" {
		m.Missing = append(m.Missing, c.earlyStop)
	}
	st := &m.Steps[c.stepIdx]
	st.Ended = time.Now()
	switch {
	case err == nil:
		m.Status, st.Status = schemas.StatusComplete, schemas.StatusComplete
	case errors.Is(err, ErrInterrupted):
		m.Status, st.Status = schemas.StatusInterrupted, schemas.StatusInterrupted
		st.Error = err.Error()
	default:
		m.Status, st.Status = schemas.StatusFailed, schemas.StatusFailed
		st.Error = err.Error()
	}
}
