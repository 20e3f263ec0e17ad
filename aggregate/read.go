package aggregate

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/wirebench/wirebench/schemas"
)

// batchRows is the Arrow record batch size: with per-request state it bounds aggregate's memory.
const batchRows = 64 << 10

// forBatches opens path as a Parquet file of kind (version, kind and schema checksum checked by
// schemas.OpenKind), verifies its pages (Arrow's reader checks no checksum: see
// schemas.VerifyPages), reads the named columns with pqarrow in record batches and calls f for
// each batch. A damaged file is an error wrapping schemas.ErrCorrupt before f sees any row.
func forBatches(ctx context.Context, path string, kind schemas.Kind, names []string, f func(b *batch) error) (rows int64, err error) {
	sf, err := schemas.OpenKind(path, kind)
	if err != nil {
		return 0, err
	}
	err = sf.VerifyPages()
	sf.Close()
	if err != nil {
		return 0, err
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %v", path, schemas.ErrCorrupt, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = pf.MetaData().Schema.ColumnIndexByName(n)
		if idx[i] < 0 {
			return 0, fmt.Errorf("%s: %w: no column %q", path, schemas.ErrKind, n)
		}
	}
	if pf.NumRows() == 0 {
		return 0, nil
	}
	rr, err := fr.GetRecordReader(ctx, idx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	defer rr.Release()
	b := &batch{path: path}
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		b.rec, b.n, b.first, b.err = rr.RecordBatch(), int(rr.RecordBatch().NumRows()), rows, nil
		if err := f(b); err != nil {
			return rows, err
		}
		rows += int64(b.n)
	}
	if err := rr.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return rows, fmt.Errorf("%s: %w: %v", path, schemas.ErrCorrupt, err)
	}
	return rows, ctx.Err()
}

// batch is one record batch of a file, its columns taken by name. The first missing or
// mistyped column is kept in err (naming the file and the column): a reader takes every column
// it needs, then checks err once before using any.
type batch struct {
	path  string
	rec   arrow.RecordBatch
	n     int
	first int64 // the file's row number of the batch's row 0, from 0
	err   error
}

func (b *batch) col(name string) arrow.Array {
	if b.err != nil {
		return nil
	}
	fi := b.rec.Schema().FieldIndices(name)
	if len(fi) != 1 {
		b.err = fmt.Errorf("%s: %w: no column %q", b.path, schemas.ErrKind, name)
		return nil
	}
	return b.rec.Column(fi[0])
}

func (b *batch) mistyped(name, want string, a arrow.Array) {
	if b.err == nil {
		b.err = fmt.Errorf("%s: %w: column %s is %s, want %s", b.path, schemas.ErrKind, name, a.DataType(), want)
	}
}

// typed returns the named column as array type T (nil, with b.err set, when it is not).
func typed[T arrow.Array](b *batch, name, want string) T {
	a := b.col(name)
	c, ok := a.(T)
	if a != nil && !ok {
		b.mistyped(name, want, a)
	}
	return c
}

func (b *batch) i64(name string) *array.Int64       { return typed[*array.Int64](b, name, "int64") }
func (b *batch) i32(name string) *array.Int32       { return typed[*array.Int32](b, name, "int32") }
func (b *batch) boolean(name string) *array.Boolean { return typed[*array.Boolean](b, name, "bool") }

// str returns a function reading the string values of a (plain or dictionary-encoded) column.
func (b *batch) str(name string) func(int) string {
	switch c := b.col(name).(type) {
	case nil:
		return nil
	case *array.String:
		return c.Value
	case *array.LargeString:
		return c.Value
	case *array.Dictionary:
		if d, ok := c.Dictionary().(*array.String); ok {
			return func(i int) string { return d.Value(c.GetValueIndex(i)) }
		}
		b.mistyped(name, "string", c)
	default:
		b.mistyped(name, "string", c)
	}
	return nil
}

// optI64 returns v and whether it is set.
func optI64(c *array.Int64, i int) (int64, bool) {
	if c.IsNull(i) {
		return 0, false
	}
	return c.Value(i), true
}

func optI32(c *array.Int32, i int) (int32, bool) {
	if c.IsNull(i) {
		return 0, false
	}
	return c.Value(i), true
}
