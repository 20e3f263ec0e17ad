package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/wirebench/wirebench/internal/redact"
)

// Producer names the command that wrote a file; it goes into the file's key-value metadata.
type Producer struct {
	Command string   // e.g. "capture"
	Args    []string // the command's flags as given
}

// RowGroupRows is the most rows a Parquet row group holds; the writer's memory is bounded by it.
const RowGroupRows = 64 << 10

// Writer writes rows of one kind to a temporary file next to path and renames it to path on
// Close, after an fsync, so a reader never sees half a file under the final name. Abort (or a
// crash) leaves only the temporary file, named ".NAME.tmp-*", which readers never match.
type Writer[T any] struct {
	path   string
	tmp    *os.File
	pw     *parquet.GenericWriter[T]
	rows   int64
	sealed bool
	done   bool
}

// Create starts an atomic Parquet file of the kind whose row struct is T, compressed, with the
// schema version, kind, producer and schema checksum in its key-value metadata (and a CRC-32 in
// every page header: see VerifyPages). The compression is the kind's (codec).
func Create[T any](path string, p Producer) (*Writer[T], error) {
	return create[T](path, p, codec(KindOf[T]()))
}

func create[T any](path string, p Producer, c compress.Codec) (*Writer[T], error) {
	kind := KindOf[T]()
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	tmp, err := createTemp(dir, base)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	args, _ := json.Marshal(redact.Strings(p.Args))
	pw := parquet.NewGenericWriter[T](tmp,
		parquet.Compression(c),
		// Bound the writer's memory: a row group is flushed to the file every RowGroupRows rows
		// instead of holding a whole file's pages until Close.
		parquet.MaxRowsPerRowGroup(RowGroupRows),
		parquet.KeyValueMetadata(MetaVersion, strconv.Itoa(SchemaVersion)),
		parquet.KeyValueMetadata(MetaKind, kind.Name),
		parquet.KeyValueMetadata(MetaCommand, p.Command),
		parquet.KeyValueMetadata(MetaArgs, string(args)),
		parquet.KeyValueMetadata(MetaSchemaCRC, schemaCRC(rowSchema(kind.Row))),
	)
	return &Writer[T]{path: path, tmp: tmp, pw: pw}, nil
}

// codec is the compression of a kind's files. The raw/ kinds, written while a capture's load
// runs on CPUs it may share with the server, use Snappy: in the worker beside the simulator at
// 2,000 req/s × 64 tokens it cost 5% less client CPU per request than zstd's fastest level (8
// alternating pairs, every one lower) for raw/ files about 25% larger
// ([measurements](../docs/measurements.md#snappy-for-raw-files-2026-12-04-1633-utc)). The rest,
// written after the load, use zstd's default level.
func codec(k Kind) compress.Codec {
	if strings.HasPrefix(k.Path, "raw/") {
		return &snappy.Codec{}
	}
	return &zstd.Codec{Level: zstd.SpeedDefault}
}

