package aggregate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// benchRequests is the synthetic run size: WIREBENCH_AGG_BENCH_REQUESTS requests (default
// 20000, what `make bench` runs), 16 content events and a done event each (17 chunk rows per
// request: 3,000,000 requests give 51,000,000 chunks).
func benchRequests() int {
	if v, err := strconv.Atoi(os.Getenv("WIREBENCH_AGG_BENCH_REQUESTS")); err == nil && v > 0 {
		return v
	}
	return 20000
}

// genRun writes a synthetic run of n requests over 2 workers, parts of 100,000 requests, in
// batches so generation itself stays small.
func genRun(tb testing.TB, dir string, n int) int64 {
	tb.Helper()
	const workers, partReqs, batch = 2, 100_000, 4096
	f := newFixture()
	f.stages[0].Rate = float64(n) / 600
	f.workers = []schemas.Worker{{Worker: 0, WallNs: 600e9, CPUUserNs: 60e9}, {Worker: 1, WallNs: 600e9, CPUUserNs: 60e9}}
	f.write(tb, dir) // manifest and workers; the parts follow
	p := schemas.Producer{Command: "bench"}
	var chunks int64
	seq := int64(0)
	for w := range workers {
		for part := 0; part*partReqs < n/workers; part++ {
			rw, err := schemas.Create[schemas.RawRequest](filepath.Join(dir, "raw", partName("requests", [2]int{w, part})), p)
			if err != nil {
				tb.Fatal(err)
			}
			cw, err := schemas.Create[schemas.RawChunk](filepath.Join(dir, "raw", partName("chunks", [2]int{w, part})), p)
			if err != nil {
				tb.Fatal(err)
			}
			var rb []schemas.RawRequest
			var cb []schemas.RawChunk
			for i := 0; i < partReqs && part*partReqs+i < n/workers; i++ {
				seq++
				s := t0 + seq*200_000
				ttft := 20*ms + (seq%97)*100_000
				rb = append(rb, schemas.RawRequest{Seq: seq, Worker: int32(w), PlannedNs: s, SentNs: s + 50_000, DoneNs: ptr[int64](s + ttft + 16*20*ms),
					Status: 200, InputTokens: int32(100 + seq%500), UsagePrompt: ptr[int32](int32(100 + seq%500)), UsageComplete: ptr[int32](16),
					ServerPrefillNs: ptr[int64](10 * ms)})
				for j := range 17 {
					kind := "content"
					if j == 16 {
						kind = "done"
					}
					at := s + ttft + int64(j)*20*ms + (seq*int64(j))%1000
					cb = append(cb, schemas.RawChunk{Seq: seq, Index: int32(j), RxKernelNs: at, RxUserNs: at + 30_000, Quality: "exact", Kind: kind})
				}
				if len(rb) == batch {
					if err := rw.Write(rb); err != nil {
						tb.Fatal(err)
					}
					if err := cw.Write(cb); err != nil {
						tb.Fatal(err)
					}
					chunks += int64(len(cb))
					rb, cb = rb[:0], cb[:0]
				}
			}
			if err := rw.Write(rb); err != nil {
				tb.Fatal(err)
			}
			if err := cw.Write(cb); err != nil {
				tb.Fatal(err)
			}
			chunks += int64(len(cb))
			if err := rw.Close(); err != nil {
				tb.Fatal(err)
			}
			if err := cw.Close(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return chunks
}

// BenchmarkAggregate reports chunk rows per second and the process's peak RSS on a synthetic
// run (size from WIREBENCH_AGG_BENCH_REQUESTS). The peak includes generating the run; with
// WIREBENCH_AGG_BENCH_OUT=DIR the run is written to DIR and kept, so aggregate's own peak can be
// measured on it: /usr/bin/time -v wirebench aggregate DIR.
func BenchmarkAggregate(b *testing.B) {
	dir := b.TempDir()
	if d := os.Getenv("WIREBENCH_AGG_BENCH_OUT"); d != "" {
		dir = d
	}
	n := benchRequests()
	chunks := genRun(b, dir, n)
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for b.Loop() {
		sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
		if err != nil {
			b.Fatal(err)
		}
		if sum.Chunks != chunks {
			b.Fatalf("read %d chunks; want %d", sum.Chunks, chunks)
		}
	}
	b.StopTimer()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(chunks)/sec, "chunks/s")
	b.ReportMetric(float64(n)/sec, "requests/s")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
}
