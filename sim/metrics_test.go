package sim

import (
	"strings"
	"testing"
	"time"
)

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
