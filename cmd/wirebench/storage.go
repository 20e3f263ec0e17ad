package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/objstore"
)

// EnvStaging names the directory under which commands keep the local copies of run
// directories that live in object storage (default: the system's temporary directory).
const EnvStaging = "WIREBENCH_STAGING"

// stagedRun is a run directory as a command works on it: a local path as given, or, for an
// s3://BUCKET/PREFIX URL, a local staging copy downloaded before the command and uploaded after
// it (see internal/objstore). Every stage reads and writes only the local copy.
type stagedRun struct {
	Dir    string // the directory the command works on
	url    string
	root   string // the staging directory, removed once the run is uploaded
	store  objstore.Store
	lock   *objstore.Lock
	mirror *objstore.Mirror // nil for a run only read
	log    *slog.Logger
}

// metricsOnly skips what a report does not read of a run: the schedule and the rolled raw
// parts (it reads the manifest, metrics/ and raw/'s small files).
var metricsOnly = []string{"schedule/", "raw/requests-", "raw/chunks-", "raw/segments-"}

// noFiles skips every file: a run a command makes afresh (Clear removes what the store held).
var noFiles = []string{""}

// stageRun returns run as the command works on it. For an s3:// URL it downloads the run's
// files (but those starting with a prefix in skip) into a new staging directory; with write, it
// first takes the run's lock in the store, and finish uploads what the command wrote.
func stageRun(ctx context.Context, run string, write bool, args []string, log *slog.Logger, skip ...string) (*stagedRun, error) {
	if !objstore.IsURL(run) {
		return &stagedRun{Dir: run}, nil
	}
	st, err := objstore.OpenS3(run)
	if err != nil {
		return nil, err
	}
	s := &stagedRun{url: run, store: st, log: log}
	if write {
		if s.lock, err = objstore.LockStore(ctx, st, args, log); err != nil {
			return nil, err
		}
	}
	if s.root, err = os.MkdirTemp(os.Getenv(EnvStaging), "wirebench-s3-"); err != nil {
		s.lock.Release(log)
		return nil, fmt.Errorf("staging directory for %s (%s): %w", run, EnvStaging, err)
	}
	s.Dir = s.root + "/run"
	started := time.Now()
	fetched, err := objstore.Download(ctx, st, s.Dir, skip...)
	if err != nil {
		s.discard()
		return nil, err
	}
	log.Info("downloaded the run from object storage", "run", run, "files", len(fetched), "staging", s.Dir, "took", time.Since(started).Round(time.Millisecond))
	if write {
		s.mirror = objstore.NewMirror(st, s.Dir, fetched)
	}
	return s, nil
}

// stageRuns stages a command's output directory out (written: every file downloaded) and its
// input runs (read: but the files starting with a prefix in skip), each once: an input that is
// the output is the same staged copy.
func stageRuns(ctx context.Context, out string, runs []string, skip []string, log *slog.Logger) (*stagedRun, []*stagedRun, error) {
	o, err := stageRun(ctx, out, true, os.Args[1:], log)
	if err != nil {
		return nil, nil, err
	}
	staged := make([]*stagedRun, len(runs))
	for i, r := range runs {
		if r == out {
			staged[i] = o
			continue
		}
		if staged[i], err = stageRun(ctx, r, false, nil, log, skip...); err != nil {
			for _, s := range staged[:i] {
				s.discard()
			}
			o.discard()
			return nil, nil, err
		}
	}
	return o, staged, nil
}

// finishRuns finishes what stageRuns staged: out is uploaded, the inputs' copies removed.
func finishRuns(ctx context.Context, out *stagedRun, runs []*stagedRun, err *error, log *slog.Logger) {
	for _, r := range runs {
		if r != out {
			r.discard()
		}
	}
	finishRun(ctx, out, err, log)
}

// dirs are the directories the commands work on.
func dirs(runs []*stagedRun) []string {
	d := make([]string, len(runs))
	for i, r := range runs {
		d[i] = r.Dir
	}
	return d
}

// Clear removes every file of the run from its store (not the lock): a command that makes the
// run afresh. A local run needs nothing: the command removes the directory itself.
func (s *stagedRun) Clear(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	objs, err := s.store.List(ctx)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if objstore.Local(o.Name) {
			continue
		}
		if err := s.store.Remove(ctx, o.Name); err != nil {
			return err
		}
	}
	return nil
}

