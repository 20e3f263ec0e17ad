package main

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Fixed simulator timing of the API end-to-end tests.
const (
	apiTTFT = 20 * time.Millisecond
	apiITL  = 5 * time.Millisecond
	// apiSlack is how far a median may be from the same figure by the simulator's send stamps.
	apiSlack = 500 * time.Microsecond
	// apiOutput is the examples' output length (max_tokens / max_output_tokens).
	apiOutput = 16
)

// apiCase is one example config run against the simulator.
type apiCase struct {
	config    string   // examples/<config>.yaml
	sim       []string // extra simulator flags
	reasoning int      // reasoning tokens the simulator starts each answer with
	reported  bool     // the API reports reasoning tokens in its usage
	tools     bool     // the answer is a tool call: its events carry tool-call deltas, no text
	images    int      // images per request (each costs imageTokens prompt tokens)
	batch     int      // embeddings inputs per request; 0 for the generation APIs
}

const imageTokens = 100

var apiCases = []apiCase{
	{config: "completions"},
	{config: "chat", sim: []string{"--reasoning-tokens", "4"}, reasoning: 4, reported: true},
	{config: "chat-tools", sim: []string{"--reasoning-tokens", "2", "--reasoning-field", "reasoning"}, reasoning: 2, reported: true, tools: true},
	{config: "chat-images", sim: []string{"--image-tokens", fmt.Sprint(imageTokens)}, images: 2},
	{config: "responses", sim: []string{"--reasoning-tokens", "4"}, reasoning: 4, reported: true},
	{config: "messages", sim: []string{"--reasoning-tokens", "4"}, reasoning: 4},
	{config: "embeddings", batch: 8},
}

// TestAPIsEndToEnd runs `wirebench run examples/<api>.yaml` for every API (and the images and
// tools workloads) against `wirebench sim --ttft 20ms --itl 5ms`: no errors, every request's
// token events and usage agree, and the TTFT, ITL and TTFC − TTFT medians are within 0.5 ms of
// the same figures taken from the simulator's own send stamps (simTiming).
func TestAPIsEndToEnd(t *testing.T) {
	for _, tc := range apiCases {
		t.Run(tc.config, func(t *testing.T) {
			url := startSim(t, append([]string{"--ttft", apiTTFT.String(), "--itl", apiITL.String()}, tc.sim...)...)
			run := filepath.Join(t.TempDir(), tc.config)
			// --keep-awake: on a VM whose idle CPUs halt, wake-ups add a few hundred µs (see
			// TestCaptureAgainstSimMatchesFixedTiming).
			_, stderr, err := wirebench(t, 90*time.Second, "run", "../../examples/"+tc.config+".yaml", "-o", run, "--target", url, "--quiet", "--keep-awake")
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr)
			}
			checkAPIRun(t, tc, run)
		})
	}
}

func checkAPIRun(t *testing.T, tc apiCase, run string) {
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		if s.Errors != 0 || s.Completed != s.Requests || s.Requests != 20 {
			t.Errorf("stage %d: %d requests, %d completed, %d errors (%s); want 20, 20, 0", s.Stage, s.Requests, s.Completed, s.Errors, s.ErrorsByKind)
		}
	}
	_, reqs, chunks := rawFiles(t, run)
	sched, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(run, "schedule", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	input := map[int64]int32{}
	for _, r := range sched {
		input[r.Seq] = r.InputTokens
	}
	bySeq := map[int64][]schemas.RawChunk{}
	for _, c := range chunks {
		bySeq[c.Seq] = append(bySeq[c.Seq], c)
	}
	sim := simTiming{ttft: map[int64]int64{}, answer: map[int64]int64{}}
	for _, r := range reqs {
		if r.ErrorKind != "" {
			t.Errorf("seq %d: %s: %s", r.Seq, r.ErrorKind, r.ErrorMessage)
			continue
		}
		checkAPIUsage(t, tc, r, input[r.Seq], bySeq[r.Seq])
		sim.add(tc, r, bySeq[r.Seq])
	}
	metrics, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	checkAPITiming(t, tc, stages[0], metrics, sim)
}

// simTiming is the ground truth of a run against the simulator, from its send stamps
// (server_sent_ns): on a loaded machine the simulator's timers fire late and its TTFT and ITL
// stray from --ttft and --itl, while the client must still measure what it was sent.
type simTiming struct {
	firstLag []int64         // first event's arrival (client) less the simulator's send stamp of it
	itl      []int64         // between the simulator's stamps of consecutive token events
	ttft     map[int64]int64 // by seq: the simulator's stamp of the first token event less sent_ns
	answer   map[int64]int64 // by seq: the first answer (text or tool-call) event's stamp less the first token's
}

