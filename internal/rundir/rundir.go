// Package rundir does what commands do to a run directory besides writing its files: it takes
// the directory's lock (Acquire; the lock file and its holder record are schemas.LockName and
// schemas.LockHolder), removes what a killed command left behind (RemoveLeftovers), and lists or
// removes the data of a run that a command replaces (Data, RemoveData). The replay, capture,
// aggregate, report, run, calibrate and search commands use it; it imports only schemas and
// internal/redact.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// dataDirs are the subdirectories of a run directory that hold its data, in pipeline order.
var dataDirs = []string{"schedule", "raw", "metrics", "report"}

// Lock is a run directory's lock, held.
type Lock struct {
	dir     string
	f       *os.File
	created bool
}

// Acquire takes dir's lock for the command args (os.Args[1:]), making dir when absent. When
// another process holds it, Acquire fails at once with schemas.ErrLocked naming that process.
// Holding the lock, it removes what a command killed in this directory left behind
// (RemoveLeftovers) and logs each file. On a filesystem that has no flock, it logs so and goes on without the lock.
func Acquire(dir string, args []string, log *slog.Logger) (*Lock, error) {
	_, err := os.Stat(dir)
	l := &Lock{dir: dir, created: errors.Is(err, fs.ErrNotExist)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock run directory: %w", err)
	}
	path := filepath.Join(dir, schemas.LockName)
	if l.f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return nil, fmt.Errorf("lock run directory: %w", err)
	}
	switch err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		l.f.Close()
		return nil, fmt.Errorf("%s: %w: %s; wait for it to end or choose another run directory", dir, schemas.ErrLocked, holderText(path))
	case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		log.Warn("run directory not locked: its filesystem has no flock, so nothing stops a second command from writing it at the same time", "dir", dir, "err", err)
	case err != nil:
		l.f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := l.writeHolder(args); err != nil {
		l.f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	removed, err := RemoveLeftovers(dir)
	if len(removed) > 0 {
		log.Warn("removed what a killed command left in the run directory", "dir", dir, "files", removed)
	}
	if err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

func (l *Lock) writeHolder(args []string) error {
	h := schemas.LockHolder{PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second)}
	for _, a := range args {
		h.Command = append(h.Command, redact.String(a))
	}
	h.Host, _ = os.Hostname()
	b, _ := json.Marshal(h)
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt(append(b, '\n'), 0)
	return err
}

// holderText says who holds the lock at path, from what the holder wrote into it.
func holderText(path string) string {
	b, _ := os.ReadFile(path)
	var h schemas.LockHolder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return "another process holds its lock (it has not said which yet)"
	}
	cmd := strings.Join(append([]string{"wirebench"}, h.Command...), " ")
	s := fmt.Sprintf("pid %d on %s (%s) has held its lock since %s", h.PID, h.Host, cmd, h.Since.Local().Format(time.DateTime))
	if host, _ := os.Hostname(); host == h.Host && errors.Is(unix.Kill(h.PID, 0), unix.ESRCH) {
		s += fmt.Sprintf("; pid %d has exited and the worker processes it started hold the lock until they have closed their files", h.PID)
	}
	return s
}

// File is the open lock file, for child processes that write the run under this lock
// (exec.Cmd.ExtraFiles): the lock is held until the last process holding the file has exited.
func (l *Lock) File() *os.File { return l.f }

// RemoveIfCreated removes the run directory when Acquire made it: a command that failed before
// it wrote anything of a run leaves no directory behind. Call it before Release.
func (l *Lock) RemoveIfCreated() {
	if l.created {
		os.RemoveAll(l.dir)
	}
}

// Release empties the lock file and gives the lock up.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Truncate(0)
	l.f.Close()
	l.f = nil
}

// RemoveLeftovers removes what a killed command leaves in run directory dir: the disk reserve
// (schemas.ReserveName), temporary files (".NAME.tmp-*", see schemas.Writer) in dir and its data directories,
// and aggregate's scratch directories (metrics/.spill-*). It returns their paths relative to
// dir. Only the holder of dir's lock may call it: a live writer's files look the same.
func RemoveLeftovers(dir string) ([]string, error) {
	var removed []string
	var errs []error
	for _, sub := range append([]string{"."}, dataDirs...) {
		d := filepath.Join(dir, sub)
		if st, err := os.Lstat(d); err != nil || !st.IsDir() {
			continue // absent, or a link to a schedule shared by several hosts: not this run's own
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range ents {
			if !isLeftover(sub, e.Name()) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, filepath.Join(sub, e.Name()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("remove leftovers of a killed command: %w", err)
	}
	return removed, nil
}

// isLeftover says whether name, in subdirectory sub of a run directory, is left by a killed
// command.
func isLeftover(sub, name string) bool {
	switch {
	case sub == "." && name == schemas.ReserveName:
		return true
	case sub == "metrics" && strings.HasPrefix(name, schemas.SpillPrefix):
		return true
	}
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// Data describes the data subdirectories of dir that hold files (among names, or all of
// schedule, raw, metrics and report when none is given), e.g. "raw/ (12 files)".
func Data(dir string, names ...string) []string {
	var out []string
	for _, sub := range dataNames(names) {
		if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) > 0 {
			out = append(out, fmt.Sprintf("%s/ (%d files)", sub, len(ents)))
		}
	}
	return out
}

// RemoveData removes the data subdirectories names of dir (all when none is given), as a
// command replacing the run in dir does once everything it needs has been checked. It returns
// those that held files.
func RemoveData(dir string, names ...string) ([]string, error) {
	held := Data(dir, names...)
	for _, sub := range dataNames(names) {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return held, fmt.Errorf("replace the run in %s: %w", dir, err)
		}
	}
	return held, nil
}

func dataNames(names []string) []string {
	if len(names) == 0 {
		return dataDirs
	}
	return names
}
