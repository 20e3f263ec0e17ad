//go:build duckdb

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/wirebench/wirebench/schemas"
)

// TestS3RunDuckDB runs into the bucket, then computes TTFT p50/p99 per stage with
// examples/duckdb/ttft_p99_by_stage.sql and compares them with the bucket's stages.parquet.
// With DuckDB's httpfs extension the query reads the s3:// URL itself (the example of
// docs/design/object-storage.md). duckdb-go does not build httpfs in, and DuckDB installs it
// from extensions.duckdb.org: where it is not installed already, the test says so and runs the
// same query on a copy downloaded from the bucket.
func TestS3RunDuckDB(t *testing.T) {
	srv, _ := s3Env(t)
	run := s3SmokeRun(t, srv)
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Never fetch an extension: the test's traffic stays on loopback.
	exec("SET autoinstall_known_extensions = false")
	exec("SET autoload_known_extensions = false")
	where := run
	var installed bool
	if err := conn.QueryRowContext(ctx, "SELECT installed FROM duckdb_extensions() WHERE extension_name = 'httpfs'").Scan(&installed); err != nil || !installed {
		t.Logf("DuckDB's httpfs is not installed (duckdb-go does not build it in; DuckDB downloads it from extensions.duckdb.org): the query reads a copy downloaded from %s instead of the URL", run)
		where = fetch(t, run)
	} else {
		exec("LOAD httpfs")
		host := strings.TrimPrefix(srv.Endpoint, "http://")
		exec(fmt.Sprintf("CREATE SECRET (TYPE s3, KEY_ID '%s', SECRET '%s', REGION 'us-east-1', ENDPOINT '%s', URL_STYLE 'path', USE_SSL false)", srv.Access, srv.Secret, host))
	}
	exec(fmt.Sprintf("SET VARIABLE run = '%s'", where))
	q, err := os.ReadFile("../../examples/duckdb/ttft_p99_by_stage.sql")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, string(q))
	if err != nil {
		t.Fatalf("ttft_p99_by_stage.sql on %s: %v", where, err)
	}
	defer rows.Close()
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(fetch(t, run), "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; rows.Next(); n++ {
		var stage, count, p50, p99 int64
		if err := rows.Scan(&stage, &count, &p50, &p99); err != nil {
			t.Fatal(err)
		}
		s := stages[stage].TTFT
		if count != s.Count || p50 != val(s.P50) || p99 != val(s.P99) {
			t.Errorf("stage %d: SQL count, p50, p99 = %d, %d, %d; stages.parquet %d, %d, %d", stage, count, p50, p99, s.Count, val(s.P50), val(s.P99))
		}
	}
	if n != len(stages) {
		t.Errorf("SQL gave %d stages; want %d", n, len(stages))
	}
}