// add takes one request's figures from its chunks.
func (s *simTiming) add(tc apiCase, r schemas.RawRequest, cs []schemas.RawChunk) {
	slices.SortFunc(cs, func(a, b schemas.RawChunk) int { return cmp.Compare(a.Index, b.Index) })
	var first, prev int64
	answered := false
	for i := range cs {
		c := &cs[i]
		if (c.Kind != "content" && tc.batch == 0) || c.ServerSentNs == 0 {
			continue
		}
		switch {
		case first == 0:
			first = c.ServerSentNs
			s.firstLag = append(s.firstLag, chunkTime(c)-first)
			s.ttft[r.Seq] = first - r.SentNs
		default:
			s.itl = append(s.itl, c.ServerSentNs-prev)
		}
		if !answered && c.ReasoningBytes == 0 {
			answered = true
			s.answer[r.Seq] = c.ServerSentNs - first
		}
		prev = c.ServerSentNs
	}
}

// checkAPIUsage checks one request's events against the usage the server reported.
func checkAPIUsage(t *testing.T, tc apiCase, r schemas.RawRequest, input int32, cs []schemas.RawChunk) {
	t.Helper()
	wantPrompt := input + int32(tc.images*imageTokens)
	if r.UsagePrompt == nil || *r.UsagePrompt != wantPrompt {
		t.Errorf("seq %d: usage prompt tokens %v; want %d (schedule %d + %d images × %d)", r.Seq, r.UsagePrompt, wantPrompt, input, tc.images, imageTokens)
	}
	if tc.batch > 0 {
		if r.Embeddings != int32(tc.batch) || r.UsageComplete != nil {
			t.Errorf("seq %d: %d embeddings, completion usage %v; want %d, none", r.Seq, r.Embeddings, r.UsageComplete, tc.batch)
		}
		return
	}
	var events, reasoning, tools, text int
	for _, c := range cs {
		if c.Kind != "content" {
			continue
		}
		events++ // one token each: the simulator sends one token per event
		switch {
		case c.ReasoningBytes > 0:
			reasoning++
		case c.ToolCalls > 0:
			tools++
		case c.ContentBytes > 0:
			text++
		}
	}
	if r.UsageComplete == nil || int(*r.UsageComplete) != events || events != apiOutput {
		t.Errorf("seq %d: %d token events, usage completion tokens %v; want both %d", r.Seq, events, r.UsageComplete, apiOutput)
	}
	answer := apiOutput - tc.reasoning
	if reasoning != tc.reasoning || (tc.tools && tools != answer) || (!tc.tools && text != answer) {
		t.Errorf("seq %d: %d reasoning, %d tool-call, %d text events; want %d reasoning and %d answer (tools: %v)", r.Seq, reasoning, tools, text, tc.reasoning, answer, tc.tools)
	}
	switch {
	case tc.reported && tc.reasoning > 0:
		if r.UsageReasoning == nil || int(*r.UsageReasoning) != tc.reasoning {
			t.Errorf("seq %d: usage reasoning tokens %v; want %d", r.Seq, r.UsageReasoning, tc.reasoning)
		}
	case r.UsageReasoning != nil && *r.UsageReasoning != 0:
		t.Errorf("seq %d: usage reasoning tokens %d; want none", r.Seq, *r.UsageReasoning)
	}
}

