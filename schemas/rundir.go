package schemas

import (
	"errors"
	"time"
)

// LockName is RUN/.lock. Every command that writes a run directory (replay, capture and its
// workers, aggregate, report, run, calibrate) holds an exclusive flock(2) on it while it runs
// and writes a LockHolder into it, so a second writer fails at once naming the first. No stage
// reads it and no manifest lists it. It is never deleted: a command that deleted it could let a
// later one lock a new file while an earlier one still held the old.
const LockName = ".lock"

// SpillPrefix starts the name of aggregate's scratch directories, OUT/metrics/.spill-*.
const SpillPrefix = ".spill-"

// ErrLocked: another process holds the run directory's lock. rundir.Acquire wraps it with the
// directory and the holder.
var ErrLocked = errors.New("run directory in use")

// LockHolder is what the holder of a run directory's lock writes into RUN/.lock.
type LockHolder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command []string  `json:"command"` // the holder's arguments after "wirebench"
	Since   time.Time `json:"since"`
}
