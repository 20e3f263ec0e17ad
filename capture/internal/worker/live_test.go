package worker

import (
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestLiveTally: TTFT from the send to the first content event, ITL between content events,
// E2E to the final event, send lag from the planned time; a failed request counts by its
// kind and in no latency; take returns only the stages that changed.
func TestLiveTally(t *testing.T) {
	const ms = int64(1e6)
	done := 1102 * ms // E2E 100 ms
	l := newLiveTally(2)
	ok := schemas.RawRequest{Stage: 1, PlannedNs: 1000 * ms, SentNs: 1002 * ms, DoneNs: &done}
	chunks := []schemas.RawChunk{
		{Kind: schemas.ChunkContent, RxUserNs: 1022 * ms}, // TTFT 20 ms
		{Kind: schemas.ChunkContent, RxUserNs: 1027 * ms}, // ITL 5 ms
		{Kind: "usage", RxUserNs: 1100 * ms},              // not content: no gap
		{Kind: schemas.ChunkContent, RxUserNs: 1034 * ms}, // ITL 7 ms
	}
	l.add(&ok, chunks)
	bad := schemas.RawRequest{Stage: 1, PlannedNs: 1000 * ms, SentNs: 1000 * ms, ErrorKind: "timeout"}
	l.add(&bad, nil)
	got := l.take()
	s := got[1]
	if len(got) != 1 || s == nil {
		t.Fatalf("take() = %v; want stage 1 only", got)
	}
	at := func(h Hist, bounds []float64, sec float64) int64 {
		for i, b := range bounds {
			if sec <= b {
				return h.Counts[i]
			}
		}
		return h.Counts[len(bounds)]
	}
	for _, c := range []struct {
		name   string
		h      Hist
		bounds []float64
		at     float64
		n      int64
		sumNs  int64
	}{
		{"ttft", s.TTFT, LatencyBounds, 0.020, 1, 20 * ms},
		{"itl", s.ITL, GapBounds, 0.005, 1, 12 * ms},
		{"itl", s.ITL, GapBounds, 0.007, 1, 12 * ms},
		{"e2e", s.E2E, LatencyBounds, 0.100, 1, 100 * ms},
		{"send lag", s.SendLag, LagBounds, 0.002, 1, 2 * ms},
	} {
		if n := at(c.h, c.bounds, c.at); n != c.n || c.h.SumNs != c.sumNs {
			t.Errorf("%s: %d in the bucket of %v s, sum %d ns; want %d, %d", c.name, n, c.at, c.h.SumNs, c.n, c.sumNs)
		}
	}
	if s.Errors["timeout"] != 1 {
		t.Errorf("errors %v; want timeout 1", s.Errors)
	}
	if got := l.take(); got != nil {
		t.Errorf("take() again = %v; want nothing changed", got)
	}
	// Steady state: counting allocates nothing.
	if n := testing.AllocsPerRun(100, func() { l.add(&ok, chunks); l.add(&bad, nil) }); n != 0 {
		t.Errorf("add: %v allocations a request; want 0", n)
	}
}
