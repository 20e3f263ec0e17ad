package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wirebench/wirebench/schemas"
)

// ReserveBytes is room for a manifest rewrite (a manifest listing some 600 parts).
const ReserveBytes = 64 << 10

// Reserve makes RUN/.reserve (schemas.ReserveName) of ReserveBytes unless it is there; release
// deletes it when this call made it. Capture, `wirebench run` and `wirebench search` keep it
// while they write: when the disk fills up, Manifest.Write deletes it to make room and writes
// again, so a run stopped by a full disk still ends with a manifest that says so. A directory
// without room for it is an error: a run there would fail at once.
func Reserve(dir string) (release func(), err error) {
	path := filepath.Join(dir, schemas.ReserveName)
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
