package schemas

// RawRequest is one row of raw/requests-wNN-PPPP.parquet: one request as capture sent it, with
// the times taken at the wire. Derived metrics live in metrics/requests.parquet.
type RawRequest struct {
	Seq             int64  `parquet:"seq,delta" doc:"request number in the run (schedule seq)"`
	Stage           int32  `parquet:"stage" doc:"stage index"`
	Worker          int32  `parquet:"worker" doc:"worker process index on this host"`
	Endpoint        int32  `parquet:"endpoint" doc:"index into target.urls of the endpoint it went to (schedule endpoint); 0 with target.url alone"`
	Shard           int32  `parquet:"shard" doc:"host shard index (capture --shard i/n); 0 on one machine"`
	Warmup          bool   `parquet:"warmup" doc:"warmup request, left out of metrics by default"`
	Conversation    int64  `parquet:"conversation" doc:"conversation id; -1 when none"`
	Turn            int32  `parquet:"turn" doc:"turn inside the conversation"`
	Model           string `parquet:"model,dict" doc:"the model field sent (schedule model)"`
	InputTokens     int32  `parquet:"input_tokens" doc:"scheduled prompt tokens (configured tokenizer)"`
	MaxTokens       int32  `parquet:"max_tokens" doc:"max_tokens sent"`
	PlannedNs       int64  `parquet:"planned_ns" doc:"time the schedule said to send it (CLOCK_REALTIME)"`
	SentNs          int64  `parquet:"sent_ns" doc:"when the write call that took the request's last byte began (https: its last ciphertext byte)"`
	SentEndNs       *int64 `parquet:"sent_end_ns,optional" doc:"when that write call returned: the request's last byte left between sent_ns and sent_end_ns; null when the request was not written"`
	LocalPort       *int32 `parquet:"local_port,optional" doc:"the connection's local TCP port (joins raw-segments); null when the request got no connection"`
	TxStreamEnd     *int64 `parquet:"tx_stream_end,optional" doc:"offset in the connection's send stream just past the request's last byte (bytes from the first byte the client sent on the connection; https: ciphertext, the handshake's included); null when the request was not written"`
	SendStartNs     int64  `parquet:"send_start_ns" doc:"time the client began the request (before dialing or writing)"`
	InflightDelay   bool   `parquet:"inflight_delayed" doc:"the send waited on the per-worker in-flight cap"`
	ConnReused      bool   `parquet:"conn_reused" doc:"the request went over a kept-alive connection"`
	ConnectNs       *int64 `parquet:"connect_ns,optional" doc:"duration of the TCP connect of the connection the request was the first to use (dialed for it or for another waiting request); null when reused"`
	SynRetrans      *int32 `parquet:"syn_retrans,optional" doc:"SYN retransmissions of that connect (TCP_INFO): each is a server whose accept queue was full (the kernel drops the SYN; the client retries after 1 s, 3 s, 7 s); null when reused or unknown"`
	ConnWaitNs      *int64 `parquet:"conn_wait_ns,optional" doc:"time the request waited for a connection (no idle one when it was due): for a dial, or for a busy connection to go idle, whichever came first; null when an idle connection was there"`
	ConnCapped      bool   `parquet:"conn_capped" doc:"the request found the worker at its connection cap (capture --max-connections) and waited without dialing"`
	TLSHandshakeNs  *int64 `parquet:"tls_handshake_ns,optional" doc:"duration of the TLS handshake of the connection the request was the first to use (after its TCP connect); null when reused or not https"`
	TLSResumed      *bool  `parquet:"tls_resumed,optional" doc:"that handshake resumed an earlier session of the worker (a ticket, no certificate exchange); null when reused or not https"`
	HeadersNs       *int64 `parquet:"headers_ns,optional" doc:"time the response headers arrived; null when none arrived"`
	DoneNs          *int64 `parquet:"done_ns,optional" doc:"time of the final event ([DONE] or end of body); null when the stream did not end"`
	Status          int32  `parquet:"status" doc:"HTTP status code; 0 when no response"`
	ErrorKind       string `parquet:"error_kind,dict" doc:"empty on success, else why the request failed: connect, timeout, ttft_timeout, gap_timeout, http_status, reset, malformed_stream, incomplete_stream, server_error_event, content_encoding, too_large, not_streamed, malformed_answer, memory_budget, cancelled or cancelled_by_client (see Error kinds)"`
	ErrorMessage    string `parquet:"error_message" doc:"error text, the server's error body or event"`
	Chunks          int32  `parquet:"chunks" doc:"number of SSE events received (including usage, item and block events, [DONE]); 1 for a non-streaming response"`
	ContentBytes    int64  `parquet:"content_bytes" doc:"bytes of answer text received (reasoning and tool-call arguments not included)"`
	ReasoningBytes  int64  `parquet:"reasoning_bytes" doc:"bytes of reasoning text received"`
	UsagePrompt     *int32 `parquet:"usage_prompt_tokens,optional" doc:"prompt tokens from the server's usage (prompt_tokens; Responses input_tokens; Anthropic input_tokens + cache_read_input_tokens + cache_creation_input_tokens); null when not sent"`
	UsageComplete   *int32 `parquet:"usage_completion_tokens,optional" doc:"output tokens from the server's usage, reasoning included (completion_tokens; Responses and Anthropic output_tokens, the last message_delta's); null when not sent"`
	UsageCached     *int32 `parquet:"usage_cached_tokens,optional" doc:"cached prompt tokens from the usage (prompt_tokens_details.cached_tokens, input_tokens_details.cached_tokens, Anthropic cache_read_input_tokens); null when not sent"`
	UsageReasoning  *int32 `parquet:"usage_reasoning_tokens,optional" doc:"reasoning tokens from the usage (completion_tokens_details.reasoning_tokens, output_tokens_details.reasoning_tokens), part of usage_completion_tokens; null when not sent (Anthropic never sends it)"`
	Embeddings      int32  `parquet:"embeddings" doc:"embeddings API: vectors in the response's data (one per input); 0 otherwise"`
	Documents       int32  `parquet:"documents" doc:"documents the request carried (schedule documents): ranking APIs' documents, embeddings' inputs; 0 otherwise"`
	FinishReason    string `parquet:"finish_reason,dict" doc:"finish_reason of the last choice chunk; Responses: the final response's status (completed) or incomplete reason; Anthropic: stop_reason"`
	OffsetMismatch  bool   `parquet:"offset_mismatch" doc:"the read that delivered the last event did not end at the decoder's body offset (framing check failed)"`
	ServerQueueNs   *int64 `parquet:"server_queue_ns,optional" doc:"server-reported queue duration (e.g. the simulator's x-sim-queue-ns); null when not reported"`
	ServerPrefillNs *int64 `parquet:"server_prefill_ns,optional" doc:"server-reported prefill duration; null when not reported"`
	ServerDecodeNs  *int64 `parquet:"server_decode_ns,optional" doc:"server-reported decode duration (first to last token); null when not reported"`
	OutputText      string `parquet:"output_text" doc:"generated text, only with capture --keep-text; else empty"`
}

