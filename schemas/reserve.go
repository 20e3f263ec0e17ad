package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// ReserveName is a file that capture (and `wirebench run`, `wirebench search`) keep in the run
// directory while they write (capture.Reserve): when the disk fills up, Manifest.Write deletes
// it to make room and writes again, so a run stopped by a full disk still ends with a manifest
// that says so.
const ReserveName = ".reserve"

// writeRoomy writes data to path atomically; on a full disk it deletes the run directory's
// reserve, if there is one, and tries once more.
func writeRoomy(path string, data []byte) error {
	err := WriteFileAtomic(path, data)
	if errors.Is(err, syscall.ENOSPC) && os.Remove(filepath.Join(filepath.Dir(path), ReserveName)) == nil {
		err = WriteFileAtomic(path, data)
	}
	return err
}
