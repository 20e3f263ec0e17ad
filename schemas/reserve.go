package schemas

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ReserveName is a file of ReserveBytes that capture (and `wirebench run`) keep in the run
// directory while they write: when the disk fills up, Manifest.Write deletes it to make room
// and writes again, so a run stopped by a full disk still ends with a manifest that says so.
const ReserveName = ".reserve"

// ReserveBytes is room for a manifest rewrite (a manifest listing some 600 parts).
const ReserveBytes = 64 << 10

// Reserve makes RUN/.reserve unless it is there; release deletes it when this call made it. A
// directory without room for it is an error: a run there would fail at once.
func Reserve(dir string) (release func(), err error) {
	path := filepath.Join(dir, ReserveName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reserve room in %s: %w", dir, err)
	}
	_, err = f.Write(make([]byte, ReserveBytes)) // written, not sparse: it must hold blocks
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("reserve %d KiB in %s: %w", ReserveBytes>>10, dir, err)
	}
	return func() { os.Remove(path) }, nil
}

// writeRoomy writes data to path atomically; on a full disk it deletes the run directory's
// reserve, if there is one, and tries once more.
func writeRoomy(path string, data []byte) error {
	err := WriteFileAtomic(path, data)
	if errors.Is(err, syscall.ENOSPC) && os.Remove(filepath.Join(filepath.Dir(path), ReserveName)) == nil {
		err = WriteFileAtomic(path, data)
	}
	return err
}

// RecordFailure records in RUN/manifest.json that step (aggregate, report) failed with err,
// and sets the run's status to failed.
func RecordFailure(dir, step string, started time.Time, args []string, stepErr error) error {
	path := filepath.Join(dir, ManifestName)
	m, err := ReadManifest(path)
	if err != nil {
		return err
	}
	m.Steps = append(m.Steps, Step{Name: step, Args: args, Started: started, Ended: time.Now(), Status: StatusFailed, Error: stepErr.Error()})
	m.Status = StatusFailed
	return m.Write(path)
}
