package objstore

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wirebench/wirebench/schemas"
)

// Dir is a Store in a local directory: what the mirroring logic is tested against without a
// server, and the same contract as S3's (atomic Put, exclusive Create).
type Dir string

func (d Dir) path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

func (d Dir) Put(_ context.Context, name, local string) error {
	b, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	return schemas.WriteFileAtomic(d.path(name), b)
}

func (d Dir) Get(_ context.Context, name, local string) error {
	src, err := os.Open(d.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmtNotExist(d, name)
	} else if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	dst, err := os.Create(local)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d Dir) Create(_ context.Context, name string, data []byte) error {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return ErrExist
	} else if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d Dir) Read(_ context.Context, name string) ([]byte, error) {
	b, err := os.ReadFile(d.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmtNotExist(d, name)
	}
	return b, err
}

func (d Dir) List(context.Context) ([]Object, error) {
	var objs []Object
	err := filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		st, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(string(d), p)
		objs = append(objs, Object{Name: filepath.ToSlash(rel), Size: st.Size()})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return objs, err
}

func (d Dir) Remove(_ context.Context, name string) error {
	err := os.Remove(d.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (d Dir) String() string { return string(d) }
