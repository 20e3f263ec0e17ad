package schemas

import (
	"fmt"
	"io"
	"strings"
)

// Error kinds of RawRequest.ErrorKind (copied into MetricRequest.ErrorKind): why a request
// failed. A failed request is a row with its kind, never an error of the run; every kind is a
// goodput miss.
const (
	ErrConnect          = "connect"
	ErrTimeout          = "timeout"
	ErrTTFTTimeout      = "ttft_timeout"
	ErrGapTimeout       = "gap_timeout"
	ErrHTTPStatus       = "http_status"
	ErrReset            = "reset"
	ErrMalformedStream  = "malformed_stream"
	ErrIncompleteStream = "incomplete_stream"
	ErrServerEvent      = "server_error_event"
	ErrContentEncoding  = "content_encoding"
	ErrTooLarge         = "too_large"
	ErrNotStreamed      = "not_streamed"
	ErrMalformedAnswer  = "malformed_answer"
	ErrMemoryBudget     = "memory_budget"
	ErrCancelled        = "cancelled"
	// ErrCancelledByClient is not a failure: the client closed the request as planned
	// (workload.cancel). Aggregate counts it apart (stages.parquet cancelled), in no latency
	// figure, no error count and not in goodput's denominator.
	ErrCancelledByClient = "cancelled_by_client"
)

// ErrorKindDoc says what one error kind means and what the row keeps.
type ErrorKindDoc struct {
	Kind, Doc string
}

// ErrorKinds documents every error kind, in the order SCHEMAS.md lists them.
var ErrorKinds = []ErrorKindDoc{
	{ErrConnect, "no connection: the dial was refused, timed out (`target.connect_timeout`, `--connect-timeout`, default 10s) or failed otherwise, or the TLS handshake failed; also a request whose connection was closed before any byte of it was written. `status` 0, no chunks"},
	{ErrTimeout, "`target.timeout` (`--timeout`, default 30m; 0 = none) expired after the send began; chunks received so far are kept"},
	{ErrTTFTTimeout, "no byte of the response body within `target.ttft_timeout` (`--ttft-timeout`, default 10m) of the send, however far the response headers had come (headers dripped a byte at a time)"},
	{ErrGapTimeout, "the response headers or body began, then no byte arrived for `target.gap_timeout` (`--gap-timeout`, default 60s); chunks received so far are kept"},
	{ErrHTTPStatus, "a status other than 200; `error_message` holds the status line and up to 4 KiB of the body"},
	{ErrReset, "the connection was reset or closed before the response ended, including inside the chunked framing; chunks received so far are kept"},
	{ErrMalformedStream, "the response is not HTTP/1.1 or its body not an OpenAI SSE stream or JSON: a bad status line or chunk size, an event whose JSON does not parse, a 200 whose body holds no SSE event (an HTML error page), a non-streaming body that is not JSON"},
	{ErrIncompleteStream, "the body ended cleanly (its framing complete) without `data: [DONE]` (or the API's final event: `response.completed`, `message_stop`) or a finish reason: the server gave up mid-answer without saying why"},
	{ErrServerEvent, "an error object mid-stream (`{\"error\": ...}`, vLLM's `{\"object\": \"error\"}` or an `event: error`), or as a non-streaming 200 body; its chunk has kind `error`"},
	{ErrContentEncoding, "the server compressed the body (`Content-Encoding` other than identity) although wirebench asks for none: event offsets would not be the wire's, so it is not decoded"},
	{ErrTooLarge, "the response passed a bound that keeps a broken server from exhausting the client: headers over 64 KiB, an SSE line or event over 16 MiB, 16 MiB of body without an event, more than 1,048,576 events, a streamed body over 1 GiB, or a non-streaming body over 256 MiB (or declaring more); reading stops there and the connection is closed"},
	{ErrNotStreamed, "a 200 to a streaming request whose body is one whole JSON answer (`Content-Type` not `text/event-stream`): a server or proxy that ignored `stream: true`. The answer is kept as one chunk (text, usage and finish reason parsed), but it carries no token timing (no TTFT, TPOT or ITL), so it is not a measured streaming answer"},
	{ErrMalformedAnswer, "a ranking API's answer (rerank, score, tei_rerank) that is JSON but not the answer asked for: no `results` (rerank), `data` (score) or top-level array (tei_rerank), an entry without an integer `index` or a numeric score (`relevance_score`, `score`), an index outside the documents sent, or another number of entries than expected (documents sent; rerank: min(top_n, documents))"},
	{ErrMemoryBudget, "the worker's memory budget for responses in flight (`capture.memory_budget`, `--memory-budget`, default 256 MiB per worker) was spent: holding this response's events (256 bytes each) or buffered bytes would have passed it. Reading stops there, the chunks so far are kept and the connection is closed; the other requests go on"},
	{ErrCancelled, "the run was interrupted (Ctrl-C, SIGTERM) and the request did not end within `--drain-timeout`"},
	{ErrCancelledByClient, "not a failure: the client closed the connection mid-stream as the schedule planned (`workload.cancel`, schedule `cancel_after_tokens` or `cancel_after_ns`), as a user who abandons an answer; the chunks so far are kept. Counted per stage in `cancelled`, never in `errors`, a latency figure or goodput's denominator, and never blamed on the server or the client"},
}

// writeErrorKindsMarkdown writes the error kinds as a Markdown section.
func writeErrorKindsMarkdown(w io.Writer) {
	fmt.Fprint(w, "## Error kinds\n\n`error_kind` of raw-requests and metric-requests: empty on success, else one of these. "+
		"A failed request is a row, never an error of the run, and a goodput miss.\n\n")
	fmt.Fprintln(w, "| kind | meaning |")
	fmt.Fprintln(w, "|---|---|")
	for _, k := range ErrorKinds {
		fmt.Fprintf(w, "| `%s` | %s |\n", k.Kind, strings.ReplaceAll(k.Doc, "|", `\|`))
	}
	fmt.Fprintln(w)
}
