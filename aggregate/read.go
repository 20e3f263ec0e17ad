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

// forBatches opens path as a Parquet file of kind (version and kind checked by schemas.OpenKind),
// reads the named columns with pqarrow in record batches and calls f for each batch with the
// columns in the order of names.
func forBatches(ctx context.Context, path string, kind schemas.Kind, names []string, f func(n int, cols []arrow.Array) error) (rows int64, err error) {
	sf, err := schemas.OpenKind(path, kind)
	if err != nil {
		return 0, err
	}
	sf.Close()
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
	cols := make([]arrow.Array, len(names))
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		rec := rr.RecordBatch()
		for i, n := range names {
			fi := rec.Schema().FieldIndices(n)
			if len(fi) != 1 {
				return rows, fmt.Errorf("%s: %w: no column %q", path, schemas.ErrKind, n)
			}
			cols[i] = rec.Column(fi[0])
		}
		if err := f(int(rec.NumRows()), cols); err != nil {
			return rows, err
		}
		rows += rec.NumRows()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return rows, fmt.Errorf("%s: %w: %v", path, schemas.ErrCorrupt, err)
	}
	return rows, ctx.Err()
}

// Typed column views; a wrong physical type is an error naming the file and column.
func i64(path, name string, a arrow.Array) (*array.Int64, error) {
	if c, ok := a.(*array.Int64); ok {
		return c, nil
	}
	return nil, fmt.Errorf("%s: %w: column %s is %s, want int64", path, schemas.ErrKind, name, a.DataType())
}

func i32(path, name string, a arrow.Array) (*array.Int32, error) {
	if c, ok := a.(*array.Int32); ok {
		return c, nil
	}
	return nil, fmt.Errorf("%s: %w: column %s is %s, want int32", path, schemas.ErrKind, name, a.DataType())
}

func boolean(path, name string, a arrow.Array) (*array.Boolean, error) {
	if c, ok := a.(*array.Boolean); ok {
		return c, nil
	}
	return nil, fmt.Errorf("%s: %w: column %s is %s, want bool", path, schemas.ErrKind, name, a.DataType())
}

// str returns a function reading string values of a (plain or dictionary-encoded) column.
func str(path, name string, a arrow.Array) (func(int) string, error) {
	switch c := a.(type) {
	case *array.String:
		return c.Value, nil
	case *array.LargeString:
		return c.Value, nil
	case *array.Dictionary:
		if d, ok := c.Dictionary().(*array.String); ok {
			return func(i int) string { return d.Value(c.GetValueIndex(i)) }, nil
		}
	}
	return nil, fmt.Errorf("%s: %w: column %s is %s, want string", path, schemas.ErrKind, name, a.DataType())
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