// Chunk kinds recorded in RawChunk.Kind.
const (
	ChunkContent = "content" // carries generated tokens: answer or reasoning text, tool-call deltas
	ChunkEmpty   = "empty"   // no tokens: role only, item or block start/stop, ping, keep-alive
	ChunkUsage   = "usage"   // usage without tokens: usage chunk, message_delta, response.completed, embeddings
	ChunkDone    = "done"    // data: [DONE] or message_stop
	ChunkError   = "error"   // an error object
)

// Stage modes of StageInfo.Mode and Stage.Mode.
const (
	ModeOpen   = "open"   // arrivals at planned times (rate)
	ModeClosed = "closed" // a fixed number of users, each sending after its last answer
)

// Timestamp qualities of RawChunk.Quality.
const (
	QualityExact      = "exact"       // kernel time of the segment that carried the event's last byte
	QualityUpperBound = "upper_bound" // kernel time of a later segment coalesced into the same read
	QualityUser       = "user"        // no kernel time: time.Now() right after the socket read
	QualityApprox     = "approx"      // read-granular user time; no longer written (TLS before schema version 4)
)

// RawChunk is one row of raw/chunks-wNN-PPPP.parquet: one streamed SSE event with its arrival
// times. t = rx_kernel_ns when present, else rx_user_ns.
//
// Its optional times and offsets are plain integers, not pointers: 0 is written as null and null
// reads back as 0 (none of them is 0 when known), and they are delta-encoded. A worker writes a
// row per event during the load: a row costs about 195 ns and 7.2 bytes this way, against 330
// ns and 9.6 bytes with pointers and plain encoding (BenchmarkWriteRaw, fastest). Tokens stays
// a pointer: 0 tokens is a count a server may give.
type RawChunk struct {
	Seq             int64  `parquet:"seq,delta" doc:"request number the event belongs to"`
	Index           int32  `parquet:"index" doc:"event number inside the response, from 0"`
	RxKernelNs      int64  `parquet:"rx_kernel_ns,optional,delta" doc:"kernel receive timestamp of the read that delivered the event's last byte (https: the last ciphertext byte of the TLS record that completed the event); null when the socket gives none"`
	RxUserNs        int64  `parquet:"rx_user_ns,delta" doc:"time.Now() right after that read returned, before parsing"`
	RxStreamEnd     int64  `parquet:"rx_stream_end,optional,delta" doc:"offset in the connection's receive stream just past the event's last byte (bytes from the first byte the server sent on the connection; https: just past the last ciphertext byte of the TLS record that completed the event, the handshake's bytes included): the segment whose [seq, seq + len) relative to the server's ISN + 1 holds rx_stream_end - 1 carried it (see raw-segments); null when unknown"`
	RxAfterNs       int64  `parquet:"rx_after_ns,optional,delta" doc:"the event's last byte became readable after this time: the latest earlier read on the connection that emptied the socket (returned less than its buffer), at the later of its kernel time and the start of its read call; null when no earlier read emptied it"`
	Quality         string `parquet:"quality,dict" doc:"exact (kernel time of the newest segment; https: of the TLS record that completed the event), upper_bound (coalesced: the kernel time of a later segment), user (no kernel time), approx (no longer written)"`
	Kind            string `parquet:"kind,dict" doc:"content (carries generated tokens: answer or reasoning text, or tool-call arguments), empty (none: role, item or block start and stop, ping), usage (usage without tokens: usage chunk, message_delta, response.completed, an embeddings response), done ([DONE], message_stop), error (error object mid-stream)"`
	Bytes           int32  `parquet:"bytes" doc:"size of the event on the wire in bytes"`
	ContentBytes    int32  `parquet:"content_bytes" doc:"bytes of answer text in the event"`
	ReasoningBytes  int32  `parquet:"reasoning_bytes" doc:"bytes of reasoning text in the event"`
	ToolCalls       int32  `parquet:"tool_calls" doc:"tool-call deltas in the event (chat tool_calls entries, Responses function_call_arguments deltas, Anthropic input_json_delta): answer tokens"`
	Tokens          *int32 `parquet:"tokens,optional" doc:"tokens carried by the event when the server says so; null otherwise"`
	FinishReason    string `parquet:"finish_reason,dict" doc:"finish_reason when the event carries one"`
	ServerSentNs    int64  `parquet:"server_sent_ns,optional,delta" doc:"the server's own send time for this event when it reports one (the built-in simulator does: time.Now() just before the write that carried it); null otherwise"`
	ServerSentEndNs int64  `parquet:"server_sent_end_ns,optional,delta" doc:"the built-in simulator's time.Now() just after the write that carried this event returned: on loopback the event arrived between server_sent_ns and server_sent_end_ns (the kernel stamps a segment inside the sender's write); null when not reported (a whole response; with --coalesce-tail the events of the last write)"`
}

