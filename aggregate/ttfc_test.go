package aggregate

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// reasoningRun is a hand-made run of three reasoning-model requests (S = P, sent_end_ns 0.1 ms
// later, exact kernel times, stamp allowance 20 µs):
//   - seq 1: reasoning at 10 and 15 ms, answer text at 20 and 25 ms; usage 4 tokens, 2 of them
//     reasoning.
//   - seq 2: reasoning at 10 ms, then a tool-call delta at 30 ms (the answer is a tool call);
//     usage without reasoning tokens (Anthropic).
//   - seq 3: reasoning only (cut by the limit before any answer): no TTFC.
func reasoningRun() *fixture {
	f := newFixture()
	at := func(seq int64, v int64) *int64 { return ptr[int64](t0 + seq*100*ms + v) }
	type ev struct {
		at                    int64
		kind                  string
		content, reason, tool int32
	}
	add := func(seq int64, usage, reasoning *int32, evs ...ev) {
		s := t0 + seq*100*ms
		f.req(schemas.RawRequest{Seq: seq, PlannedNs: s, SentNs: s, SentEndNs: ptr[int64](s + 100_000), DoneNs: at(seq, evs[len(evs)-1].at),
			UsagePrompt: ptr[int32](10), UsageComplete: usage, UsageReasoning: reasoning, InputTokens: 10})
		for i, e := range evs {
			f.chunk(0, schemas.RawChunk{Seq: seq, Index: int32(i), RxKernelNs: *at(seq, e.at), RxUserNs: *at(seq, e.at) + 50_000, Kind: e.kind,
				ContentBytes: e.content, ReasoningBytes: e.reason, ToolCalls: e.tool})
		}
	}
	add(1, ptr[int32](4), ptr[int32](2), ev{10 * ms, "content", 0, 6, 0}, ev{15 * ms, "content", 0, 6, 0}, ev{20 * ms, "content", 6, 0, 0},
		ev{25 * ms, "content", 6, 0, 0}, ev{26 * ms, "usage", 0, 0, 0}, ev{27 * ms, "done", 0, 0, 0})
	add(2, ptr[int32](2), nil, ev{10 * ms, "content", 0, 6, 0}, ev{30 * ms, "content", 0, 0, 1}, ev{31 * ms, "usage", 0, 0, 0})
	add(3, ptr[int32](2), ptr[int32](2), ev{10 * ms, "content", 0, 6, 0}, ev{15 * ms, "content", 0, 6, 0}, ev{16 * ms, "done", 0, 0, 0})
	return f
}

// TestTTFC checks time to the first answer token, its interval, and the reasoning and answer
// token counts, per request and in the stage.
func TestTTFC(t *testing.T) {
	dir := reasoningRun().write(t, t.TempDir())
	if _, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog()); err != nil {
		t.Fatal(err)
	}
	got := readRequests(t, dir)
	const allow = 20_000 // the default stamp allowance, ns
	tests := []struct {
		seq                int64
		ttft, ttfc, lo, hi *int64
		reasoning, answer  *int32
	}{
		// TTFC = 20 ms; lo = (20 ms − allowance) − sent_end (0.1 ms), hi = 20 ms − S.
		{1, ptr[int64](10 * ms), ptr[int64](20 * ms), ptr[int64](20*ms - allow - 100_000), ptr[int64](20 * ms), ptr[int32](2), ptr[int32](2)},
		// The tool-call delta is the answer; no reasoning tokens reported, so no split.
		{2, ptr[int64](10 * ms), ptr[int64](30 * ms), ptr[int64](30*ms - allow - 100_000), ptr[int64](30 * ms), nil, nil},
		// Reasoning only: no answer token arrived.
		{3, ptr[int64](10 * ms), nil, nil, nil, ptr[int32](2), ptr[int32](0)},
	}
	for _, tt := range tests {
		m := got[tt.seq]
		if !eq(m.TTFTNs, tt.ttft) || !eq(m.TTFCNs, tt.ttfc) || !eq(m.TTFCLoNs, tt.lo) || !eq(m.TTFCHiNs, tt.hi) {
			t.Errorf("seq %d: ttft %s ttfc %s [%s, %s]; want %s, %s [%s, %s]", tt.seq, show(m.TTFTNs), show(m.TTFCNs), show(m.TTFCLoNs), show(m.TTFCHiNs),
				show(tt.ttft), show(tt.ttfc), show(tt.lo), show(tt.hi))
		}
		if !eq(m.ReasoningTokens, tt.reasoning) || !eq(m.AnswerTokens, tt.answer) {
			t.Errorf("seq %d: reasoning %v answer %v tokens; want %v, %v", tt.seq, m.ReasoningTokens, m.AnswerTokens, tt.reasoning, tt.answer)
		}
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(dir, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	st := stages[0]
	// TTFC over seq 1 and 2: 20 and 30 ms; nearest-rank p50 of two values is the first.
	if st.TTFC.Count != 2 || val(st.TTFC.P50) != 20*ms || val(st.TTFC.Max) != 30*ms || val(st.TTFC.P50Lo) != 20*ms-allow-100_000 || val(st.TTFC.P50Hi) != 20*ms {
		t.Errorf("stage TTFC %+v; want count 2, p50 20 ms in [20 ms − 120 µs, 20 ms], max 30 ms", st.TTFC)
	}
	if st.ReasoningTokens.Count != 2 || val(st.ReasoningTokens.Max) != 2 || st.AnswerTokens.Count != 2 || !eq(st.AnswerTokens.P50, ptr[int64](0)) || val(st.AnswerTokens.Max) != 2 {
		t.Errorf("stage reasoning tokens %+v, answer tokens %+v; want counts 2, reasoning max 2, answer {0, 2}", st.ReasoningTokens, st.AnswerTokens)
	}
}

func eq[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
