package schemas

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// BenchmarkWriteRaw writes raw-chunks rows as a capture does (a part of 500,000 rows in batches
// of 4,096) with zstd at its default and fastest levels and with Snappy (raw/'s codec), and
// reports the CPU and file bytes per row.
// The rows are those of 64-token streams read at the wire: an event every 10-20 µs of a
// request, kernel and user times a few µs apart, every field a worker fills.
func BenchmarkWriteRaw(b *testing.B) {
	rows := rawChunkRows(500_000)
	for _, c := range []struct {
		name  string
		codec compress.Codec
	}{
		{"zstd-default", &zstd.Codec{Level: zstd.SpeedDefault}},
		{"zstd-fastest", &zstd.Codec{Level: zstd.SpeedFastest}},
		{"snappy", &snappy.Codec{}},
	} {
		b.Run("chunks/"+c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "chunks-w00-0000.parquet")
			var size int64
			for b.Loop() {
				w, err := create[RawChunk](path, Producer{Command: "bench"}, c.codec)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < len(rows); i += 4096 {
					if err := w.Write(rows[i:min(i+4096, len(rows))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				size = fi.Size()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
			b.ReportMetric(float64(size)/float64(len(rows)), "B/row")
		})
	}
}

func rawChunkRows(n int) []RawChunk {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]RawChunk, n)
	t := int64(1_764_700_000_000_000_000)
	for i := range rows {
		t += 10_000 + r.Int64N(10_000)
		kernel, user, after, end := t, t+2_000+r.Int64N(6_000), t-r.Int64N(15_000), int64(200+(i%67)*130)
		tokens := int32(1)
		rows[i] = RawChunk{Seq: int64(i / 67), Index: int32(i % 67), RxKernelNs: kernel, RxUserNs: user,
			RxStreamEnd: end, RxAfterNs: after, Quality: QualityExact, Kind: "content", Bytes: 120 + int32(r.IntN(12)),
			ContentBytes: 3 + int32(r.IntN(6)), Tokens: &tokens}
	}
	return rows
}