// Time is the event's arrival as the client recorded it: rx_kernel_ns when present, else
// rx_user_ns (aggregate may replace it with the packet tap's time).
func (c *RawChunk) Time() int64 {
	if c.RxKernelNs != 0 {
		return c.RxKernelNs
	}
	return c.RxUserNs
}

// Segment directions of RawSegment.Dir.
const (
	SegmentTx = "tx" // client to server, the outgoing copy
	SegmentRx = "rx" // server to client, the incoming copy
)

// RawSegment is one row of raw/segments-PPPP.parquet: one TCP segment of the run's connections
// as the packet tap (capture --tap) saw it, headers only. A loopback packet passes the tap twice;
// the tap keeps the outgoing copy of what the client sends and the incoming copy of what it
// receives (the only copies a real NIC shows), so each segment appears once. The relative
// offset of a data segment in its stream is seq − (ISN + 1) mod 2^32, with the ISN from the SYN
// (tx) or SYN-ACK (rx) of the latest handshake on its local port.
type RawSegment struct {
	TsNs      int64  `parquet:"ts_ns,delta" doc:"kernel timestamp of the packet (CLOCK_REALTIME): tx when it left for the network, rx when it entered this host's network stack (where SO_TIMESTAMPING stamps it)"`
	Dir       string `parquet:"dir,dict" doc:"tx (client to server) or rx (server to client)"`
	LocalPort int32  `parquet:"local_port" doc:"the client's TCP port"`
	Seq       int64  `parquet:"seq" doc:"TCP sequence number (unsigned 32 bits) of the first payload byte, or of the SYN"`
	Ack       int64  `parquet:"ack" doc:"TCP acknowledgement number (unsigned 32 bits)"`
	Len       int32  `parquet:"len" doc:"payload bytes"`
	Flags     int32  `parquet:"flags" doc:"TCP flags byte: FIN 1, SYN 2, RST 4, PSH 8, ACK 16"`
}

