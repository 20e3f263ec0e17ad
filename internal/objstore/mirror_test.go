package objstore

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// recorder is a Dir that remembers the order of its uploads and removals.
type recorder struct {
	Dir
	ops []string
}

func (r *recorder) Put(ctx context.Context, name, local string) error {
	r.ops = append(r.ops, "put "+name)
	return r.Dir.Put(ctx, name, local)
}

func (r *recorder) Remove(ctx context.Context, name string) error {
	r.ops = append(r.ops, "remove "+name)
	return r.Dir.Remove(ctx, name)
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMirrorUploadsPartsAsTheyComeAndTheManifestLast(t *testing.T) {
	ctx := context.Background()
	local, remote := t.TempDir(), &recorder{Dir: Dir(t.TempDir())}
	m := NewMirror(remote, local, nil)
	write(t, local, "manifest.json", "{}")
	write(t, local, "raw/requests-w00-0000.parquet", "part 0")
	write(t, local, "raw/.requests-w00-0001.parquet.tmp-123", "half a part")
	write(t, local, ".lock", "{}")
	write(t, local, "metrics/.spill-1/x", "scratch")
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if want := []string{"put raw/requests-w00-0000.parquet"}; !slices.Equal(remote.ops, want) {
		t.Errorf("first Sync(false) did %q; want %q (no manifest, no hidden file)", remote.ops, want)
	}
	write(t, local, "raw/requests-w00-0001.parquet", "part 1")
	write(t, local, "step-00/manifest.json", "{}") // a search step's run, walked before its files
	write(t, local, "step-00/raw/requests-w00-0000.parquet", "step part")
	if err := m.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"put raw/requests-w00-0000.parquet", "put raw/requests-w00-0001.parquet", "put step-00/raw/requests-w00-0000.parquet",
		"put manifest.json", "put step-00/manifest.json"}
	if !slices.Equal(remote.ops, want) {
		t.Errorf("after Sync(true): %q; want %q (each file once, the manifests last)", remote.ops, want)
	}
}

func TestMirrorRemovesWhatTheCommandRemoved(t *testing.T) {
	ctx := context.Background()
	remote := &recorder{Dir: Dir(t.TempDir())}
	write(t, string(remote.Dir), "manifest.json", "old")
	write(t, string(remote.Dir), "raw/requests-w00-0000.parquet", "old part")
	write(t, string(remote.Dir), "metrics/stages.parquet", "old stages")
	local := t.TempDir()
	fetched, err := Download(ctx, remote, local, "metrics/")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"manifest.json", "raw/requests-w00-0000.parquet"}; !slices.Equal(fetched, want) {
		t.Fatalf("Download(skip metrics/) = %q; want %q", fetched, want)
	}
	m := NewMirror(remote, local, fetched)
	// A replay --force: the old raw part goes, the manifest is rewritten.
	os.RemoveAll(filepath.Join(local, "raw"))
	write(t, local, "manifest.json", "new")
	if err := m.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"remove raw/requests-w00-0000.parquet", "put manifest.json"}
	if !slices.Equal(remote.ops, want) {
		t.Errorf("Sync(true) did %q; want %q (the skipped metrics/ kept)", remote.ops, want)
	}
	objs, _ := remote.List(ctx)
	if len(objs) != 2 {
		t.Errorf("store holds %v; want manifest.json and metrics/stages.parquet", objs)
	}
}

func TestLockStoreRefusesASecondHolder(t *testing.T) {
	ctx := context.Background()
	st := Dir(t.TempDir())
	l, err := LockStore(ctx, st, []string{"capture", "s3://b/run"}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockStore(ctx, st, []string{"aggregate", "s3://b/run"}, slog.Default())
	if !errors.Is(err, schemas.ErrLocked) {
		t.Fatalf("second LockStore: %v; want ErrLocked", err)
	}
	l.Release(slog.Default())
	l, err = LockStore(ctx, st, nil, slog.Default())
	if err != nil {
		t.Fatalf("LockStore after Release: %v", err)
	}
	l.Release(slog.Default())
}

func TestLockStoreTakesOverFromAnExitedProcessOfThisHost(t *testing.T) {
	ctx := context.Background()
	st := Dir(t.TempDir())
	host, _ := os.Hostname()
	// pid 0x3fffffff is beyond pid_max: no such process.
	write(t, string(st), schemas.LockName, `{"pid":1073741823,"host":"`+host+`","command":["capture"]}`)
	l, err := LockStore(ctx, st, nil, slog.Default())
	if err != nil {
		t.Fatalf("LockStore over a dead holder: %v", err)
	}
	l.Release(slog.Default())
	write(t, string(st), schemas.LockName, `{"pid":1073741823,"host":"another-host","command":["capture"]}`)
	if _, err := LockStore(ctx, st, nil, slog.Default()); !errors.Is(err, schemas.ErrLocked) {
		t.Errorf("LockStore over another host's holder: %v; want ErrLocked", err)
	}
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in, bucket, prefix string
		ok                 bool
	}{
		{"s3://b/runs/one", "b", "runs/one", true},
		{"s3://b/runs/one/", "b", "runs/one", true}, // a trailing slash is the same directory
		{"s3://b", "b", "", true},
		{"s3:///runs", "", "", false},  // no bucket
		{"s3://b/a//c", "", "", false}, // not clean
		{"s3://b/a/../c", "", "", false},
		{"s3://key:secret@b/x", "", "", false}, // credentials come from the environment only
		{"gs://b/x", "", "", false},
	} {
		l, err := ParseURL(c.in)
		if (err == nil) != c.ok || l.Bucket != c.bucket || l.Prefix != c.prefix {
			t.Errorf("ParseURL(%q) = %+v, %v; want {%s %s}, ok %v", c.in, l, err, c.bucket, c.prefix, c.ok)
		}
	}
}
