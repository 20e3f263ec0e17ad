package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// Lock is a run directory's lock in a Store: the object PREFIX/.lock (schemas.LockName), made
// only when absent (S3: PUT with If-None-Match: *, which AWS S3, MinIO and versitygw honour), holding
// the holder's schemas.LockHolder, and removed on Release. A command killed without releasing it
// leaves it behind: the next command on the same host takes it over when that process is gone,
// any other fails naming the holder (remove the object when that command is known to be gone).
type Lock struct {
	st Store
}

// LockStore takes st's lock for the command args (os.Args[1:]), or fails with
// schemas.ErrLocked naming the holder.
func LockStore(ctx context.Context, st Store, args []string, log *slog.Logger) (*Lock, error) {
	h := schemas.LockHolder{PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second)}
	h.Host, _ = os.Hostname()
	for _, a := range args {
		h.Command = append(h.Command, redact.String(a))
	}
	b, _ := json.Marshal(h)
	b = append(b, '\n')
	for try := 0; ; try++ {
		err := st.Create(ctx, schemas.LockName, b)
		if err == nil {
			return &Lock{st: st}, nil
		}
		if !errors.Is(err, ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", st, err)
		}
		held, gone := holder(ctx, st)
		if !gone || try > 0 {
			return nil, fmt.Errorf("%s: %w: %s; wait for it to end, or remove %s/%s once it is known to be gone", st, schemas.ErrLocked, held, st, schemas.LockName)
		}
		log.Warn("taking over the run directory's lock from a process that has exited", "dir", st.String(), "holder", held)
		if err := st.Remove(ctx, schemas.LockName); err != nil {
			return nil, fmt.Errorf("lock %s: %w", st, err)
		}
	}
}

// holder says who holds st's lock, and whether that process is known to be gone (it ran on
// this host and has exited).
func holder(ctx context.Context, st Store) (string, bool) {
	b, err := st.Read(ctx, schemas.LockName)
	var h schemas.LockHolder
	if err != nil || json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return "another process holds its lock (its lock object says not which)", false
	}
	cmd := strings.Join(append([]string{"wirebench"}, h.Command...), " ")
	s := fmt.Sprintf("pid %d on %s (%s) has held its lock since %s", h.PID, h.Host, cmd, h.Since.Local().Format(time.DateTime))
	host, _ := os.Hostname()
	return s, host == h.Host && errors.Is(unix.Kill(h.PID, 0), unix.ESRCH)
}

// Release removes the lock object. It uses a context of its own: it runs after an interrupt.
func (l *Lock) Release(log *slog.Logger) {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.st.Remove(ctx, schemas.LockName); err != nil {
		log.Warn("could not remove the run directory's lock: remove it by hand", "lock", l.st.String()+"/"+schemas.LockName, "err", err)
	}
}
