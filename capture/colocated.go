package capture

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wirebench/wirebench/internal/colocate"
	"github.com/wirebench/wirebench/schemas"
)

// A server on the client's machine gets only the CPU the client leaves: a client that takes it
// reports a server slower than it is. When the target is co-located (colocate's rule: a loopback
// address or one of this host's), capture's defaults leave the server its CPUs:
//
//   - workers on at most half the CPUs this process may use, never fewer than one
//     (ColocatedWorkers), pinned to CPUs the server is not confined to first, else the last ones
//     (the first CPUs take most of the interrupts); --workers, capture.workers or --cpus override;
//   - the pacer thread's priority not raised above the server's: it keeps its own, or takes the
//     server's when that is higher (nice −20 away from the server);
//   - the packet tap bound to the loopback interface (traffic to the host's own addresses runs
//     over it), its kernel filter on the target's address and port as always, and its recorder
//     a batch thread (SCHED_BATCH: no wake-up preemption of the server, its share of CPU kept);
//   - with the tap running, the reads of fast streams batched (ColocatedReadCoalesce): fewer
//     reads and wake-ups, each event still timed by the tap; --read-coalesce overrides.
//
// Away from the server the defaults stand: a worker per usable CPU, the pacer at nice −20.

// pacerNiceAway is the pacer thread's nice value when the server is on another machine.
const pacerNiceAway = -20

// ColocatedWorkers is the default worker count beside the server: half of the usable CPUs, at
// least one.
func ColocatedWorkers(usable int) int { return max(1, usable/2) }

// ColocatedReadCoalesce is the read coalescing window beside the server with the tap on: the
// reads of zero-latency streams, most of the client's CPU there, come every 1 KiB or 200 µs
// instead of every event or two (docs/measurements.md#coalesced-reads-2026-12-07); a real
// model's tokens, milliseconds apart, never start it.
const ColocatedReadCoalesce = 200 * time.Microsecond

// placement is what capture decided from the target's place.
type placement struct {
	col       *schemas.Colocation
	local     bool
	pacerNice int
	serverCPU []int // the server's affinity; nil when unknown
}

// locate finds where the target is and, when it shares this host, the process serving it.
func locate(ctx context.Context, target string, log *slog.Logger) placement {
	pl := placement{pacerNice: pacerNiceAway}
	p, err := colocate.Locate(ctx, target)
	if err != nil {
		pl.col = &schemas.Colocation{Rule: "unknown: " + err.Error()}
		log.Warn("cannot tell whether the target shares this host; taking it as remote", "err", err)
		return pl
	}
	pl.col = &schemas.Colocation{TargetLocal: p.Local, Address: p.Addr.String(), Rule: p.Rule}
	if !p.Local {
		return pl
	}
	pl.local, pl.pacerNice = true, 0
	if proc := colocate.Listener(p.Addr); proc != nil {
		pl.col.Server = &schemas.ServerProcess{PID: proc.PID, Command: proc.Comm, CPUs: cpuList(proc.CPUs), CPUCount: len(proc.CPUs), Nice: proc.Nice}
		pl.serverCPU = proc.CPUs
		pl.pacerNice = min(0, proc.Nice) // raised, if at all, no higher than the server's
	}
	return pl
}

// pickCPUs returns n of the allowed CPUs for co-located workers: first those outside the
// server's affinity, then from the end of the list.
func pickCPUs(allowed []int, n int, server []int) []int {
	var out []int
	for i := len(allowed) - 1; i >= 0 && len(out) < n; i-- {
		if !slices.Contains(server, allowed[i]) {
			out = append(out, allowed[i])
		}
	}
	for i := len(allowed) - 1; i >= 0 && len(out) < n; i-- {
		if !slices.Contains(out, allowed[i]) {
			out = append(out, allowed[i])
		}
	}
	slices.Sort(out)
	return out
}

// applyColocated sets the co-located defaults on cfg when the target shares this host and the
// worker count and CPUs were not given: it returns the CPUs to pin to and notes what it did.
func (pl *placement) applyColocated(cfg *Config, cpus []int, usable int) []int {
	if !pl.local {
		return cpus
	}
	if cfg.Workers == 0 && len(cfg.CPUs) == 0 {
		cfg.Workers = ColocatedWorkers(usable)
		if !cfg.NoPin {
			cpus = pickCPUs(cpus, cfg.Workers, pl.serverCPU)
		}
		pl.col.Defaults = append(pl.col.Defaults, fmt.Sprintf("%d worker(s) of %d usable CPUs, on CPUs %s (--workers or --cpus override)", cfg.Workers, usable, cpuList(cpus)))
	}
	pl.col.Defaults = append(pl.col.Defaults, fmt.Sprintf("pacer thread at nice %d at most, not raised above the server's", pl.pacerNice))
	if cfg.Tap != TapOff {
		pl.col.Defaults = append(pl.col.Defaults, "packet tap on the loopback interface only, its recorder a batch thread (SCHED_BATCH)")
	}
	return cpus
}

// readCoalesce resolves --read-coalesce: when not given, ColocatedReadCoalesce for a
// co-located target with the tap running (which keeps events read together exact), else off.
// A window given without the tap gets a warning. A default that applied is noted in pl.
func (pl *placement) readCoalesce(given *time.Duration, tap bool, log *slog.Logger) *time.Duration {
	var d time.Duration
	switch {
	case given != nil:
		d = *given
	case pl.local && tap:
		d = ColocatedReadCoalesce
		pl.col.Defaults = append(pl.col.Defaults, fmt.Sprintf("reads of fast streams batched (%v or 1 KiB; --read-coalesce 0 turns it off)", d))
	}
	if d > 0 {
		if !tap {
			log.Warn("--read-coalesce without the packet tap: events read together share one read's time bounds", "read_coalesce", d)
		}
		log.Info("reads coalesced", "window", d)
	}
	return &d
}

// cpuList formats CPUs as a comma-separated list.
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
