package objstore

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/internal/s3server"
	"github.com/wirebench/wirebench/schemas"
)

// s3Store starts a versitygw on loopback and opens s3://BUCKET/prefix on it through the
// environment, as a command does.
func s3Store(t *testing.T, prefix string) *S3 {
	srv := s3server.Start(t)
	for k, v := range srv.Env() {
		t.Setenv(k, v)
	}
	st, err := OpenS3("s3://" + srv.Bucket + "/" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestS3StoreAgainstARealServer checks the S3 store's contract on a real server: put, list,
// get, exclusive create (If-None-Match: *), remove, and a missing name.
func TestS3StoreAgainstARealServer(t *testing.T) {
	ctx := context.Background()
	st := s3Store(t, "runs/one")
	dir := t.TempDir()
	write(t, dir, "raw/requests-w00-0000.parquet", "part 0")
	if err := st.Put(ctx, "raw/requests-w00-0000.parquet", filepath.Join(dir, "raw/requests-w00-0000.parquet")); err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx)
	if err != nil || len(objs) != 1 || objs[0] != (Object{Name: "raw/requests-w00-0000.parquet", Size: 6}) {
		t.Fatalf("List = %v, %v; want the one part of 6 bytes", objs, err)
	}
	got := filepath.Join(dir, "got")
	if err := st.Get(ctx, "raw/requests-w00-0000.parquet", got); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(got); string(b) != "part 0" {
		t.Errorf("Get wrote %q; want %q", b, "part 0")
	}
	if err := st.Create(ctx, ".lock", []byte("first")); err != nil {
		t.Fatalf("Create .lock: %v", err)
	}
	if err := st.Create(ctx, ".lock", []byte("second")); !errors.Is(err, ErrExist) {
		t.Fatalf("Create .lock again: %v; want ErrExist (the server must honour If-None-Match: *)", err)
	}
	if b, err := st.Read(ctx, ".lock"); err != nil || string(b) != "first" {
		t.Errorf("Read .lock = %q, %v; want the first holder's", b, err)
	}
	if err := st.Remove(ctx, ".lock"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Read(ctx, ".lock"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Read of a removed name: %v; want ErrNotExist", err)
	}
	if err := st.Get(ctx, "nope", got); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), st.String()+"/nope") {
		t.Errorf("Get(nope): %v; want ErrNotExist naming %s/nope", err, st)
	}
}

// TestS3MirrorRoundTrip mirrors a run directory to the server and downloads it again, with a
// second writer refused by the lock object.
func TestS3MirrorRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := s3Store(t, "runs/two")
	lock, err := LockStore(ctx, st, []string{"capture", st.String()}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockStore(ctx, st, nil, slog.Default()); !errors.Is(err, schemas.ErrLocked) || !strings.Contains(err.Error(), "wirebench capture "+st.String()) {
		t.Errorf("second writer: %v; want ErrLocked naming the first", err)
	}
	local := t.TempDir()
	for _, n := range []string{"manifest.json", "schedule/requests.parquet", "raw/chunks-w00-0000.parquet", ".reserve"} {
		write(t, local, n, "content of "+n)
	}
	m := NewMirror(st, local, nil)
	if err := m.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	lock.Release(slog.Default())
	back := t.TempDir()
	got, err := Download(ctx, st, back)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"manifest.json", "raw/chunks-w00-0000.parquet", "schedule/requests.parquet"}; !slices.Equal(got, want) {
		t.Errorf("Download = %q; want %q (no .reserve, no .lock)", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(back, "schedule", "requests.parquet")); string(b) != "content of schedule/requests.parquet" {
		t.Errorf("downloaded schedule holds %q", b)
	}
}
