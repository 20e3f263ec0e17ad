package calibrate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

func TestTruthOutside(t *testing.T) {
	a := int64(TruthAllowance)
	for _, tt := range []struct {
		name string
		tr   Truth
		t    int64
		want int64
	}{
		{"inside", Truth{1000, 2000}, 1500, 0},
		{"at the stamp before the write", Truth{1000, 2000}, 1000, 0},
		{"at the stamp after the write", Truth{1000, 2000}, 2000, 0},
		{"just below, within the allowance", Truth{1000, 2000}, 1000 - a, 0},
		{"below the allowance", Truth{1000, 2000}, 1000 - a - 5, -5},
		{"above the allowance", Truth{1000, 2000}, 2000 + a + 7, 7},
		// no stamp after the write (a whole response): bounded below only
		{"no post, far above", Truth{1000, 0}, 1e12, 0},
		{"no post, below", Truth{1000, 0}, 1000 - a - 1, -1},
	} {
		if got := tt.tr.Outside(tt.t); got != tt.want {
			t.Errorf("%s: Truth%+v.Outside(%d) = %d; want %d", tt.name, tt.tr, tt.t, got, tt.want)
		}
	}
}

// TestCoverTTFT: an interval meets the simulator's write window or misses it early or late;
// a simulator held up 2 ms between its stamp and its write (the stamp alone 2 ms below the
// interval) is covered through its stamp after the write.
func TestCoverTTFT(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	const us = int64(time.Microsecond)
	const s0 = int64(1e18) // S of every request
	// The first content event's window [pre, post] as TTFTs from S, and the interval.
	type tc struct {
		name           string
		pre, post      int64 // post 0: not reported
		lo, hi         int64
		covered, early bool // else late
	}
	cases := []tc{
		{"exact, inside", 20_000 * us, 20_010 * us, 20_005*us - 20*us, 20_005 * us, true, false},
		{"held up 2 ms between stamp and write", 20_000 * us, 22_010 * us, 22_005*us - 20*us, 22_005 * us, true, false},
		{"wide upper bound holding the window", 20_000 * us, 20_010 * us, 19_000 * us, 25_000 * us, true, false},
		{"no stamp after the write, later interval", 20_000 * us, 0, 30_000 * us, 31_000 * us, true, false},
		{"interval ends before the write began", 20_000 * us, 20_010 * us, 19_000 * us, 19_990 * us, false, true},
		{"interval begins after the write returned", 20_000 * us, 20_010 * us, 20_020 * us, 20_030 * us, false, false},
	}
	var reqs []schemas.MetricRequest
	var chunks []schemas.RawChunk
	for i, c := range cases {
		seq := int64(i)
		reqs = append(reqs, schemas.MetricRequest{Seq: seq, Stage: 1, OK: true, SentNs: s0, TTFTLoNs: p(c.lo), TTFTHiNs: p(c.hi)})
		ch := schemas.RawChunk{Seq: seq, Index: 1, Kind: schemas.ChunkContent, ServerSentNs: s0 + c.pre}
		if c.post != 0 {
			ch.ServerSentEndNs = s0 + c.post
		}
		// a later content event far off must not count: only the first is the TTFT's
		chunks = append(chunks, schemas.RawChunk{Seq: seq, Index: 0, Kind: schemas.ChunkEmpty}, ch,
			schemas.RawChunk{Seq: seq, Index: 2, Kind: schemas.ChunkContent, ServerSentNs: s0 + 90_000*us, ServerSentEndNs: s0 + 90_001*us})
	}
	cov := CoverTTFT(reqs, chunks)[1]
	if cov == nil {
		t.Fatal("CoverTTFT: no coverage for stage 1")
	}
	var covered, early, late int
	for _, c := range cases {
		switch {
		case c.covered:
			covered++
		case c.early:
			early++
		default:
			late++
		}
	}
	if cov.Requests != len(cases) || cov.Covered != covered || cov.Early != early || cov.Late != late {
		t.Errorf("CoverTTFT = %d requests, %d covered, %d early, %d late; want %d, %d, %d, %d: %s",
			cov.Requests, cov.Covered, cov.Early, cov.Late, len(cases), covered, early, late, strings.Join(cov.Misses, "; "))
	}
	for i, c := range cases {
		missed := strings.Contains(strings.Join(cov.Misses, "; "), fmt.Sprintf("seq %d:", i))
		if missed == c.covered {
			t.Errorf("%s: listed among the misses %v; want %v", c.name, missed, !c.covered)
		}
	}
}

// TestAddStamps: transit and write durations over exact content events, and the kernel stamps
// outside their write counted.
func TestAddStamps(t *testing.T) {
	chunks := []schemas.RawChunk{
		{Kind: schemas.ChunkContent, Quality: schemas.QualityExact, RxKernelNs: 1010, ServerSentNs: 1000, ServerSentEndNs: 1030},
		{Kind: schemas.ChunkContent, Quality: schemas.QualityExact, RxKernelNs: 5000, ServerSentNs: 1000, ServerSentEndNs: 1030}, // outside
		{Kind: schemas.ChunkContent, Quality: schemas.QualityExact, RxKernelNs: 1500, ServerSentNs: 1000},                        // no post: inside
		{Kind: schemas.ChunkContent, Quality: schemas.QualityUpperBound, RxKernelNs: 9000, ServerSentNs: 1000, ServerSentEndNs: 1030},
		{Kind: schemas.ChunkDone, Quality: schemas.QualityExact, RxKernelNs: 9000, ServerSentNs: 1000, ServerSentEndNs: 1030},
	}
	var c schemas.Calibration
	addStamps(&c, chunks)
	if c.StampTransit.N != 3 || c.StampWrite.N != 2 || c.StampWrite.P50 != 30 || c.StampOutside != 1 {
		t.Errorf("addStamps: transit %+v, write %+v, outside %d; want 3 transits, 2 writes of 30 ns, 1 outside", c.StampTransit, c.StampWrite, c.StampOutside)
	}
}