// Worker is one row of raw/workers.parquet: one worker process during one stage.
type Worker struct {
	Worker        int32 `parquet:"worker" doc:"worker process index on this host"`
	Shard         int32 `parquet:"shard" doc:"host shard index"`
	Stage         int32 `parquet:"stage" doc:"stage index"`
	CPU           int32 `parquet:"cpu" doc:"CPU the worker was pinned to; -1 when not pinned"`
	GOMAXPROCS    int32 `parquet:"gomaxprocs" doc:"GOMAXPROCS of the worker"`
	WallNs        int64 `parquet:"wall_ns" doc:"duration of the stage as seen by the worker"`
	CPUUserNs     int64 `parquet:"cpu_user_ns" doc:"user CPU time spent in the stage"`
	CPUSysNs      int64 `parquet:"cpu_sys_ns" doc:"system CPU time spent in the stage"`
	GCPauseNs     int64 `parquet:"gc_pause_ns" doc:"total stop-the-world GC pause in the stage"`
	HeapPeakBytes int64 `parquet:"heap_peak_bytes" doc:"largest live heap seen in the stage"`
	MaxRSSBytes   int64 `parquet:"max_rss_bytes" doc:"peak resident set size of the process so far"`
	Requests      int64 `parquet:"requests" doc:"requests the worker sent while the stage ran (its window, as for the CPU columns: a late send of an earlier stage counts here)"`
	Reads         int64 `parquet:"reads" doc:"socket reads in the stage"`
	BytesRead     int64 `parquet:"read_bytes" doc:"bytes read from sockets in the stage"`
	InflightPeak  int32 `parquet:"inflight_peak" doc:"most requests in flight at once"`
	InflightWaits int64 `parquet:"inflight_waits" doc:"sends delayed by the in-flight cap"`
	ConnsOpened   int64 `parquet:"conns_opened" doc:"connections the worker opened in the stage (dialled and connected: for waiting requests, spare ones, or after the server closed one)"`
	ConnsPeak     int32 `parquet:"conns_peak" doc:"most connections the worker had open at once in the stage"`
	ConnsWarm     int32 `parquet:"conns_warm" doc:"connections the worker warms before the start and keeps half of spare (capture --connections)"`
}

// ServerMetric is one row of raw/server-metrics.parquet: one sample of the target's Prometheus
// /metrics endpoint, scraped about once a second. Histograms appear as their _bucket, _sum and
// _count series with the `le` label in labels.
type ServerMetric struct {
	ScrapeNs int64   `parquet:"scrape_ns,delta" doc:"time the scrape started"`
	Stage    int32   `parquet:"stage" doc:"stage running at scrape time; -1 before the first or after the last"`
	Name     string  `parquet:"name,dict" doc:"metric name, e.g. vllm:request_queue_time_seconds_sum"`
	Labels   string  `parquet:"labels" doc:"labels in Prometheus text form without braces, sorted"`
	Value    float64 `parquet:"value" doc:"sample value"`
}
