package main

import (
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// maxWorkerRSS bounds a worker's resident memory under the default memory budget (256 MiB of
// responses in flight, about twice that with the garbage collector's headroom). Without the
// budget, four responses of 1.1 million events took 2.3 GB.
const maxWorkerRSS = 1 << 30

// A server that streams 1.1 million events on four requests at once to one worker: the worker's
// memory budget (default) ends requests with kind memory_budget before the per-response bound
// (1,048,576 events) could, the run completes, and the worker's max RSS stays under 1 GiB.
func TestMemoryBudgetBoundsAWorker(t *testing.T) {
	srv, err := hostile.StartAfter(2, hostile.Case{Name: "1.1 M events", Respond: hostile.Events(1_100_000)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// 6 requests in 100 ms: two good answers (so the first second is not all failures), then
	// four long streams in flight together.
	run := captureRun(t, srv.URL, construn.Stage{Rate: 60, Duration: 100 * time.Millisecond, MaxTokens: 4})
	if _, errOut, err := wirebench(t, 3*time.Minute, "capture", run, "--workers", "1", "--connections", "6", "--quiet", "--tap", "off"); err != nil {
		t.Fatalf("capture: %v\n%s", err, errOut)
	}
	m, reqs, _ := rawFiles(t, run)
	if m.Status != schemas.StatusComplete || len(reqs) != 6 {
		t.Fatalf("manifest %s with %d requests; want complete with the 6 planned", m.Status, len(reqs))
	}
	kinds := map[string]int{}
	for _, r := range reqs {
		kinds[r.ErrorKind]++
		if r.ErrorKind == schemas.ErrMemoryBudget && (r.Chunks == 0 || r.DoneNs != nil) {
			t.Errorf("seq %d: memory_budget with %d chunks, done %v; want the events it had kept and no done_ns", r.Seq, r.Chunks, r.DoneNs)
		}
	}
	if kinds[""] != 2 || kinds[schemas.ErrMemoryBudget] == 0 || kinds[schemas.ErrMemoryBudget]+kinds[schemas.ErrTooLarge] != 4 {
		t.Errorf("kinds %v; want 2 ok and the 4 long streams memory_budget (at least one) or too_large", kinds)
	}
	workers, err := schemas.ReadFile[schemas.Worker](schemas.FileOf[schemas.Worker](run))
	if err != nil || len(workers) == 0 {
		t.Fatalf("workers.parquet: %v, %d rows", err, len(workers))
	}
	var rss int64
	for _, w := range workers {
		rss = max(rss, w.MaxRSSBytes)
	}
	if rss == 0 || rss > maxWorkerRSS {
		t.Errorf("worker max RSS %d MiB; want at most %d MiB", rss>>20, maxWorkerRSS>>20)
	}
	t.Logf("kinds %v, worker max RSS %d MiB", kinds, rss>>20)
}
