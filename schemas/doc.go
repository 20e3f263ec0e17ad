// Package schemas defines every file wirebench writes: one Go row struct per Parquet file kind,
// the schema version stamped into each file, the run manifest, and the helpers that write a file
// atomically and open one with its version checked.
//
// Stages talk only through these files, so a run can be re-analysed offline and read by DuckDB,
// Spark, pandas or polars straight from the column documentation in SCHEMAS.md (generated from
// the `doc` tags below by `wirebench schema --format md`).
//
// Conventions: every time is int64 nanoseconds of CLOCK_REALTIME (column suffix `_ns` on a point
// in time); every duration is int64 nanoseconds (suffix `_ns` as well; the doc says which);
// token counts end in `_tokens`, sizes in `_bytes`. A column that can be unknown is optional
// (Parquet null), never a magic zero.
package schemas
