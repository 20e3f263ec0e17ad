package aggregate

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/wirebench/wirebench/schemas"
)

// TestBatchColumnsByName: columns are found by name whatever their position; a missing or
// mistyped column is one error naming the file and the column, and the first one sticks.
func TestBatchColumnsByName(t *testing.T) {
	mem := memory.NewGoAllocator()
	sch := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int32}, {Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(mem, sch)
	defer bld.Release()
	bld.Field(0).(*array.Int32Builder).AppendValues([]int32{7}, nil)
	bld.Field(1).(*array.Int64Builder).AppendValues([]int64{42}, nil)
	rec := bld.NewRecordBatch()
	defer rec.Release()

	b := &batch{path: "f.parquet", rec: rec, n: 1}
	if a, bb := b.i64("a"), b.i32("b"); b.err != nil || a.Value(0) != 42 || bb.Value(0) != 7 {
		t.Fatalf("by name: err %v", b.err)
	}
	b.i32("a") // int64 read as int32
	b.i64("zzz")
	if b.err == nil || !errors.Is(b.err, schemas.ErrKind) || !strings.Contains(b.err.Error(), "f.parquet") || !strings.Contains(b.err.Error(), "column a is int64, want int32") {
		t.Errorf("mistyped: err = %v", b.err)
	}
	b.err = nil
	if b.str("missing"); b.err == nil || !strings.Contains(b.err.Error(), `no column "missing"`) {
		t.Errorf("missing: err = %v", b.err)
	}
}
