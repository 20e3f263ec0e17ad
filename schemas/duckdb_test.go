//go:build duckdb

package schemas

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// writeKind writes three filled rows of T and returns the file path.
func writeKind[T any](t *testing.T, dir string) (string, Kind) {
	t.Helper()
	var rows [3]T
	var n int64
	for i := range rows {
		fill(reflect.ValueOf(&rows[i]).Elem(), &n)
	}
	kind := KindOf[T]()
	path := filepath.Join(dir, kind.Name+".parquet")
	if err := WriteFile(path, rows[:], Producer{Command: "test"}); err != nil {
		t.Fatal(err)
	}
	return path, kind
}

// TestDuckDBReadsEveryKind checks that DuckDB reads every file kind as written: the row count,
// and min() of the first column of each kind and of a nested group where there is one.
func TestDuckDBReadsEveryKind(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	files := map[string]Kind{}
	for _, w := range []func(*testing.T, string) (string, Kind){
		writeKind[ScheduleRequest], writeKind[Prompt], writeKind[RawRequest], writeKind[RawChunk],
		writeKind[Worker], writeKind[ServerMetric], writeKind[MetricRequest], writeKind[Stage], writeKind[Timeseries],
	} {
		p, k := w(t, dir)
		files[p] = k
	}
	for path, k := range files {
		first := k.Columns()[0].Name
		var count, min int64
		q := fmt.Sprintf("SELECT count(*), min(%s) FROM '%s'", first, path)
		if err := db.QueryRow(q).Scan(&count, &min); err != nil {
			t.Fatalf("%s: %s: %v", k.Name, q, err)
		}
		// fill numbers the first field of the first row 1, so min() is 1.
		if count != 3 || min != 1 {
			t.Errorf("%s: count=%d min(%s)=%d; want 3 and 1", k.Name, count, first, min)
		}
		var cols int
		if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM parquet_schema('%s') WHERE num_children IS NULL OR num_children = 0", path)).Scan(&cols); err != nil {
			t.Fatal(err)
		}
		if cols != len(k.Columns()) {
			t.Errorf("%s: DuckDB sees %d leaf columns; schema documents %d", k.Name, cols, len(k.Columns()))
		}
	}
	var p99 int64
	stages := filepath.Join(dir, "stages.parquet")
	if err := db.QueryRow(fmt.Sprintf("SELECT max(ttft_ns.p99) FROM '%s'", stages)).Scan(&p99); err != nil {
		t.Fatalf("nested column ttft_ns.p99: %v", err)
	}
	if p99 <= 0 {
		t.Errorf("ttft_ns.p99 = %d; want > 0", p99)
	}
}
