//go:build duckdb

package aggregate

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// TestDuckDBCrossCheck recomputes TTFT p50/p99 and output tokens per second per stage from the
// raw shards with the SQL of examples/duckdb and compares them with stages.parquet.
func TestDuckDBCrossCheck(t *testing.T) {
	dir := linearRun().write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), fmt.Sprintf("SET VARIABLE run = '%s'", dir)); err != nil {
		t.Fatal(err)
	}
	query := func(file string) *sql.Rows {
		b, err := os.ReadFile("../examples/duckdb/" + file)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(context.Background(), string(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return rows
	}
	rows := query("ttft_p99_by_stage.sql")
	n := 0
	for rows.Next() {
		var stage, count, p50, p99 int64
		if err := rows.Scan(&stage, &count, &p50, &p99); err != nil {
			t.Fatal(err)
		}
		s := sum.Stages[stage]
		if count != s.TTFT.Count || p50 != s.TTFT.P50 || p99 != s.TTFT.P99 {
			t.Errorf("stage %d: SQL count, p50, p99 = %d, %d, %d; stages.parquet %d, %d, %d", stage, count, p50, p99, s.TTFT.Count, s.TTFT.P50, s.TTFT.P99)
		}
		n++
	}
	rows.Close()
	if n != len(sum.Stages) {
		t.Errorf("SQL gave %d stages; want %d", n, len(sum.Stages))
	}
	rows = query("tokens_per_second.sql")
	n = 0
	for rows.Next() {
		var stage, tokens int64
		var tps float64
		if err := rows.Scan(&stage, &tokens, &tps); err != nil {
			t.Fatal(err)
		}
		if s := sum.Stages[stage]; fmt.Sprintf("%.6f", tps) != fmt.Sprintf("%.6f", s.OutputTPS) {
			t.Errorf("stage %d: SQL output_tps = %.6f; stages.parquet %.6f", stage, tps, s.OutputTPS)
		}
		n++
	}
	rows.Close()
	if n != len(sum.Stages) {
		t.Errorf("SQL gave %d stages; want %d", n, len(sum.Stages))
	}
}