// finish uploads what the command wrote, the manifest last, releases the run's lock and
// removes the staging copy. When the upload fails, the staging copy is kept and named in the
// error. It runs after an interrupt too: it does not watch ctx's cancellation.
func (s *stagedRun) finish(ctx context.Context) error {
	if s == nil || s.store == nil {
		return nil
	}
	defer s.lock.Release(s.log)
	if s.mirror != nil {
		if _, err := os.Stat(s.Dir); err == nil { // else the command removed the run it made
			started := time.Now()
			if err := s.mirror.Sync(context.WithoutCancel(ctx), true); err != nil {
				return fmt.Errorf("upload %s: %w (the run is whole in %s)", s.url, err, s.Dir)
			}
			s.log.Info("uploaded the run to object storage", "run", s.url, "files", s.mirror.Uploaded,
				"bytes", s.mirror.Bytes, "took", time.Since(started).Round(time.Millisecond))
		}
	}
	os.RemoveAll(s.root)
	return nil
}

// finishRun finishes run (deferred by a command): a failed upload becomes the command's error
// when it had none, else is logged beside it.
func finishRun(ctx context.Context, run *stagedRun, err *error, log *slog.Logger) {
	ferr := run.finish(ctx)
	switch {
	case ferr == nil:
	case *err == nil:
		*err = ferr
	default:
		log.Error("the run was not uploaded", "err", ferr)
	}
}

// discard removes the staging copy and releases the lock without uploading anything.
func (s *stagedRun) discard() {
	if s == nil || s.store == nil {
		return
	}
	s.lock.Release(s.log)
	os.RemoveAll(s.root)
}

// Show is how messages name the run: its URL, or its local path.
func (s *stagedRun) Show(path string) string {
	if s.url == "" {
		return path
	}
	return s.url + strings.TrimPrefix(path, s.Dir)
}

// runDirMapper decodes a run argument (type:"rundir"): an s3://BUCKET/PREFIX URL, or a local
// directory that must exist, as kong's existingdir.
var runDirMapper = kong.MapperFunc(decodeRunDir)

// runDirRegistry decodes a list of run arguments, each with runDirMapper.
var runDirRegistry = kong.NewRegistry().RegisterDefaults()

func init() { runDirRegistry.RegisterName("rundir", runDirMapper) }

func decodeRunDir(ctx *kong.DecodeContext, target reflect.Value) error {
	if target.Kind() == reflect.Slice {
		return runDirRegistry.ForType(target.Type()).Decode(ctx, target)
	}
	var s string
	if err := ctx.Scan.PopValueInto("run", &s); err != nil {
		return err
	}
	if objstore.IsURL(s) {
		_, err := objstore.ParseURL(s)
		target.SetString(s)
		return err
	}
	s = kong.ExpandPath(s)
	st, err := os.Stat(s)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%q exists but is not a directory", s)
	}
	target.SetString(s)
	return nil
}

// watchEvery is how often a capture into object storage looks for finished parts to upload.
const watchEvery = 2 * time.Second

// Watch uploads finished parts while a capture measures, every watchEvery, until stop is
// called (stop waits for an upload under way to end). Its goroutine runs on a thread at nice
// 19, beside the coordinator: never in a worker process, whose CPUs it yields to. An upload
// that fails is logged once and tried again at the next pass, and at finish. At stop it logs
// what it uploaded and its thread's CPU time (reading, hashing and signing the parts; the
// HTTP client's socket writes run on other threads).
func (s *stagedRun) Watch(ctx context.Context) (stop func()) {
	if s.mirror == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		lowerThreadPriority()
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		warned := false
		for {
			select {
			case <-ctx.Done():
				s.log.Info("uploaded parts while capturing", "run", s.url, "files", s.mirror.Uploaded, "bytes", s.mirror.Bytes,
					"uploader_thread_cpu", threadCPU().Round(time.Microsecond))
				return
			case <-t.C:
			}
			if err := s.mirror.Sync(ctx, false); err != nil && ctx.Err() == nil && !warned {
				s.log.Warn("could not upload a finished part yet; trying again", "run", s.url, "err", err)
				warned = true
			}
		}
	}()
	return func() { cancel(); <-done }
}

// lowerThreadPriority locks the calling goroutine to its thread and gives that thread nice 19,
// so that the uploads it starts yield to the coordinator and workers. The goroutine never
// unlocks: when it returns, its thread exits with it instead of serving others at nice 19.
func lowerThreadPriority() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
