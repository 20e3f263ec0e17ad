package aggregate

import (
	"context"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestHistStats(t *testing.T) {
	tests := []struct {
		name     string
		d        map[string]float64
		clientIn float64
		want     histStage
	}{
		// P̄ = 0.075 s / 10, Ī = 5500 / 10.
		{"sum, count and prompt counter", map[string]float64{histPrefillSum: 0.075, histPrefillCnt: 10, histPromptTot: 5500}, 999, histStage{7.5e6, 550}},
		// The request_prompt_tokens histogram is preferred when it says more.
		{"prompt histogram", map[string]float64{histPrefillSum: 0.075, histPrefillCnt: 10, histPromptSum: 5500, histPromptTot: 10}, 0, histStage{7.5e6, 550}},
		// No prompt series: Ī is the client's mean input.
		{"count without prompt tokens", map[string]float64{histPrefillSum: 0.075, histPrefillCnt: 10}, 500, histStage{7.5e6, 500}},
		// No count: P̄ = sum/tokens · client Ī.
		{"prompt tokens without count", map[string]float64{histPrefillSum: 0.055, histPromptSum: 5500}, 550, histStage{5.5e6, 550}},
		{"no prefill increase", map[string]float64{histPrefillSum: 0, histPrefillCnt: 10, histPromptTot: 5500}, 550, histStage{}},
		{"no count, no tokens", map[string]float64{histPrefillSum: 0.075}, 550, histStage{}},
		{"count but no input length anywhere", map[string]float64{histPrefillSum: 0.075, histPrefillCnt: 10}, 0, histStage{}},
		{"no scrapes", nil, 550, histStage{}},
	}
	for _, tt := range tests {
		got := histStats(tt.d, tt.clientIn)
		if got.meanIn != tt.want.meanIn || int64(got.meanPrefillNs+0.5) != int64(tt.want.meanPrefillNs+0.5) {
			t.Errorf("%s: histStats = %+v; want %+v", tt.name, got, tt.want)
		}
	}
}

func TestHistStagePrefill(t *testing.T) {
	// A stage whose prefill is 2 ms + 10 µs·I, I from 100 to 1000: P̄ = 7.5 ms at Ī = 550.
	h := histStage{meanPrefillNs: 7.5e6, meanIn: 550}
	tests := []struct {
		in      int32
		b       float64
		slopeOK bool
		want    int64
	}{
		{100, 10_000, true, 3e6},            // P̄ + b·(I − Ī) = 2 ms + 10 µs·100
		{1000, 10_000, true, 12e6},          // 2 ms + 10 µs·1000
		{550, 10_000, true, 7.5e6},          // the mean request
		{100, 0, false, 1_363_636},          // no slope: P̄·I/Ī
		{1100, 0, false, 15e6},              // twice the mean input, twice the mean prefill
		{550, 123_456, false, int64(7.5e6)}, // slope ignored when not ok
	}
	for _, tt := range tests {
		if got := h.prefill(tt.in, tt.b, tt.slopeOK); got != tt.want {
			t.Errorf("prefill(%d, %v, %v) = %d; want %d", tt.in, tt.b, tt.slopeOK, got, tt.want)
		}
	}
}

// withServerTimings gives every request of f server timings that differ from the fixture's
// truth (queue 1 ms, prefill TTFT − 1 ms), so a forced other source visibly replaces them.
func withServerTimings(f *fixture) *fixture {
	for k, rows := range f.reqs {
		for i := range rows {
			rows[i].ServerQueueNs, rows[i].ServerPrefillNs, rows[i].ServerDecodeNs = ptr[int64](1*ms), ptr[int64](1*ms), ptr[int64](10*ms)
		}
		f.reqs[k] = rows
	}
	return f
}

// withFixedCostHistograms adds stage-0 scrapes of linearRun's true prefill, 2 ms + 10 µs·I per
// request (I = 100, 200, ..., 1000): sum 0.075 s over 10 requests and 5500 prompt tokens.
func withFixedCostHistograms(f *fixture) *fixture {
	f.server = []schemas.ServerMetric{
		{Stage: 0, Name: histPrefillSum, Value: 1}, {Stage: 0, Name: histPrefillSum, Value: 1.075},
		{Stage: 0, Name: histPrefillCnt, Value: 5}, {Stage: 0, Name: histPrefillCnt, Value: 15},
		{Stage: 0, Name: histPromptTot, Value: 500}, {Stage: 0, Name: histPromptTot, Value: 6000},
	}
	return f
}

func TestForcedDecomposition(t *testing.T) {
	truePrefill := func(m schemas.MetricRequest) int64 { return 2*ms + 10_000*int64(*m.InputTokens) }
	trueQueue := func(m schemas.MetricRequest) int64 { return int64(m.Stage) * 5 * ms }
	tests := []struct {
		name    string
		fix     func() *fixture
		mode    string
		strict  bool
		wantErr string // substring of the error; "" = success
		// per stage: the source every request gets ("" = undecomposed), and whether queue and
		// prefill must equal the fixture's truth
		source [2]string
		exact  [2]bool
	}{
		{"auto without server data is fit", linearRun, "", false, "", [2]string{schemas.DecompositionFit, schemas.DecompositionFit}, [2]bool{true, true}},
		{"auto prefers server timings", func() *fixture { return withServerTimings(linearRun()) }, "auto", false, "", [2]string{schemas.DecompositionServer, schemas.DecompositionServer}, [2]bool{false, false}},
		{"server forced without server timings", linearRun, schemas.DecompositionServer, false, "no request in", [2]string{}, [2]bool{}},
		{"histograms forced without scrapes", linearRun, schemas.DecompositionHistograms, false, "metrics_url", [2]string{}, [2]bool{}},
		{"fit forced over server timings", func() *fixture { return withServerTimings(linearRun()) }, schemas.DecompositionFit, false, "", [2]string{schemas.DecompositionFit, schemas.DecompositionFit}, [2]bool{true, true}},
		{"server forced leaves no-timing requests empty", func() *fixture { return withServerTimings(withFixedCostHistograms(linearRun())) }, schemas.DecompositionServer, false, "", [2]string{schemas.DecompositionServer, schemas.DecompositionServer}, [2]bool{false, false}},
		// Stage 0 has histograms with a fixed per-request cost: P̄ spread with the fit's slope
		// recovers 2 ms + 10 µs·I exactly. Stage 1 has no scrapes: left undecomposed, a warning.
		{"histograms forced over server timings", func() *fixture { return withServerTimings(withFixedCostHistograms(linearRun())) }, schemas.DecompositionHistograms, false, "", [2]string{schemas.DecompositionHistograms, ""}, [2]bool{true, false}},
		{"histograms forced, a stage without scrapes, strict", func() *fixture { return withWorkers(withFixedCostHistograms(linearRun())) }, schemas.DecompositionHistograms, true, "stage 1 has no prefill histogram", [2]string{}, [2]bool{}},
		{"auto: histograms where scraped, fit elsewhere", func() *fixture { return withFixedCostHistograms(linearRun()) }, "", false, "", [2]string{schemas.DecompositionHistograms, schemas.DecompositionFit}, [2]bool{true, true}},
		{"fit forced with one input length", func() *fixture { return withServerTimings(oneLengthRun()) }, schemas.DecompositionFit, false, "single input length", [2]string{}, [2]bool{}},
		{"unknown source", linearRun, "magic", false, `decomposition "magic"`, [2]string{}, [2]bool{}},
	}
	for _, tt := range tests {
		dir := tt.fix().write(t, t.TempDir())
		_, err := Run(context.Background(), Config{Runs: []string{dir}, Decomposition: tt.mode, Strict: tt.strict}, quietLog())
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Run error = %v; want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Run error = %v; want none", tt.name, err)
			continue
		}
		for _, m := range readRequests(t, dir) {
			if m.DecompositionSource != tt.source[m.Stage] {
				t.Errorf("%s: seq %d stage %d: decomposition_source = %q; want %q", tt.name, m.Seq, m.Stage, m.DecompositionSource, tt.source[m.Stage])
				continue
			}
			if tt.source[m.Stage] == "" && (m.QueueNs != nil || m.PrefillNs != nil || m.DecodeNs != nil) {
				t.Errorf("%s: seq %d: queue %s prefill %s decode %s; want all null", tt.name, m.Seq, show(m.QueueNs), show(m.PrefillNs), show(m.DecodeNs))
			}
			if tt.exact[m.Stage] && (m.QueueNs == nil || *m.QueueNs != trueQueue(m) || *m.PrefillNs != truePrefill(m)) {
				t.Errorf("%s: seq %d: queue %s prefill %s; want %d and %d", tt.name, m.Seq, show(m.QueueNs), show(m.PrefillNs), trueQueue(m), truePrefill(m))
			}
			checkNTPOTIdentity(t, m)
		}
	}
}

// oneLengthRun is linearRun with every input 300 tokens: no spread for the fit.
func oneLengthRun() *fixture {
	f := linearRun()
	for k, rows := range f.reqs {
		for i := range rows {
			rows[i].UsagePrompt = ptr[int32](300)
		}
		f.reqs[k] = rows
	}
	return f
}

// withWorkers adds raw/workers.parquet, so that --strict has nothing else to warn about.
func withWorkers(f *fixture) *fixture {
	for _, st := range f.stages {
		f.workers = append(f.workers, schemas.Worker{Stage: st.Index, WallNs: 1e9, CPUUserNs: 1e7})
	}
	return f
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
