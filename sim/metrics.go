package sim

import (
	"math"
	"strconv"
	"sync/atomic"
)

// vLLM's histogram buckets (seconds), so dashboards and scrapers built for vLLM read the
// simulator unchanged.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
		5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// servedBuckets are the bounds of the simulator's own served-latency histograms: 20 a decade
// (each 12% above the last) from 10 µs to 100 s, fine enough for a quantile read off them to
// be within 6% of the true one.
var servedBuckets = func() []float64 {
	var b []float64
	for e := -100; e <= 40; e++ { // 10^(e/20) s: 10 µs .. 100 s
		b = append(b, math.Round(math.Pow(10, float64(e)/20)*1e9)/1e9)
	}
	return b
}()

// histogram is a Prometheus histogram over nanosecond observations, lock-free and
// allocation-free to observe.
type histogram struct {
	name, help string
	bounds     []float64
	boundsNs   []int64
	counts     []atomic.Uint64 // per bucket (not cumulative); last = +Inf
	sumNs      atomic.Int64
}

func newHistogram(name, help string, bounds []float64) *histogram {
	h := &histogram{name: name, help: help, bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
	for _, b := range bounds {
		h.boundsNs = append(h.boundsNs, int64(b*1e9+0.5))
	}
	return h
}

func (h *histogram) observe(ns int64) {
	i, j := 0, len(h.boundsNs) // the first bound >= ns (binary search: the served histograms have 141)
	for i < j {
		if m := int(uint(i+j) >> 1); ns > h.boundsNs[m] {
			i = m + 1
		} else {
			j = m
		}
	}
	h.counts[i].Add(1)
	h.sumNs.Add(ns)
}

// metrics holds the engine's counters, gauges and histograms with vLLM's names.
type metrics struct {
	running, waiting               atomic.Int64
	kvBlocks                       atomic.Int64 // KV blocks of the running sequences
	kvCapacity                     int64        // the KV pool in blocks (PrefixCacheBlocks); 0: no gauge
	promptTokens, genTokens        atomic.Uint64
	cacheHits, cacheQueries        atomic.Uint64
	success                        atomic.Uint64
	cancelled                      atomic.Uint64 // streams the client closed before their end
	accepted                       atomic.Uint64 // connections Serve accepted
	ttft, itl, e2e, queue, prefill *histogram
	decode                         *histogram
	// served are the latencies as this server's own clock sees them, from the moment it had
	// read a request to the write of its first token and of its last event: every delay inside
	// the server included (its CPU work, waiting for a CPU, the engine), unlike vLLM's, which
	// start when the engine takes the request. Streams only.
	served struct{ ttft, e2e *histogram }
	labels string
}

func newMetrics(model string) *metrics {
	m := &metrics{
		ttft:    newHistogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:     newHistogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		e2e:     newHistogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestBuckets),
		queue:   newHistogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestBuckets),
		prefill: newHistogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestBuckets),
		decode:  newHistogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestBuckets),
		labels:  `model_name="` + promEscape(model) + `"`,
	}
	m.served.ttft = newHistogram("wirebench_sim:served_ttft_seconds", "Time from reading a streamed request to the write of its first token, every delay inside the server included.", servedBuckets)
	m.served.e2e = newHistogram("wirebench_sim:served_e2e_seconds", "Time from reading a streamed request to the write of its last event, every delay inside the server included.", servedBuckets)
	return m
}

func promEscape(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// promFloat formats like Python's prometheus_client (1.0, 0.25, +Inf).
func promFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s
		}
	}
	return s + ".0"
}

// appendText writes the Prometheus text exposition format (version 0.0.4).
func (m *metrics) appendText(b []byte) []byte {
	gauge := func(name, help string, v int64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" gauge\n"+name+"{"+m.labels+"} "...)
		b = append(b, promFloat(float64(v))...)
		b = append(b, '\n')
	}
	counter := func(name, help string, v uint64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" counter\n"+name+"{"+m.labels+"} "...)
		b = append(b, promFloat(float64(v))...)
		b = append(b, '\n')
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", m.running.Load())
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", m.waiting.Load())
	if m.kvCapacity > 0 {
		// vLLM's prefix cache and KV cache are one block pool; the simulator's is the prefix
		// cache's capacity, and the running sequences hold their prompt and max_tokens in it.
		b = append(b, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{"+m.labels+"} "...)
		b = strconv.AppendFloat(b, min(1, float64(m.kvBlocks.Load())/float64(m.kvCapacity)), 'g', -1, 64)
		b = append(b, '\n')
	}
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens.Load())
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.genTokens.Load())
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.cacheQueries.Load())
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m.cacheHits.Load())
	counter("vllm:request_success_total", "Count of successfully processed requests.", m.success.Load())
	counter("wirebench_sim:connections_accepted_total", "Connections the server accepted.", m.accepted.Load())
	counter("wirebench_sim:requests_cancelled_total", "Streams whose client closed the connection before their end; each freed its engine slot.", m.cancelled.Load())
	for _, h := range []*histogram{m.ttft, m.itl, m.e2e, m.queue, m.prefill, m.decode, m.served.ttft, m.served.e2e} {
		b = append(b, "# HELP "+h.name+" "+h.help+"\n# TYPE "+h.name+" histogram\n"...)
		var cum uint64
		for i := range h.counts {
			cum += h.counts[i].Load()
			le := "+Inf"
			if i < len(h.bounds) {
				le = promFloat(h.bounds[i])
			}
			b = append(b, h.name+"_bucket{"+m.labels+`,le="`+le+`"} `...)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = append(b, h.name+"_count{"+m.labels+"} "...)
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
		b = append(b, h.name+"_sum{"+m.labels+"} "...)
		b = strconv.AppendFloat(b, float64(h.sumNs.Load())/1e9, 'g', -1, 64)
		b = append(b, '\n')
	}
	return b
}