// Write appends rows. Rows are buffered into row groups by the Parquet writer.
func (w *Writer[T]) Write(rows []T) error {
	n, err := w.pw.Write(rows)
	w.rows += int64(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// Flush ends the current row group: its pages are written out and leave memory. Writers of
// large files call it every so many rows to bound their memory (the Parquet writer otherwise
// holds a whole row group, compressed, until Close).
func (w *Writer[T]) Flush() error {
	if err := w.pw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// Rows returns the number of rows written so far.
func (w *Writer[T]) Rows() int64 { return w.rows }

// Path returns the final path of the file.
func (w *Writer[T]) Path() string { return w.path }

// Seal writes the footer and fsyncs the temporary file, without giving it its final name:
// Close then only renames it. A command replacing the files of an earlier run seals every new
// file before it removes anything of the old run. On error the temporary file is removed.
func (w *Writer[T]) Seal() error {
	if w.sealed || w.done {
		return nil
	}
	w.sealed = true
	err := w.pw.Close()
	if err == nil {
		err = w.tmp.Sync()
	}
	if cerr := w.tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.done = true
		os.Remove(w.tmp.Name())
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}

// Close seals the file (Seal), renames the temporary file to its final name and fsyncs the
// directory. On any error the temporary file is removed and nothing appears under the final name.
func (w *Writer[T]) Close() error {
	if w.done {
		return nil
	}
	if err := w.Seal(); err != nil {
		return err
	}
	w.done = true
	if err := os.Rename(w.tmp.Name(), w.path); err != nil {
		os.Remove(w.tmp.Name())
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return syncDir(filepath.Dir(w.path))
}

// Abort discards the file: the temporary file is removed and the final name is never created.
func (w *Writer[T]) Abort() {
	if w.done {
		return
	}
	w.done = true
	if !w.sealed {
		w.tmp.Close()
	}
	os.Remove(w.tmp.Name())
}

// WriteFile writes all rows to path atomically.
func WriteFile[T any](path string, rows []T, p Producer) error {
	w, err := Create[T](path, p)
	if err != nil {
		return err
	}
	if err := w.Write(rows); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}

// WriteFileAtomic writes data to path through a temporary file, fsync and rename (used for JSON,
// CSV and report files).
func WriteFileAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// createTemp creates the hidden temporary file ".NAME.tmp-*" next to the final name, readable
// by everyone like a file made with os.Create (os.CreateTemp makes it 0600).
func createTemp(dir, base string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// syncDir makes a rename in dir durable. A file system that cannot sync a directory (EINVAL,
// ENOTSUP: some network and FUSE mounts) is not an error: the rename is as durable as it allows.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// File is an opened Parquet file whose version and kind were checked.
type File struct {
	Path    string
	Kind    Kind
	Command string
	*parquet.File
	f *os.File
}

// Close closes the underlying file.
func (f *File) Close() error { return f.f.Close() }

// Open opens path, checks that it is a complete Parquet file of the kind whose row struct is T
// and of this SchemaVersion. Errors wrap ErrCorrupt, ErrKind or ErrVersion and name the file.
func Open[T any](path string) (*File, error) {
	return OpenKind(path, KindOf[T]())
}

// OpenKind is Open for a kind known at run time (aggregate reads with Arrow after this check).
func OpenKind(path string, kind Kind) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
	if err := checkMeta(path, pf, kind); err != nil {
		f.Close()
		return nil, err
	}
	if err := checkSchemaCRC(path, pf); err != nil {
		f.Close()
		return nil, err
	}
	cmd, _ := pf.Lookup(MetaCommand)
	return &File{Path: path, Kind: kind, Command: cmd, File: pf, f: f}, nil
}

func checkMeta(path string, pf *parquet.File, kind Kind) error {
	v, ok := pf.Lookup(MetaVersion)
	if !ok {
		return fmt.Errorf("%s: %w: file has no %s (not written by wirebench?), want %d", path, ErrVersion, MetaVersion, SchemaVersion)
	}
	if v != strconv.Itoa(SchemaVersion) {
		return fmt.Errorf("%s: %w: file is version %s, this wirebench reads version %d", path, ErrVersion, v, SchemaVersion)
	}
	if k, _ := pf.Lookup(MetaKind); k != kind.Name {
		return fmt.Errorf("%s: %w: file holds %q, want %q", path, ErrKind, k, kind.Name)
	}
	return nil
}

// ReadFile reads every row of a checked file into memory, its pages verified first (a damaged
// file is an error wrapping ErrCorrupt, never other values; the Parquet reader's panics on
// damaged data are turned into that error too). For large files use Open and
// parquet.NewGenericReader, or Arrow.
func ReadFile[T any](path string) (_ []T, err error) {
	f, err := Open[T](path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.VerifyPages(); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", path, ErrCorrupt, p)
		}
	}()
	r := parquet.NewGenericReader[T](f.File)
	defer r.Close()
	rows := make([]T, r.NumRows())
	n, err := r.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
	return rows[:n], nil
}
