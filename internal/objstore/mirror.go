package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Local names what a run directory holds only on its own disk: the lock, the disk reserve,
// temporary files and aggregate's scratch directories, all hidden (a path element starting
// with "."). They are never uploaded, downloaded or removed from the store.
func Local(name string) bool {
	for el := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(el, ".") {
			return true
		}
	}
	return false
}

// Download copies every file of st into dir, but those whose name starts with one of skip
// (e.g. "raw/": a report reads only metrics/). It returns the names it copied: the Mirror
// that uploads dir later removes from st those the command has removed from dir.
func Download(ctx context.Context, st Store, dir string, skip ...string) ([]string, error) {
	objs, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	var got []string
	for _, o := range objs {
		if Local(o.Name) || slices.ContainsFunc(skip, func(p string) bool { return strings.HasPrefix(o.Name, p) }) {
			continue
		}
		if err := st.Get(ctx, o.Name, filepath.Join(dir, filepath.FromSlash(o.Name))); err != nil {
			return got, err
		}
		got = append(got, o.Name)
	}
	return got, nil
}

// fileState is what the Mirror knows of a file it uploaded: a file replaced under its name
// (the manifest, rewritten by each step) has another size or time and is uploaded again.
type fileState struct {
	size  int64
	mtime time.Time
}

// Mirror uploads the files of a local run directory to a Store. Files appear in a run
// directory under their final names only when complete (schemas.Writer), so any file Sync
// sees is whole; manifests go last, in Sync's final pass only, so that a reader of the store
// finds a manifest only beside the files it lists.
type Mirror struct {
	st       Store
	dir      string
	sent     map[string]fileState
	fetched  []string // names Download copied: what the store held before the command
	Uploaded int      // files uploaded so far
	Bytes    int64    // bytes uploaded so far
}

// NewMirror mirrors dir to st; fetched are the names Download copied from st into dir.
func NewMirror(st Store, dir string, fetched []string) *Mirror {
	m := &Mirror{st: st, dir: dir, sent: map[string]fileState{}, fetched: fetched}
	for _, name := range fetched {
		if s, ok := m.stat(name); ok {
			m.sent[name] = s // as downloaded: not sent back unless the command changes it
		}
	}
	return m
}

func (m *Mirror) stat(name string) (fileState, bool) {
	st, err := os.Stat(filepath.Join(m.dir, filepath.FromSlash(name)))
	if err != nil || !st.Mode().IsRegular() {
		return fileState{}, false
	}
	return fileState{size: st.Size(), mtime: st.ModTime()}, true
}

// isManifest says whether name is a manifest: the run's, or a search step's (step-NN/).
func isManifest(name string) bool { return path.Base(name) == schemas.ManifestName }

// Sync uploads every new or changed file of the directory but the manifests. With final, it
// then removes from the store the files the command removed (a run replaced with --force)
// and uploads the manifests last. A failed upload is retried by the next Sync.
func (m *Mirror) Sync(ctx context.Context, final bool) error {
	names, err := m.files()
	if err != nil {
		return err
	}
	for _, name := range names {
		if isManifest(name) {
			continue
		}
		if err := m.put(ctx, name); err != nil {
			return err
		}
	}
	if !final {
		return nil
	}
	var errs []error
	for _, name := range m.fetched {
		if !slices.Contains(names, name) {
			errs = append(errs, m.st.Remove(ctx, name))
			delete(m.sent, name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, name := range names {
		if isManifest(name) {
			if err := m.put(ctx, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// put uploads name when it is new or has changed since it was last uploaded.
func (m *Mirror) put(ctx context.Context, name string) error {
	s, ok := m.stat(name)
	if !ok || m.sent[name] == s {
		return nil
	}
	if err := m.st.Put(ctx, name, filepath.Join(m.dir, filepath.FromSlash(name))); err != nil {
		return err
	}
	m.sent[name] = s
	m.Uploaded++
	m.Bytes += s.size
	return nil
}

// files lists the directory's files that the store holds, as slash-separated names; a
// symbolic link to a directory (a host's schedule shared with others) is followed.
func (m *Mirror) files() ([]string, error) {
	var names []string
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(m.dir, rel))
		if errors.Is(err, fs.ErrNotExist) && rel != "" {
			return nil // removed while we looked
		} else if err != nil {
			return fmt.Errorf("upload %s: %w", m.dir, err)
		}
		for _, e := range ents {
			name := filepath.ToSlash(filepath.Join(rel, e.Name()))
			if Local(name) {
				continue
			}
			st, err := os.Stat(filepath.Join(m.dir, rel, e.Name()))
			switch {
			case err != nil:
				continue
			case st.IsDir():
				if err := walk(filepath.Join(rel, e.Name())); err != nil {
					return err
				}
			case st.Mode().IsRegular():
				names = append(names, name)
			}
		}
		return nil
	}
	err := walk("")
	return names, err
}
