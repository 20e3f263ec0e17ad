package aggregate

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestDistExact checks the spilling two-pass selection against sorting every value.
func TestDistExact(t *testing.T) {
	oldMem, oldCollect := memValues, collectLimit
	memValues, collectLimit = 100, 64 // spill early, and narrow buckets of more than 64 values
	defer func() { memValues, collectLimit = oldMem, oldCollect }()
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name     string
		n        int
		gen      func() int64
		weighted bool
	}{
		{"small in memory", 50, func() int64 { return rng.Int64N(1000) }, false},
		{"spilled lognormal-ish", 20000, func() int64 { return int64(rng.ExpFloat64() * 5e6) }, false},
		{"spilled all equal large", 5000, func() int64 { return 123_456_789 }, false},
		{"spilled negative", 5000, func() int64 { return rng.Int64N(2e6) - 1e6 }, false},
		{"weighted spilled", 5000, func() int64 { return rng.Int64N(1e9) }, true},
		// Clustered values: most in one log-linear bucket, so selection must narrow it.
		{"spilled clustered", 20000, func() int64 { return 10_000_000 + rng.Int64N(5000) }, false},
		{"spilled two values", 20000, func() int64 { return 10_000_000 + 7*rng.Int64N(2) }, false},
		{"weighted clustered", 5000, func() int64 { return 5_000_000 + rng.Int64N(3000) }, true},
	}
	for _, tt := range tests {
		d := newDist(t.TempDir(), tt.weighted)
		var all []int64
		for range tt.n {
			v, w := tt.gen(), int64(1)
			if tt.weighted {
				w = 1 + rng.Int64N(4)
			}
			d.addW(v, w)
			for range w {
				all = append(all, v)
			}
		}
		got, err := d.finish()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(all)
		n := int64(len(all))
		var sum float64
		for _, v := range all {
			sum += float64(v)
		}
		want := pointDist{Count: n, P50: all[NearestRank(0.5, n)-1], P90: all[NearestRank(0.9, n)-1], P95: all[NearestRank(0.95, n)-1],
			P99: all[NearestRank(0.99, n)-1], P999: all[NearestRank(0.999, n)-1], Max: all[n-1], Mean: int64(sum/float64(n) + 0.5)}
		// A plain dist's values carry no client error: its bounds are its percentiles.
		if !eq(got.P50Lo, got.P50) || !eq(got.P50Hi, got.P50) || !eq(got.P90Lo, got.P90) || !eq(got.P90Hi, got.P90) ||
			!eq(got.P99Lo, got.P99) || !eq(got.P99Hi, got.P99) {
			t.Errorf("%s: bounds %v; want the percentiles themselves", tt.name, got)
		}
		gp := point(got)
		if gp.Mean-want.Mean > 1 || want.Mean-gp.Mean > 1 {
			t.Errorf("%s: mean = %d; want %d", tt.name, gp.Mean, want.Mean)
		}
		gp.Mean = want.Mean
		if gp != want {
			t.Errorf("%s: dist = %+v; want %+v", tt.name, gp, want)
		}
	}
}

func TestRank(t *testing.T) {
	tests := []struct {
		q    float64
		n    int64
		want int64
	}{
		{0.5, 4, 2}, {0.5, 5, 3}, {0.95, 20, 19}, {0.99, 100, 99}, {0.999, 10, 10}, {0.5, 1, 1}, {0.9, 3, 3},
	}
	for _, tt := range tests {
		if got := NearestRank(tt.q, tt.n); got != tt.want {
			t.Errorf("rank(%v, %d) = %d; want %d", tt.q, tt.n, got, tt.want)
		}
	}
}

// linearRun has two stages without server timings where TTFT = 2 ms + 10 µs·I exactly in the
// low-load stage and 5 ms more queueing in the second.
func linearRun() *fixture {
	f := newFixture()
	f.stages = append(f.stages, schemas.StageInfo{Index: 1, Name: "r20", Mode: "open", Rate: 20, OffsetNs: 1e9, DurationNs: 1e9})
	seq := int64(0)
	for stage := range 2 {
		for i := range 10 {
			seq++
			in := int32(100 * (i + 1))
			s := t0 + int64(stage)*1e9 + int64(i)*50*ms
			ttft := 2*ms + 10_000*int64(in) + int64(stage)*5*ms
			f.req(schemas.RawRequest{Seq: seq, Stage: int32(stage), PlannedNs: s, SentNs: s, DoneNs: ptr[int64](s + ttft + 10*ms), UsagePrompt: ptr[int32](in), UsageComplete: ptr[int32](3)})
			for j, at := range []int64{ttft, ttft + 5*ms, ttft + 10*ms} {
				f.chunk(0, schemas.RawChunk{Seq: seq, Index: int32(j), RxUserNs: s + at, Kind: "content"})
			}
		}
	}
	return f
}

func TestFitDecomposition(t *testing.T) {
	dir := linearRun().write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sum.Stages {
		if s.DecompositionSource != schemas.DecompositionFit || val(s.PrefillPerTokenNs) != 10_000 {
			t.Errorf("stage %d: source %q, prefill per token %v; want fit, 10000", s.Stage, s.DecompositionSource, val(s.PrefillPerTokenNs))
		}
	}
	for _, m := range readRequests(t, dir) {
		wantQ := int64(0)
		if m.Stage == 1 {
			wantQ = 5 * ms
		}
		if m.QueueNs == nil || *m.QueueNs != wantQ || *m.PrefillNs != 2*ms+10_000*int64(*m.InputTokens) {
			t.Errorf("seq %d: queue %s prefill %s; want %d and %d", m.Seq, show(m.QueueNs), show(m.PrefillNs), wantQ, 2*ms+10_000*int64(*m.InputTokens))
		}
		checkNTPOTIdentity(t, m)
	}
}

