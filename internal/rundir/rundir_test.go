package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

var quiet = slog.New(slog.DiscardHandler)

func TestAcquireRefusesASecondHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, err := Acquire(dir, []string{"run", "smoke.yaml", "-o", dir, "--target", "http://u:s3cret@10.0.0.5:8000", "--x=http://u:s3cret@h"}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks an open file description: a second open in this process conflicts like
	// another process's would.
	_, err = Acquire(dir, []string{"capture", dir}, quiet)
	if !errors.Is(err, schemas.ErrLocked) {
		t.Fatalf("Acquire of a held directory = %v; want schemas.ErrLocked", err)
	}
	for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), "wirebench run smoke.yaml -o " + dir + " --target http://[REDACTED]@10.0.0.5:8000 --x=http://[REDACTED]@h"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Acquire error %q; want it to name the holder (%q)", err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, schemas.LockName)); strings.Contains(string(b), "s3cret") {
		t.Errorf("the lock file holds the target's password: %s", b)
	}
	first.Release()
	second, err := Acquire(dir, []string{"capture", dir}, quiet)
	if err != nil {
		t.Fatalf("Acquire after Release = %v; want the lock", err)
	}
	second.Release()
	if b, _ := os.ReadFile(filepath.Join(dir, schemas.LockName)); len(b) != 0 {
		t.Errorf("lock file after Release holds %q; want it empty", b)
	}
}

// TestLockHeldAfterItsHolderExited: a capture coordinator killed while its workers live leaves
// its pid in the lock file and its lock held by the workers; the refusal says so.
func TestLockHeldAfterItsHolderExited(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir, []string{"capture", dir}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no true(1) to make an exited pid: %v", err)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(schemas.LockHolder{PID: gone.Process.Pid, Host: host, Command: []string{"capture", dir}})
	if err := os.WriteFile(filepath.Join(dir, schemas.LockName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir, []string{"aggregate", dir}, quiet)
	want := fmt.Sprintf("pid %d has exited and the worker processes it started hold the lock", gone.Process.Pid)
	if !errors.Is(err, schemas.ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Errorf("Acquire = %v; want schemas.ErrLocked saying %q", err, want)
	}
}

func TestAcquireRemovesCreatedDirectoryOnly(t *testing.T) {
	root := t.TempDir()
	fresh := filepath.Join(root, "fresh")
	l, err := Acquire(fresh, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	l.RemoveIfCreated()
	l.Release()
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RemoveIfCreated of a directory Acquire made: stat = %v; want it gone", err)
	}
	l, err = Acquire(root, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	l.RemoveIfCreated()
	l.Release()
	if _, err := os.Stat(root); err != nil {
		t.Errorf("RemoveIfCreated of a directory that was there: %v; want it kept", err)
	}
}

func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	files := []struct {
		path     string
		leftover bool
	}{
		{schemas.ReserveName, true},
		{".manifest.json.tmp-123", true},
		{"raw/.requests-w00-0001.parquet.tmp-9", true},
		{"schedule/.prompts.parquet.tmp-1", true},
		{"report/.index.html.tmp-4", true},
		{"metrics/" + schemas.SpillPrefix + "77/spill-1", true}, // a scratch directory, removed whole
		{schemas.LockName, false},
		{schemas.ManifestName, false},
		{"raw/requests-w00-0001.parquet", false},
		{"raw/.reserve", false},           // the reserve lives in the run directory only
		{"other/.x.tmp-1", false},         // not a run's data directory
		{"metrics/stages.parquet", false}, // a finished file
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveLeftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.path))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.leftover {
			t.Errorf("%s: removed %v; want %v", f.path, gone, f.leftover)
		}
	}
	if want := filepath.Join("metrics", schemas.SpillPrefix+"77"); !slices.Contains(removed, want) || len(removed) != 6 {
		t.Errorf("RemoveLeftovers = %q; want the 6 leftovers named, %s among them", removed, want)
	}
}

func TestRemoveLeftoversKeepsALinkedSchedule(t *testing.T) {
	// A Kubernetes capture host links the replay's schedule, shared by every host.
	root := t.TempDir()
	shared := filepath.Join(root, "run", "schedule")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(shared, ".requests.parquet.tmp-1")
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(root, "host")
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../run/schedule", filepath.Join(host, "schedule")); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveLeftovers(host); err != nil || len(removed) != 0 {
		t.Errorf("RemoveLeftovers(host) = %q, %v; want nothing removed through the link", removed, err)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("the shared schedule's file: %v; want it kept", err)
	}
}
