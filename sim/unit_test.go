package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/tokenizer"
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

func TestBlockHasherCountsLikeTokenizer(t *testing.T) {
	for _, s := range []string{"", "a", "  a  b ", "héllo wörld\tx\ny", "日本語 テキスト", strings.Repeat("w ", 40)} {
		bh := newBlockHasher(4)
		bh.text(s)
		if want := tokenizer.CountWords(s); bh.tokens != want || len(bh.blocks) != want/4 {
			t.Errorf("blockHasher(%q): %d tokens, %d blocks; want %d, %d", s, bh.tokens, len(bh.blocks), want, want/4)
		}
	}
	a, b := newBlockHasher(2), newBlockHasher(2)
	a.text("x y z w")
	b.text("x y q w")
	if a.blocks[0] != b.blocks[0] || a.blocks[1] == b.blocks[1] {
		t.Errorf("block hashes %x and %x: want the first equal, the second different", a.blocks, b.blocks)
	}
}

func TestPrefixCache(t *testing.T) {
	c := newPrefixCache(4)
	steps := []struct {
		blocks []uint64
		hits   int
	}{
		{[]uint64{1, 2, 3}, 0},    // cold
		{[]uint64{1, 2, 3}, 3},    // all cached
		{[]uint64{1, 2, 9}, 2},    // shared prefix of 2
		{[]uint64{5, 2, 3}, 0},    // a hit must start at the first block
		{[]uint64{7, 8}, 0},       // evicts the least recently used (3, then 9)
		{[]uint64{1, 2, 3}, 0},    // 1 was evicted too (capacity 4: 7 8 5 2 remain)
		{[]uint64{1, 2, 3, 4}, 3}, // 1 2 3 were just inserted
		{[]uint64{1, 2, 3, 4}, 4}, // now all four are the cache
	}
	for i, s := range steps {
		if got := c.lookupInsert(s.blocks); got != s.hits {
			t.Errorf("step %d: lookupInsert(%v) = %d; want %d", i, s.blocks, got, s.hits)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" for none
	}{
		{"defaults", func(*Config) {}, ""},
		{"negative itl", func(c *Config) { c.ITL = -1 }, "itl"},
		{"bad mode", func(c *Config) { c.Mode = "warp" }, "mode"},
		{"zero block", func(c *Config) { c.BlockSize = 0 }, "block-size"},
		{"rate above 1", func(c *Config) { c.FaultDrop = 2 }, "fault-drop"},
		{"rates sum above 1", func(c *Config) { c.Fault500, c.Fault503 = 0.6, 0.6 }, "sum"},
		{"no model", func(c *Config) { c.Models = nil }, "model"},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Validate() = %v; want an error containing %q", tt.name, err, tt.want)
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

func TestServeStopsOnCancel(t *testing.T) {
	cfg := zeroConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln := listenLocal(t)
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	w := rawPost(t, ln.Addr().String(), "/v1/completions", `{"model":"sim","prompt":"a","max_tokens":3}`)
	if w.status != 200 {
		t.Fatalf("status %d", w.status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel = %v; want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s of cancel")
	}
}

// TestEngineModeQueues: in engine mode too, requests beyond max-num-seqs wait FIFO.
func TestEngineModeQueues(t *testing.T) {
	cfg := zeroConfig()
	cfg.ITL, cfg.MaxNumSeqs = 2*time.Millisecond, 1
	_, addr := startServer(t, cfg)
	client := newClient()
	res := make([]result, 3)
	done := make(chan struct{})
	for i := range res {
		go func() { res[i] = streamOnce(t, client, "http://"+addr, 5); done <- struct{}{} }()
	}
	for range res {
		<-done
	}
	queued := 0
	for _, r := range res {
		// the first runs at once on the idle engine; the others wait for a free slot
		if time.Duration(r.truth.QueueNs) > time.Millisecond {
			queued++
		}
	}
	if queued != 2 {
		t.Errorf("3 requests, max-num-seqs 1: %d queued; want 2", queued)
	}
}

// TestServedLatencies: the simulator's own served-latency histograms count a streamed request
// from its read to the write of its first token (TTFT) and its last event (E2E), its CPU work
// included (--cpu-per-request), unlike vLLM's engine TTFT; and it counts the connections it
// accepted.
func TestServedLatencies(t *testing.T) {
	cfg := zeroConfig()
	cfg.TTFT, cfg.CPUPerRequest = 5*time.Millisecond, 3*time.Millisecond
	srv, addr := startServer(t, cfg)
	for range 2 {
		rawPost(t, addr, "/v1/completions", `{"model":"sim","prompt":"a b","max_tokens":3,"stream":true}`)
	}
	count := func(h *histogram) (n uint64) {
		for i := range h.counts {
			n += h.counts[i].Load()
		}
		return n
	}
	// the last event is observed after its write returns, which may be after the client read it
	for deadline := time.Now().Add(2 * time.Second); count(srv.m.served.e2e) < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	for _, h := range []*histogram{srv.m.served.ttft, srv.m.served.e2e} {
		n := count(h)
		// the 3 ms of CPU work and the 5 ms TTFT, each request; the engine's own TTFT is 5 ms
		if mean := time.Duration(h.sumNs.Load() / max(int64(n), 1)); n != 2 || mean < 8*time.Millisecond || mean > time.Second {
			t.Errorf("%s: %d observations, mean %v; want 2 of at least 8 ms (CPU work + TTFT)", h.name, n, mean)
		}
	}
	text := string(srv.m.appendText(nil))
	if !strings.Contains(text, `wirebench_sim:served_ttft_seconds_bucket{model_name="sim",le="0.00001"} 0`+"\n") ||
		!strings.Contains(text, `wirebench_sim:served_e2e_seconds_count{model_name="sim"} 2`+"\n") {
		t.Errorf("/metrics lacks the served histograms:\n%s", text)
	}
	if n := srv.m.accepted.Load(); n < 2 {
		t.Errorf("connections accepted = %d; want the 2 of the requests", n)
	}
}

// TestKVCacheUsageGauge: the running sequences' KV blocks over the pool, capped at 1, and no
// gauge without a pool.
func TestKVCacheUsageGauge(t *testing.T) {
	for _, tc := range []struct {
		blocks, capacity int64
		want             string // "" = no gauge
	}{
		{25, 100, "0.25"},
		{250, 100, "1"}, // more reserved than the pool: vLLM would queue; the gauge stays at 1
		{5, 0, ""},
	} {
		m := newMetrics("sim")
		m.kvBlocks.Store(tc.blocks)
		m.kvCapacity = tc.capacity
		text := string(m.appendText(nil))
		line := `vllm:kv_cache_usage_perc{model_name="sim"} ` + tc.want + "\n"
		if got := strings.Contains(text, "vllm:kv_cache_usage_perc{"); got != (tc.want != "") || (got && !strings.Contains(text, line)) {
			t.Errorf("blocks %d of %d: /metrics has\n%s\nwant %q", tc.blocks, tc.capacity, text, line)
		}
	}
}