func TestHistogramDecomposition(t *testing.T) {
	f := linearRun()
	// Stage 0 scrapes: prefill sum grows 0.055 s over 5500 prompt tokens -> 10 µs per token.
	f.server = []schemas.ServerMetric{
		{Stage: 0, Name: histPrefillSum, Value: 1}, {Stage: 0, Name: histPrefillSum, Value: 1.055},
		{Stage: 0, Name: histPromptSum, Value: 500}, {Stage: 0, Name: histPromptSum, Value: 6000},
	}
	dir := f.write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if s := sum.Stages[0]; s.DecompositionSource != schemas.DecompositionHistograms || int64(val(s.PrefillPerTokenNs)+0.5) != 10_000 {
		t.Errorf("stage 0: source %q, prefill per token %v; want histograms, 10000", s.DecompositionSource, val(s.PrefillPerTokenNs))
	}
	if s := sum.Stages[1]; s.DecompositionSource != schemas.DecompositionFit {
		t.Errorf("stage 1 (no scrapes): source %q; want fit", s.DecompositionSource)
	}
	for _, m := range readRequests(t, dir) {
		if m.Stage == 0 && (*m.PrefillNs != 10_000*int64(*m.InputTokens) || *m.QueueNs != 2*ms) {
			t.Errorf("seq %d: prefill %d queue %d; want %d and %d", m.Seq, *m.PrefillNs, *m.QueueNs, 10_000*int64(*m.InputTokens), 2*ms)
		}
		checkNTPOTIdentity(t, m)
	}
}

func TestMergeHosts(t *testing.T) {
	a := handRun()
	b := handRun()
	// Host b's requests are other seqs; its times are taken as they are (no clock offset).
	a.shard, b.shard = "0/2", "1/2"
	a.stages[0].Requests = 200 // the plan of both hosts (a's manifest is the reference)
	for k, rows := range b.reqs {
		for i := range rows {
			rows[i].Seq += 100
		}
		for i := range b.chunks[k] {
			b.chunks[k][i].Seq += 100
		}
	}
	da, db, out := a.write(t, t.TempDir()), b.write(t, t.TempDir()), t.TempDir()
	sum, err := Run(context.Background(), Config{Runs: []string{da, db}, Out: out}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 12 || sum.Stages[0].Requests != 12 || sum.Stages[0].Completed != 10 {
		t.Errorf("merged: %d requests read, stage requests %d completed %d; want 12, 12, 10", sum.Requests, sum.Stages[0].Requests, sum.Stages[0].Completed)
	}
	got := readRequests(t, out)
	if got[101].SentNs != got[1].SentNs || *got[101].TTFTNs != *got[1].TTFTNs {
		t.Errorf("host b: sent %d vs %d, ttft %d vs %d; want its times as they are", got[101].SentNs, got[1].SentNs, *got[101].TTFTNs, *got[1].TTFTNs)
	}
	if _, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName)); err != nil {
		t.Errorf("merged manifest: %v", err)
	}

	b.runID = "run-2"
	db2 := b.write(t, t.TempDir())
	if _, err := Run(context.Background(), Config{Runs: []string{da, db2}, Out: t.TempDir()}, quietLog()); err == nil || !strings.Contains(err.Error(), "run-2") {
		t.Errorf("merging two run ids: err = %v; want an error naming run-2", err)
	}
}

func TestSaturation(t *testing.T) {
	mk := func(idx int32, rate float64, p50 int64, sends, done int64) (schemas.Stage, *stageAcc) {
		acc := newStageAcc(schemas.StageInfo{Index: idx, Mode: "open", Rate: rate}, 0, "")
		acc.requests, acc.firstSent, acc.lastSent = sends*10, 0, 1e9
		for range 10 {
			acc.ts = append(acc.ts, tsBucket{sends: sends, completions: done})
		}
		return schemas.Stage{Stage: idx, TargetRate: rate, Completed: 1, TTFT: schemas.Dist{Count: 1, P50: &p50}}, acc
	}
	tests := []struct {
		name string
		p50  [3]int64
		done [3]int64
		want int
	}{
		{"follows load", [3]int64{10 * ms, 11 * ms, 12 * ms}, [3]int64{1, 2, 4}, -1},
		{"completions fall behind at stage 2", [3]int64{10 * ms, 11 * ms, 12 * ms}, [3]int64{1, 2, 3}, 2},
		{"latency leaves plateau at stage 1", [3]int64{10 * ms, 25 * ms, 30 * ms}, [3]int64{1, 2, 4}, 1},
		{"doubling under 1 ms is noise", [3]int64{100_000, 300_000, 900_000}, [3]int64{1, 2, 4}, -1},
	}
	for _, tt := range tests {
		var rows []schemas.Stage
		var accs []*stageAcc
		for i, sends := range []int64{1, 2, 4} {
			r, a := mk(int32(i), float64(sends*10), tt.p50[i], sends, tt.done[i])
			rows, accs = append(rows, r), append(accs, a)
		}
		if got := saturation(rows, accs); got != tt.want {
			t.Errorf("%s: saturation = %d; want %d", tt.name, got, tt.want)
		}
	}
}