// checkAPITiming checks the client's figures against the simulator's stamps.
func checkAPITiming(t *testing.T, tc apiCase, st schemas.Stage, metrics []schemas.MetricRequest, sim simTiming) {
	t.Helper()
	near := func(what string, got, want time.Duration) {
		if d := got - want; d < -apiSlack || d > apiSlack {
			t.Errorf("%s %v; want %v ± %v", what, got, want, apiSlack)
		}
	}
	if tc.batch > 0 {
		// The simulator answers apiTTFT after it has parsed the request and sends the vectors
		// after rendering them: E2E is at least apiTTFT, at most 5 ms after the simulator's
		// send (a median), and the client's part, from the simulator's send to the response's
		// arrival, is below apiSlack.
		sent := time.Duration(median(slices.Collect(maps.Values(sim.ttft))))
		t.Logf("embeddings: E2E p50 %v, the simulator's send a median %v after sent_ns, response a median %v after it, %.0f input tokens/s",
			time.Duration(val(st.E2E.P50)), sent, time.Duration(median(sim.firstLag)), val(st.InputTPS))
		if e := time.Duration(val(st.E2E.P50)); e < apiTTFT || e > sent+5*time.Millisecond {
			t.Errorf("E2E p50 %v; want %v to %v", e, apiTTFT, sent+5*time.Millisecond)
		}
		if len(sim.firstLag) != int(st.Requests) {
			t.Errorf("%d responses with the simulator's send time; want %d", len(sim.firstLag), st.Requests)
		}
		near("response after the simulator sent it (median)", time.Duration(median(sim.firstLag)), 0)
		if want := float64(20*tc.batch*128) / 2; val(st.InputTPS) < want*0.8 || val(st.InputTPS) > want*1.25 {
			t.Errorf("input_tps %.0f; want about %.0f (20 requests × %d inputs × 128 tokens over 2 s)", val(st.InputTPS), want, tc.batch)
		}
		return
	}
	// Each request's TTFT and TTFC − TTFT less the simulator's, and its TTFTs in order
	var ttftErr, ttfcErr, ttfts []int64
	for _, m := range metrics {
		if m.TTFTNs == nil || m.TTFCNs == nil {
			t.Errorf("seq %d: ttft %v ttfc %v; want both", m.Seq, m.TTFTNs, m.TTFCNs)
			continue
		}
		ttfts = append(ttfts, *m.TTFTNs)
		if want, ok := sim.ttft[m.Seq]; ok {
			if m.TxTapNs != nil { // S is the tap's time of the last byte: a large body leaves after sent_ns
				want -= *m.TxTapNs - m.SentNs
			}
			ttftErr = append(ttftErr, *m.TTFTNs-want)
			ttfcErr = append(ttfcErr, *m.TTFCNs-*m.TTFTNs-sim.answer[m.Seq])
		}
		if m.TokensSource != "usage" || *m.OutputTokens != apiOutput {
			t.Errorf("seq %d: output tokens %d from %s; want %d from usage", m.Seq, *m.OutputTokens, m.TokensSource, apiOutput)
		}
		if tc.reported && tc.reasoning > 0 && (m.ReasoningTokens == nil || *m.ReasoningTokens != int32(tc.reasoning) || m.AnswerTokens == nil || *m.AnswerTokens != int32(apiOutput-tc.reasoning)) {
			t.Errorf("seq %d: reasoning %v answer %v tokens; want %d, %d", m.Seq, m.ReasoningTokens, m.AnswerTokens, tc.reasoning, apiOutput-tc.reasoning)
		}
	}
	t.Logf("%s: TTFT p50 %v, ITL p50 %v, TTFC p50 %v; against the simulator's stamps: TTFT median %v, ITL median %v, TTFC − TTFT median %v off, first event a median %v after its send",
		tc.config, time.Duration(val(st.TTFT.P50)), time.Duration(val(st.ITL.P50)), time.Duration(val(st.TTFC.P50)),
		time.Duration(median(ttftErr)), time.Duration(median(sim.itl)), time.Duration(median(ttfcErr)), time.Duration(median(sim.firstLag)))
	// The simulator's own figures are --ttft 20ms and --itl 5ms on a quiet machine, later
	// where its timers fire late (TTFT later too by the parsing of a body of images): the
	// client must measure what the simulator did.
	if len(ttftErr) != int(st.Requests) {
		t.Errorf("%d requests with the simulator's send stamps; want %d", len(ttftErr), st.Requests)
	}
	near("TTFT less the simulator's (median)", time.Duration(median(ttftErr)), 0)
	near("TTFC − TTFT less the simulator's (median)", time.Duration(median(ttfcErr)), 0)
	near("ITL p50 against the simulator's stamps", time.Duration(val(st.ITL.P50)), time.Duration(median(sim.itl)))
	// the stage's p50 is the requests' median (of 20: between the 10th and the 11th)
	slices.Sort(ttfts)
	if p := val(st.TTFT.P50); len(ttfts) > 0 && (p < ttfts[(len(ttfts)-1)/2]-int64(apiSlack) || p > ttfts[len(ttfts)/2]+int64(apiSlack)) {
		t.Errorf("stage TTFT p50 %v; want the requests' median, %v to %v", time.Duration(p), time.Duration(ttfts[(len(ttfts)-1)/2]), time.Duration(ttfts[len(ttfts)/2]))
	}
	if st.TTFC.Count != st.TTFT.Count {
		t.Errorf("stage TTFC count %d, TTFT count %d; want equal", st.TTFC.Count, st.TTFT.Count)
	}
}
