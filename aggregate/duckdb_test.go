//go:build duckdb

package aggregate

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/wirebench/wirebench/schemas"
)

// duckRun opens an in-memory DuckDB connection with the variable run set to dir, closed when the
// test ends.
func duckRun(t *testing.T, dir string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), fmt.Sprintf("SET VARIABLE run = '%s'", dir)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestDuckDBCrossCheck recomputes TTFT p50/p99 and output tokens per second per stage from the
// raw shards with the SQL of examples/duckdb and compares them with stages.parquet.
func TestDuckDBCrossCheck(t *testing.T) {
	dir := linearRun().write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	conn := duckRun(t, dir)
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
		if count != s.TTFT.Count || !eq(&p50, s.TTFT.P50) || !eq(&p99, s.TTFT.P99) {
			t.Errorf("stage %d: SQL count, p50, p99 = %d, %d, %d; stages.parquet %d, %s, %s", stage, count, p50, p99, s.TTFT.Count, show(s.TTFT.P50), show(s.TTFT.P99))
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
		if s := sum.Stages[stage]; fmt.Sprintf("%.6f", tps) != fmt.Sprintf("%.6f", val(s.OutputTPS)) {
			t.Errorf("stage %d: SQL output_tps = %.6f; stages.parquet %.6f", stage, tps, val(s.OutputTPS))
		}
		n++
	}
	rows.Close()
	if n != len(sum.Stages) {
		t.Errorf("SQL gave %d stages; want %d", n, len(sum.Stages))
	}
}

// TestDuckDBTapJoin redoes the packet-tap join with examples/duckdb/tap_join.sql on a hand-made
// run (two connections on one port, a server ISN that wraps, a retransmission, data before any
// handshake) and compares it with LoadTapTimes.
func TestDuckDBTapJoin(t *testing.T) {
	f := newFixture()
	sent := func(ns int64) int64 { return t0 + ns }
	f.req(schemas.RawRequest{Seq: 1, PlannedNs: sent(100), SentNs: sent(105), LocalPort: ptr[int32](9), TxStreamEnd: ptr[int64](300), DoneNs: ptr[int64](sent(400))})
	f.req(schemas.RawRequest{Seq: 2, PlannedNs: sent(1000), SentNs: sent(1005), LocalPort: ptr[int32](9), TxStreamEnd: ptr[int64](10), DoneNs: ptr[int64](sent(1200))})
	for _, c := range []struct {
		seq, index, end int64
	}{{1, 0, 20}, {1, 1, 50}, {1, 2, 60}, {2, 0, 5}} {
		f.chunk(0, schemas.RawChunk{Seq: c.seq, Index: int32(c.index), RxUserNs: sent(500), Kind: "content", RxStreamEnd: c.end})
	}
	dir := f.write(t, t.TempDir())
	isnRx := int64(0xffff_fff0)
	segs := []schemas.RawSegment{
		{TsNs: sent(50), Dir: "rx", LocalPort: 9, Seq: 7, Len: 10, Flags: 24},
		{TsNs: sent(100), Dir: "tx", LocalPort: 9, Seq: 1000, Flags: 2},
		{TsNs: sent(101), Dir: "rx", LocalPort: 9, Seq: isnRx, Flags: 18},
		{TsNs: sent(110), Dir: "tx", LocalPort: 9, Seq: 1001, Len: 300, Flags: 24},
		{TsNs: sent(200), Dir: "rx", LocalPort: 9, Seq: (isnRx + 1) % (1 << 32), Len: 20, Flags: 24},
		{TsNs: sent(300), Dir: "rx", LocalPort: 9, Seq: (isnRx + 21) % (1 << 32), Len: 30, Flags: 24},
		{TsNs: sent(250), Dir: "rx", LocalPort: 9, Seq: (isnRx + 21) % (1 << 32), Len: 30, Flags: 24},
		{TsNs: sent(1000), Dir: "tx", LocalPort: 9, Seq: 5000, Flags: 2},
		{TsNs: sent(1001), Dir: "rx", LocalPort: 9, Seq: 70, Flags: 18},
		{TsNs: sent(1010), Dir: "tx", LocalPort: 9, Seq: 5001, Len: 10, Flags: 24},
		{TsNs: sent(1100), Dir: "rx", LocalPort: 9, Seq: 71, Len: 5, Flags: 24},
	}
	if err := schemas.WriteFile(filepath.Join(dir, "raw", "segments-0000.parquet"), segs, schemas.Producer{Command: "test"}); err != nil {
		t.Fatal(err)
	}
	tt, err := LoadTapTimes(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	conn := duckRun(t, dir)
	b, err := os.ReadFile("../examples/duckdb/tap_join.sql")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(context.Background(), string(b))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	rx, tx := 0, map[int64]bool{}
	for rows.Next() {
		var seq, index int64
		var rxNs, txNs sql.NullInt64
		if err := rows.Scan(&seq, &index, &rxNs, &txNs); err != nil {
			t.Fatal(err)
		}
		want, ok := tt.Rx[[2]int64{seq, index}]
		if rxNs.Valid != ok || rxNs.Int64 != want {
			t.Errorf("seq %d event %d: SQL rx_tap_ns %v; LoadTapTimes %d (%v)", seq, index, rxNs, want, ok)
		}
		if rxNs.Valid {
			rx++
		}
		if w, ok := tt.Tx[seq]; txNs.Valid != ok || txNs.Int64 != w {
			t.Errorf("seq %d: SQL tx_tap_ns %v; LoadTapTimes %d (%v)", seq, txNs, w, ok)
		}
		tx[seq] = txNs.Valid
	}
	// Expected by hand: events 1/0 at 200, 1/1 at 250 (the earlier copy), 2/0 at 1100; 1/2 (byte
	// 59) was never seen; both requests' last segments at 110 and 1010.
	if rx != 3 || len(tt.Rx) != 3 || tt.Rx[[2]int64{1, 1}] != sent(250) || tt.Tx[2] != sent(1010) || !tx[1] || !tx[2] {
		t.Errorf("tap times %v / %v (SQL: %d events); want 3 events and 2 requests as computed by hand", tt.Rx, tt.Tx, rx)
	}
}
