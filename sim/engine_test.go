package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestChunkSpan(t *testing.T) {
	tests := []struct {
		n, k   int
		chunks int
		spans  [][2]int
	}{
		{1, 1, 1, [][2]int{{0, 1}}}, // one token, one chunk
		{4, 1, 4, [][2]int{{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
		{8, 3, 4, [][2]int{{0, 1}, {1, 3}, {4, 3}, {7, 1}}}, // first chunk is the prefill token
		{2, 5, 2, [][2]int{{0, 1}, {1, 1}}},
	}
	for _, tt := range tests {
		if got := chunkCount(tt.n, tt.k); got != tt.chunks {
			t.Errorf("chunkCount(%d, %d) = %d; want %d", tt.n, tt.k, got, tt.chunks)
		}
		for j, want := range tt.spans {
			if s, c := chunkSpan(j, tt.n, tt.k); s != want[0] || c != want[1] {
				t.Errorf("chunkSpan(%d, %d, %d) = (%d, %d); want (%d, %d)", j, tt.n, tt.k, s, c, want[0], want[1])
			}
		}
	}
}

// TestEngineModel checks engine mode's formulas through the reported timings:
// prefill = one step of itl·(1 + slowdown·running) + prefill-base + uncached·per-token,
// decode = (N-1) such steps, and a repeated prompt costs only prefill-base.
func TestEngineModel(t *testing.T) {
	cfg := zeroConfig()
	cfg.ITL, cfg.BatchSlowdown = 5*time.Millisecond, 0.1
	cfg.PrefillBase, cfg.PrefillPerToken = 2*time.Millisecond, 100*time.Microsecond
	cfg.BlockSize, cfg.PrefixCacheBlocks = 16, 64
	srv, addr := startServer(t, cfg)
	prompt := strings.TrimSpace(strings.Repeat("tok ", 32))
	body := fmt.Sprintf(`{"model":"sim","prompt":%q,"max_tokens":5,"stream":true}`, prompt)
	step := time.Duration(float64(5*time.Millisecond) * 1.1)
	control := startTimerControl(step, 5)
	var truths []xsim
	for range 2 {
		w := rawPost(t, addr, "/v1/completions", body)
		truths = append(truths, checkStream(t, w.body, apiCompletions).truth)
	}
	// An idle engine admits a request at its next wake-up: on a loaded machine, as late as
	// the control sleeper's timers fired meanwhile.
	_, _, late := control.Stop(t)
	for i, wantPrefill := range []time.Duration{step + 2*time.Millisecond + 32*100*time.Microsecond, step + 2*time.Millisecond} {
		x := truths[i]
		if time.Duration(x.PrefillNs) != wantPrefill {
			t.Errorf("request %d: prefill_ns = %v; want %v", i, time.Duration(x.PrefillNs), wantPrefill)
		}
		// a wake-up later than 1 ms resynchronises the engine clock, so allow lateness only:
		// 20 ms, and what the control saw
		if d := time.Duration(x.DecodeNs); d < 4*step || d > 4*step+20*time.Millisecond+late {
			t.Errorf("request %d: decode_ns = %v; want %v (+ scheduling delay, the control's %v)", i, d, 4*step, late)
		}
		if x.QueueNs < 0 || x.QueueNs > int64(time.Millisecond+late) {
			t.Errorf("request %d: queue_ns = %v; want about 0 on an idle engine (at most 1ms + the control's %v)", i, time.Duration(x.QueueNs), late)
		}
	}
	// the engine sets the running gauge at the end of the pass that emitted the last chunk,
	// which may come a moment after the client read the end of the stream
	for deadline := time.Now().Add(2 * time.Second); srv.m.running.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	text := string(srv.m.appendText(nil))
	for _, want := range []string{
		`vllm:prefix_cache_queries_total{model_name="sim"} 64.0`,
		`vllm:prefix_cache_hits_total{model_name="sim"} 32.0`,
		`vllm:prompt_tokens_total{model_name="sim"} 64.0`,
		`vllm:generation_tokens_total{model_name="sim"} 10.0`,
		`vllm:time_to_first_token_seconds_bucket{model_name="sim",le="0.02"} 2`,
		`vllm:time_to_first_token_seconds_count{model_name="sim"} 2`,
		`vllm:inter_token_latency_seconds_count{model_name="sim"} 8`,
		`vllm:request_decode_time_seconds_bucket{model_name="sim",le="+Inf"} 2`,
		`vllm:num_requests_running{model_name="sim"} 0.0`,
		`vllm:kv_cache_usage_perc{model_name="sim"} 0`, // every block given back
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
}

// TestBatchingSlowsSteps: with more sequences running, each decode step lasts longer.
func TestBatchingSlowsSteps(t *testing.T) {
	cfg := zeroConfig()
	cfg.ITL, cfg.BatchSlowdown = 2*time.Millisecond, 0.5
	_, addr := startServer(t, cfg)
	client := newClient()
	decode := func(n int) time.Duration {
		res := make([]result, n)
		done := make(chan int)
		for i := range n {
			go func() { res[i] = streamOnce(t, client, "http://"+addr, 21); done <- i }()
		}
		for range n {
			<-done
		}
		longest := time.Duration(0)
		for _, r := range res {
			longest = max(longest, time.Duration(r.truth.DecodeNs))
		}
		return longest
	}
	one, four := decode(1), decode(4)
	// 20 steps of 2 ms × (1 + 0.5·running): 60 ms alone, 120 ms with four running all along
	// (the four arrive a little apart, so the longest of them must reach at least 80 ms)
	if one < 60*time.Millisecond || four < 80*time.Millisecond {
		t.Errorf("decode alone %v, longest with 4 in flight %v; want ≥ 60 ms, ≥ 80 ms", one, four)
	}
}

// TestEngineModeQueues: in engine mode too, requests beyond max-num-seqs wait for a slot. It
// judges by the sim's own stamps, not by how close together the goroutines started: on a
// loaded machine under -race the first request may itself wait a millisecond to be admitted.
func TestEngineModeQueues(t *testing.T) {
	cfg := zeroConfig()
	cfg.ITL, cfg.MaxNumSeqs = 2*time.Millisecond, 1
	_, addr := startServer(t, cfg)
	client := newClient()
	res := make([]result, 3)
	done := make(chan struct{})
	for i := range res {
		go func() { res[i] = streamOnce(t, client, "http://"+addr, 10); done <- struct{}{} }()
	}
	for range res {
		<-done
	}
	for _, r := range res {
		if len(r.truth.SentNs) == 0 {
			t.Fatalf("a request has no x-sim stamps: %+v", r.truth)
		}
	}
	slices.SortFunc(res, func(a, b result) int { return cmp.Compare(a.truth.SentNs[0], b.truth.SentNs[0]) })
	maxQueue := time.Duration(0)
	for i, r := range res {
		maxQueue = max(maxQueue, time.Duration(r.truth.QueueNs))
		if i == 0 {
			continue
		}
		prev := res[i-1].truth.SentNs
		if first, last := r.truth.SentNs[0], prev[len(prev)-1]; first < last {
			t.Errorf("max-num-seqs 1: request %d began streaming %v before request %d ended",
				i, time.Duration(last-first), i-1)
		}
	}
	// three sent at once, 20 ms of decode each: unless they arrived 40 ms apart, one waited
	if maxQueue < time.Millisecond {
		t.Errorf("3 requests at once, max-num-seqs 1: longest queue %v; want ≥ 1 ms", maxQueue)
	}
}
