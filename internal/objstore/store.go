// Package objstore keeps run directories in object storage (S3 and S3-compatible servers). A
// command never reads or writes object storage while it works: it works on a local staging
// copy of the run directory, which Download fills from the store before the command and a
// Mirror uploads after it (and, during a capture, while it measures), so every stage keeps
// its one code path over local files. See docs/design/object-storage.md.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Store holds the files of one run directory, named by their slash-separated paths relative to
// the directory ("manifest.json", "raw/requests-0000.parquet").
type Store interface {
	// Put stores the local file at local under name, atomically: a reader sees the whole file
	// under name or none of it (a single S3 PUT, or a completed multipart upload).
	Put(ctx context.Context, name, local string) error
	// Get copies name into the local file at local.
	Get(ctx context.Context, name, local string) error
	// Create stores data under name only when name does not exist, else fails with
	// ErrExist (S3: PUT with If-None-Match: *). The run lock is made with it.
	Create(ctx context.Context, name string, data []byte) error
	// Read returns the contents of name (small files: the lock).
	Read(ctx context.Context, name string) ([]byte, error)
	// List returns every file of the directory.
	List(ctx context.Context) ([]Object, error)
	// Remove removes name; removing a name that does not exist is no error.
	Remove(ctx context.Context, name string) error
	// String is the directory's URL, for messages.
	String() string
}

// Object is one file of a Store.
type Object struct {
	Name string // relative to the directory, slash-separated
	Size int64  // bytes
}

// ErrExist: Create found the name taken.
var ErrExist = errors.New("already exists")

// ErrNotExist: the name does not exist.
var ErrNotExist = errors.New("does not exist")

// IsURL says whether a run argument names object storage (s3://BUCKET/PREFIX) rather than a
// local path.
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// Location is a parsed s3://BUCKET/PREFIX.
type Location struct {
	Bucket string
	Prefix string // without leading or trailing slash; may be empty
}

// ParseURL reads s3://BUCKET/PREFIX.
func ParseURL(s string) (Location, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("%q: want s3://BUCKET/PREFIX", s)
	}
	p := strings.Trim(u.Path, "/")
	if p != "" && path.Clean(p) != p {
		return Location{}, fmt.Errorf("%q: the prefix must be a clean path (no //, . or ..)", s)
	}
	return Location{Bucket: u.Host, Prefix: p}, nil
}

// String is the location as s3://BUCKET/PREFIX.
func (l Location) String() string {
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// key is the object key of name.
func (l Location) key(name string) string {
	if l.Prefix == "" {
		return name
	}
	return l.Prefix + "/" + name
}

func fmtNotExist(s Store, name string) error {
	return fmt.Errorf("%s/%s: %w", s, name, ErrNotExist)
}
