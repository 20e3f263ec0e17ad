package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Timestamp qualities recorded in RawChunk.Quality (defined in schemas, the file contract).
const (
	qualityExact      = schemas.QualityExact
	qualityUpperBound = schemas.QualityUpperBound
	qualityUser       = schemas.QualityUser
	qualityApprox     = schemas.QualityApprox
)

// maxErrorBody bounds how much of an error response body is kept as the message.
const maxErrorBody = 4096

// ClientConfig configures one worker's client.
type ClientConfig struct {
	API        API           // the response format (apiOpenAI when zero)
	MaxConns   int           // connection pool size (MaxConnsPerHost and MaxIdleConnsPerHost)
	Timeout    time.Duration // per request, 0 = none
	KeepText   bool          // collect generated text into Result.Text
	TLS        *tls.Config   // for https targets
	Timestamps bool          // enable SO_TIMESTAMPING; defaultClientConfig sets it, false = user time only
	// MinIdle keeps at least this many idle connections per target (http or https) once it has
	// been used (within MaxConns): the watchdog dials more off the send path when the idle pool
	// runs low, so a burst of slow responses does not put dials on the send path. 0 = none.
	MinIdle int
	// StampAfterDecode takes each event's arrival time after its JSON is decoded, with no kernel
	// time: the naive client that `wirebench calibrate --single-process` compares against.
	// Never for measurement.
	StampAfterDecode bool
	// TTFTTimeout ends a request (kind ttft_timeout) when no byte of its response body has
	// arrived this long after its send began (a non-streaming response's body comes whole, so
	// there it bounds the whole generation). GapTimeout ends a request (kind gap_timeout) whose
	// body has begun when no byte has arrived for this long (an SSE keep-alive comment counts).
	// 0 = none. A request cut either way keeps the chunks it had; its connection is closed. On
	// the plain path the watchdog checks them every watchTick (10 ms): a cut lands at most that
	// late.
	TTFTTimeout time.Duration
	GapTimeout  time.Duration
	// ConnectTimeout bounds each dial: the TCP connect (its SYN retransmissions are bounded to
	// match with TCP_SYNCNT, see synRetries) and, on https, the TLS handshake. A request whose
	// dial fails is recorded as connect. 0 = DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MemoryBudget bounds the bytes of response state (events, text, buffered lines, whole
	// bodies) all requests in flight hold together; a request whose growth would pass it ends
	// with kind memory_budget (see budget.go). 0 = none. With a budget, call Result.Release
	// once a Result's rows are written.
	MemoryBudget int64
	// Coalesce, when > 0, batches the reads of fast streams (Linux): once a connection's reads
	// come less than Coalesce apart, its socket wakes the reader only once 1 KiB is queued
	// (SO_RCVLOWAT) or Coalesce has passed since the read began, whichever is first; a read
	// that finds nothing after Coalesce goes back to waking on each segment. Fewer reads and
	// wake-ups, while a read (and its ACK) still comes every few events, inside the server's
	// congestion window; but events read together share one read's time (only a packet tap,
	// which times every segment, keeps them exact), and a stream's last bytes, under 1 KiB,
	// are read up to Coalesce late (docs/design/footprint.md). 0 = read each event as it
	// arrives.
	Coalesce time.Duration
}

// defaultClientConfig returns the configuration capture starts from: 64 connections, no
// timeout, kernel timestamps on.
func defaultClientConfig() ClientConfig {
	return ClientConfig{MaxConns: 64, Timestamps: true}
}

// Client is an HTTP/1.1 client whose connections (http and https) carry kernel receive
// timestamps. It is safe for concurrent use; one worker uses one Client.
type Client struct {
	cfg    ClientConfig
	dialer *net.Dialer
	stats  counters
	hold   func() // releases the timestamping holder socket
	once   sync.Once

	budget    *memBudget             // nil without ClientConfig.MemoryBudget
	eps       sync.Map               // URL string -> *endpoint
	pools     sync.Map               // scheme://host:port -> *plainPool
	sessions  tls.ClientSessionCache // TLS sessions to resume on new connections
	watchOnce sync.Once
	closed    chan struct{}
}

// NewClient returns a client for cfg. HTTP/2 is never negotiated (https offers ALPN http/1.1
// only): measurement needs one response per connection read stream.
func NewClient(cfg ClientConfig) *Client {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 64
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	c := &Client{cfg: cfg, hold: func() {}, closed: make(chan struct{}), sessions: tls.NewLRUClientSessionCache(0)}
	if cfg.MemoryBudget > 0 {
		c.budget = &memBudget{limit: cfg.MemoryBudget}
	}
	if cfg.Timestamps {
		c.hold = holdTimestamps()
	}
	c.dialer = &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second, Control: synCountControl(synRetries(cfg.ConnectTimeout))}
	return c
}

// Warm opens n keep-alive connections to baseURL (GET baseURL + "/health", falling back to
// "/v1/models") so that no dial lands on the send path; they stay idle in the pool afterwards.
// Each warm-up dials its own connection. It returns the first error.
func (c *Client) Warm(ctx context.Context, baseURL string, n int) error {
	base := strings.TrimRight(baseURL, "/")
	errs := make(chan error, n)
	for range n {
		go func() { errs <- c.warmOnePlain(ctx, base) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats returns cumulative reads and bytes read by this client's connections.
func (c *Client) Stats() (reads, bytes int64) {
	return c.stats.reads.Load(), c.stats.bytes.Load()
}

// Opened returns how many connections the client has opened (dialled and connected) so far.
func (c *Client) Opened() int64 { return c.stats.opened.Load() }

// Open returns how many of the client's connections are open now.
func (c *Client) Open() int64 { return c.stats.open.Load() }

// TakeOpenPeak returns the most connections open at once since the last call (or since the
// client was made), and starts the next peak from those open now.
func (c *Client) TakeOpenPeak() int64 {
	return c.stats.peak.Swap(c.stats.open.Load())
}

// Close closes idle connections and releases the client's hold on kernel timestamping.
func (c *Client) Close() {
	c.once.Do(func() {
		c.closePlain()
		c.hold()
	})
}

// Request is one prepared request: the body is built before the send time.
type Request struct {
	Seq    int64
	method string // "" = POST; GET for warm-up probes (warmOnePlain)
	URL    string // full URL, e.g. http://127.0.0.1:8000/v1/completions
	Body   []byte
	Header http.Header // may be nil; Content-Type application/json is set by Send
	// Ranking APIs (rerank, score, tei_rerank): the documents sent and the answer entries
	// expected (rerank: min(top_n, documents)); the answer is checked against them (error kind
	// malformed_answer). 0: not checked.
	Documents, Answers int32
	// CancelAfterTokens and CancelAfter close the request on the client's side, as a user who
	// abandons an answer (kind cancelled_by_client, the connection closed): once this many
	// output tokens have arrived (content events, or their own token counts), or this long
	// after the send began (checked every watchTick). 0 = never.
	CancelAfterTokens int32
	CancelAfter       time.Duration
}

// Result receives everything measured about one request. Send resets it and fills it; Chunks
// reuses its backing array across calls, so use one Result per in-flight request and copy (or
// write) the rows before the next Send on it. The rows' pointer fields point into storage
// allocated per Send, so row copies stay valid after the next Send.
//
// Send fills Req.SendStartNs, SentNs, ConnReused, ConnectNs, TLSHandshakeNs, TLSResumed,
// HeadersNs, DoneNs, Status, ErrorKind, ErrorMessage, Chunks, ContentBytes, ReasoningBytes,
// Usage*, FinishReason, OffsetMismatch, Server{Queue,Prefill,Decode}Ns and, with KeepText,
// OutputText. The caller fills Stage, Worker, Shard, Warmup, Conversation, Turn, InputTokens,
// MaxTokens, PlannedNs.
type Result struct {
	Req    schemas.RawRequest // Send fills the wire fields; the caller fills Seq, Stage, Worker, ...
	Chunks []schemas.RawChunk // one per SSE event, Seq set, in order
	Text   string             // generated text when KeepText

	st reqState // reused per-request state: decoder, buffers
}

// reqState is the per-request state Send keeps in the Result so that repeated requests reuse it.
type reqState struct {
	dec    decoder
	ev     event
	pl     payload
	buf    []byte
	text   []byte
	sim    []byte // the x-sim comment payload
	first  []byte // the first bytes of an SSE body, for the message when it holds no event
	conn   *stampedConn
	resp   int64
	cursor int64
	body   bytes.Reader
	p      *ptrs   // this request's optional request fields (fresh per Send: rows may outlive it)
	tok    []int32 // per chunk: tokens, -1 = not said
	srv    []int64 // server send times from x-sim, per content chunk
	srvEnd []int64 // the server's times after those sends' writes returned (x-sim sent_end_ns)
	final  bool    // the API's terminal event has arrived
	tokens int64   // output tokens so far (content events, or their own counts): Request.CancelAfterTokens

	budget   *memBudget // the client's budget this request's state is counted in; nil: none
	reserved int64      // bytes of it reserved for this request (see Client.reserve)
}

// ptrs backs the optional (pointer) fields of one request's rows. It is allocated per Send, so
// rows copied out of a Result stay valid after the next Send.
type ptrs struct {
	ints    [10]int64
	i32     [6]int32
	resumed bool
}

// Slots of ptrs.ints.
const (
	slotConnect = iota
	slotTLS
	slotHeaders
	slotDone
	slotQueue
	slotPrefill
	slotDecode
	slotSentEnd
	slotTxEnd
	slotConnWait
)

// Slots of ptrs.i32 after the usage counts (0 to 2).
const (
	slotPort = 3 + iota
	slotSynRetrans
	slotReasoning
)

func (s *reqState) init() {
	if s.buf == nil {
		s.buf = make([]byte, 32<<10)
		s.first = make([]byte, 0, 200)
	}
}

// int64p stores v in slot i of this request's pointer block and returns a pointer to it.
func (s *reqState) int64p(i int, v int64) *int64 {
	s.p.ints[i] = v
	return &s.p.ints[i]
}

func (s *reqState) int32p(i int, v int64) *int32 {
	s.p.i32[i] = int32(v)
	return &s.p.i32[i]
}

func (res *Result) reset() {
	res.Release()
	s := &res.st
	res.Req = schemas.RawRequest{}
	res.Chunks = res.Chunks[:0]
	res.Text = ""
	s.dec.Reset()
	s.text, s.sim = s.text[:0], s.sim[:0]
	s.tok, s.srv, s.srvEnd = s.tok[:0], s.srv[:0], s.srvEnd[:0]
	s.conn, s.resp, s.cursor, s.final, s.tokens = nil, 0, 0, false, 0
	s.p = new(ptrs)
}

// do sends the request and reads the whole response, recording times, chunks and errors in res.
// A failed request is recorded in res (ErrorKind, ErrorMessage, partial chunks), never returned.
// It is Send waiting for done.
func (c *Client) do(ctx context.Context, r *Request, res *Result) {
	done := make(chan struct{})
	c.Send(ctx, r, res, func(*Result) { close(done) })
	<-done
}

// response is what handle needs of a response whose headers have arrived.
type response struct {
	status     int
	statusText string // "503 Service Unavailable"
	header     interface{ Get(string) string }
	body       io.Reader
}

// handle reads the response after its headers: status, body as SSE or JSON, text.
func (c *Client) handle(ctx, rctx context.Context, resp response, r *Request, res *Result) {
	s := &res.st
	res.Req.Status = int32(resp.status)
	if s.conn != nil {
		if h, ok := s.conn.headers(s.resp); ok {
			res.Req.HeadersNs = s.int64p(slotHeaders, pick(h.kernel, h.user))
		}
	}
	if res.Req.HeadersNs == nil {
		res.Req.HeadersNs = s.int64p(slotHeaders, time.Now().UnixNano())
	}
	if resp.status != http.StatusOK {
		n, _ := io.ReadFull(resp.body, s.buf[:min(len(s.buf), maxErrorBody)])
		res.Req.ErrorKind = schemas.ErrHTTPStatus
		res.Req.ErrorMessage = strings.TrimSpace(resp.statusText + ": " + string(s.buf[:n]))
		res.Req.DoneNs = s.int64p(slotDone, time.Now().UnixNano())
		return
	}
	if ce := resp.header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		c.fail(ctx, res, schemas.ErrContentEncoding, fmt.Errorf("Content-Encoding %q: wirebench asks for no compression and does not decode it (event offsets would not be the wire's)", ce))
		return
	}
	if ct := resp.header.Get("Content-Type"); strings.HasPrefix(ct, "text/event-stream") {
		c.stream(ctx, rctx, resp, r, res)
	} else {
		c.whole(ctx, rctx, resp, r, res)
	}
	if c.cfg.KeepText {
		res.Text = string(s.text)
		res.Req.OutputText = res.Text
	}
}

// pick returns the kernel time when there is one, else the user time.
func pick(kernel, user int64) int64 {
	if kernel != 0 {
		return kernel
	}
	return user
}

func (c *Client) fail(ctx context.Context, res *Result, kind string, err error) {
	if res.Req.ErrorKind != "" {
		return
	}
	res.Req.ErrorKind = kind
	res.Req.ErrorMessage = err.Error()
}

// classify maps a transport or body error to an error kind.
func classify(parent, rctx context.Context, err error) string {
	if parent.Err() != nil {
		return schemas.ErrCancelled
	}
	var ce *cutError
	if errors.As(err, &ce) {
		return ce.kind
	}
	if rctx.Err() != nil {
		if errors.As(context.Cause(rctx), &ce) {
			return ce.kind
		}
		return schemas.ErrTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return schemas.ErrTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return schemas.ErrConnect
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return schemas.ErrConnect
	}
	var ke *kindError
	if errors.As(err, &ke) {
		return ke.kind
	}
	return schemas.ErrReset // any other error of a response (a TLS alert or bad record too)
}

// errCancelledByClient is the message of a request the client closed as planned: one value,
// so the cancel allocates nothing.
var errCancelledByClient = errors.New("closed by the client as planned (workload.cancel)")

// kindError is a response error that decides its own kind: too_large, malformed_stream.
type kindError struct {
	kind string
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// cutError is a request ended by TTFTTimeout or GapTimeout (kind schemas.ErrTTFTTimeout or
// schemas.ErrGapTimeout), or closed by the client at Request.CancelAfter
// (schemas.ErrCancelledByClient).
type cutError struct {
	kind  string
	limit time.Duration
	quiet time.Duration // when cut: since the send began (ttft) or since the last byte (gap)
	err   error         // the read error the cut caused, if any
}

func (e *cutError) Error() string {
	if e.kind == schemas.ErrCancelledByClient {
		return fmt.Sprintf("closed by the client as planned (workload.cancel) %v after the send began", e.quiet.Round(time.Millisecond))
	}
	if e.kind == schemas.ErrGapTimeout {
		return fmt.Sprintf("no byte for %v since the last (gap_timeout %v)", e.quiet.Round(time.Millisecond), e.limit)
	}
	return fmt.Sprintf("no byte of the response body %v after the send began (ttft_timeout %v)", e.quiet.Round(time.Millisecond), e.limit)
}

func (e *cutError) Unwrap() error { return e.err }
func (e *cutError) Timeout() bool { return true }

// arrival is what the socket reads say about an event's arrival.
type arrival struct {
	kernel, user int64
	after        int64 // its last byte became readable after this time; 0 when unknown
	streamEnd    int64 // receive-stream offset just past its last byte; 0 when unknown
	quality      string
}

// stamp returns the arrival of the event ending at body offset end.
func (s *reqState) stamp(end int64, cr bool, userNow int64) arrival {
	if s.conn == nil {
		return arrival{user: userNow, quality: qualityUser}
	}
	rec, ok := s.conn.lookup(s.resp, end, &s.cursor)
	if !ok {
		return arrival{user: userNow, quality: qualityUser}
	}
	a := arrival{kernel: rec.kernel, user: rec.user, after: rec.after, quality: qualityUpperBound}
	last := rec.bodyEnd == end || (cr && rec.bodyEnd == end+1)
	if rec.record {
		var ok bool
		a.streamEnd, ok = s.conn.recordOf(s.resp, end)
		last = ok && a.streamEnd == rec.streamEnd
	} else {
		a.streamEnd, _ = s.conn.streamEnd(s.resp, end)
	}
	switch {
	case rec.kernel == 0:
		a.quality = qualityUser
	case !rec.full && last:
		// The kernel keeps the newest segment's time: exact only when the read ends with this
		// event (under TLS: with the record that completed it) and did not fill the buffer (a
		// full read may have left part of a newer, coalesced segment queued, whose time the
		// read reports).
		a.quality = qualityExact
	}
	return a
}

// stream reads an SSE body. Every event's times come from the socket read that delivered its
// last byte; the JSON is parsed only after that. Reading stops at the first bound a body
// passes (limits.go): the request is then too_large and its connection closed.
func (c *Client) stream(ctx, rctx context.Context, resp response, r *Request, res *Result) {
	s := &res.st
	var done bool
	var lastEnd int64 // end of the latest data event (not a comment)
	s.first = s.first[:0]
	for {
		n, rerr := resp.body.Read(s.buf)
		userNow := time.Now().UnixNano()
		if len(s.first) < cap(s.first) {
			s.first = append(s.first, s.buf[:min(n, cap(s.first)-len(s.first))]...)
		}
		s.dec.Feed(s.buf[:n])
		if rerr == io.EOF {
			s.dec.Finish() // a clean end: an event without its blank line is complete (not on a cut)
		}
		for s.dec.Next(&s.ev) {
			ev := &s.ev
			if ev.Comment {
				if bytes.HasPrefix(ev.Data, []byte("x-sim ")) {
					s.sim = append(s.sim[:0], ev.Data[6:]...)
				}
				continue
			}
			a := s.stamp(ev.End, ev.CR, userNow)
			if c.cfg.StampAfterDecode {
				a = arrival{user: time.Now().UnixNano(), quality: qualityUser}
			}
			ch := c.event(ctx, res, ev, a)
			kernel, user, q := a.kernel, a.user, a.quality
			ch.Seq, ch.Index = r.Seq, int32(len(res.Chunks)-1)
			ch.RxUserNs, ch.Quality, ch.Bytes = user, q, int32(ev.End-ev.Start)
			if ch.Kind == schemas.ChunkDone || s.final {
				done = true
			}
			lastEnd = ev.End
			res.Req.DoneNs = s.int64p(slotDone, pick(kernel, user))
		}
		if r.CancelAfterTokens > 0 && s.tokens >= int64(r.CancelAfterTokens) && !done {
			c.fail(ctx, res, schemas.ErrCancelledByClient, errCancelledByClient)
			res.Req.DoneNs = nil // the stream did not end; the connection is closed (serve)
			break
		}
		if err := bodyBound(&s.dec, lastEnd, len(res.Chunks)); err != nil {
			c.fail(ctx, res, schemas.ErrTooLarge, err)
			res.Req.DoneNs = nil // the stream did not end
			break
		}
		if err := c.reserve(res); err != nil {
			c.fail(ctx, res, schemas.ErrMemoryBudget, err)
			res.Req.DoneNs = nil
			break
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			c.fail(ctx, res, classify(ctx, rctx, rerr), rerr)
			res.Req.DoneNs = nil // the stream did not end
			break
		}
	}
	res.Req.Chunks = int32(len(res.Chunks))
	if s.conn != nil && len(res.Chunks) > 0 && res.Req.ErrorKind == "" {
		// framing check: the read that delivered the last event must end at the decoder's
		// offset, the end of the body.
		rec, ok := s.conn.lookup(s.resp, lastEnd, &s.cursor)
		res.Req.OffsetMismatch = !ok || rec.bodyEnd != s.dec.Offset()
	}
	c.applySim(res)
	c.finish(res)
	switch {
	case res.Req.ErrorKind != "" || done || res.Req.FinishReason != "":
	case len(res.Chunks) == 0 && s.dec.Offset() > 0:
		c.fail(ctx, res, schemas.ErrMalformedStream, fmt.Errorf("no SSE data event in the %d bytes of a text/event-stream body: %q", s.dec.Offset(), s.first))
	default:
		c.fail(ctx, res, schemas.ErrIncompleteStream, fmt.Errorf("the stream ended after %d events without [DONE] (or the API's final event: response.completed, message_stop) or a finish reason", len(res.Chunks)))
	}
}

// event decodes one event's payload into a new chunk row.
func (c *Client) event(ctx context.Context, res *Result, ev *event, a arrival) *schemas.RawChunk {
	s := &res.st
	res.Chunks = append(res.Chunks, schemas.RawChunk{})
	ch := &res.Chunks[len(res.Chunks)-1]
	ch.RxKernelNs, ch.RxAfterNs, ch.RxStreamEnd = a.kernel, a.after, a.streamEnd
	s.tok = append(s.tok, -1)
	if string(ev.Data) == "[DONE]" {
		ch.Kind = schemas.ChunkDone
		return ch
	}
	if string(ev.Type) == "error" {
		ch.Kind = schemas.ChunkError
		c.fail(ctx, res, schemas.ErrServerEvent, fmt.Errorf("error event: %s", clip(ev.Data)))
		return ch
	}
	s.pl.Text = s.text
	err := parseEvent(c.cfg.API, ev.Type, ev.Data, &s.pl, c.cfg.KeepText)
	s.text = s.pl.Text
	pl := &s.pl
	switch {
	case err != nil:
		ch.Kind = schemas.ChunkEmpty
		c.fail(ctx, res, schemas.ErrMalformedStream, fmt.Errorf("event %d: %w: %s", len(res.Chunks)-1, err, clip(ev.Data)))
		return ch
	case pl.Error != nil:
		ch.Kind = schemas.ChunkError
		c.fail(ctx, res, schemas.ErrServerEvent, fmt.Errorf("error event: %s", clip(pl.Error)))
	case pl.Content+pl.Reasoning+pl.ToolCalls > 0:
		ch.Kind = schemas.ChunkContent
		s.tokens += max(int64(pl.Tokens), 1)
	case pl.Choices == 0 && pl.HasUsage:
		ch.Kind = schemas.ChunkUsage
	case pl.Final:
		ch.Kind = schemas.ChunkDone
	default:
		ch.Kind = schemas.ChunkEmpty
	}
	ch.ContentBytes, ch.ReasoningBytes, ch.ToolCalls = int32(pl.Content), int32(pl.Reasoning), int32(pl.ToolCalls)
	res.Req.ContentBytes += int64(pl.Content)
	s.final = s.final || pl.Final
	res.Req.ReasoningBytes += int64(pl.Reasoning)
	if c.cfg.API == apiEmbeddings {
		res.Req.Embeddings += int32(pl.Items)
	}
	if pl.Tokens >= 0 {
		s.tok[len(s.tok)-1] = int32(pl.Tokens)
	}
	if len(pl.FinishReason) > 0 {
		ch.FinishReason = intern(pl.FinishReason)
		res.Req.FinishReason = ch.FinishReason
	}
	if pl.HasUsage {
		if pl.Prompt >= 0 {
			res.Req.UsagePrompt = s.int32p(0, pl.Prompt)
		}
		if pl.Completion >= 0 {
			res.Req.UsageComplete = s.int32p(1, pl.Completion)
		}
		if pl.Cached >= 0 {
			res.Req.UsageCached = s.int32p(2, pl.Cached)
		}
		if pl.ReasoningTok >= 0 {
			res.Req.UsageReasoning = s.int32p(slotReasoning, pl.ReasoningTok)
		}
	}
	return ch
}

// finish sets the chunks' token counts (from one block allocated for this request) and the
// simulator's send times.
func (c *Client) finish(res *Result) {
	s := &res.st
	n := len(res.Chunks)
	if n == 0 {
		return
	}
	toks := make([]int32, n)
	content := 0
	for i := range res.Chunks {
		ch := &res.Chunks[i]
		if s.tok[i] >= 0 {
			toks[i] = s.tok[i]
			ch.Tokens = &toks[i]
		}
		if ch.Kind == schemas.ChunkContent {
			if content < len(s.srv) {
				ch.ServerSentNs = s.srv[content]
			}
			if content < len(s.srvEnd) {
				ch.ServerSentEndNs = s.srvEnd[content]
			}
			content++
		}
	}
}

// applySim parses the simulator's ground-truth comment
// `x-sim {"queue_ns":Q,"prefill_ns":P,"decode_ns":D,"sent_ns":[t0,t1,...],"sent_end_ns":[e0,e1,...]}`
// (sent_end_ns absent from older simulators, and perhaps shorter than sent_ns).
func (c *Client) applySim(res *Result) {
	s := &res.st
	if len(s.sim) == 0 {
		return
	}
	j := jscan{b: s.sim}
	j.object(func(key []byte) {
		switch string(key) {
		case "queue_ns":
			res.Req.ServerQueueNs = s.int64p(slotQueue, j.int())
		case "prefill_ns":
			res.Req.ServerPrefillNs = s.int64p(slotPrefill, j.int())
		case "decode_ns":
			res.Req.ServerDecodeNs = s.int64p(slotDecode, j.int())
		case "sent_ns":
			j.array(func() { s.srv = append(s.srv, j.int()) })
		case "sent_end_ns":
			j.array(func() { s.srvEnd = append(s.srvEnd, j.int()) })
		default:
			j.skip()
		}
	})
	if j.err != nil {
		res.Req.ServerQueueNs, res.Req.ServerPrefillNs, res.Req.ServerDecodeNs = nil, nil, nil
		s.srv, s.srvEnd = s.srv[:0], s.srvEnd[:0]
	}
}

// whole reads a non-streaming JSON body as one chunk.
func (c *Client) whole(ctx, rctx context.Context, resp response, r *Request, res *Result) {
	s := &res.st
	body := s.sim[:0] // reuse a buffer; x-sim comments do not occur here
	if err := wholeBound(resp.header.Get("Content-Length"), 0); err != nil {
		c.fail(ctx, res, schemas.ErrTooLarge, err)
		return
	}
	for {
		n, rerr := resp.body.Read(s.buf)
		if err := wholeBound("", int64(len(body)+n)); err != nil {
			s.sim = nil // do not keep a buffer that large
			c.fail(ctx, res, schemas.ErrTooLarge, err)
			return
		}
		body = append(body, s.buf[:n]...)
		s.sim = body // counted by the memory budget
		if err := c.reserve(res); err != nil {
			c.fail(ctx, res, schemas.ErrMemoryBudget, err)
			return
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			c.fail(ctx, res, classify(ctx, rctx, rerr), rerr)
			return
		}
	}
	s.sim = body[:0]
	userNow := time.Now().UnixNano()
	end := int64(len(body))
	a := s.stamp(end, false, userNow)
	ev := event{Start: 0, End: end, Data: body}
	ch := c.event(ctx, res, &ev, a)
	kernel, user, q := a.kernel, a.user, a.quality
	ch.Seq, ch.Index = r.Seq, 0
	ch.RxUserNs, ch.Quality, ch.Bytes = user, q, int32(end)
	res.Req.Chunks = 1
	res.Req.DoneNs = s.int64p(slotDone, pick(kernel, user))
	for i, h := range []string{"X-Sim-Queue-Ns", "X-Sim-Prefill-Ns", "X-Sim-Decode-Ns"} {
		if v := resp.header.Get(h); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				p := s.int64p(slotQueue+i, n)
				switch i {
				case 0:
					res.Req.ServerQueueNs = p
				case 1:
					res.Req.ServerPrefillNs = p
				case 2:
					res.Req.ServerDecodeNs = p
				}
			}
		}
	}
	var sent int64
	if v := resp.header.Get("X-Sim-Sent-Ns"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			sent = n
			if ch.Kind == schemas.ChunkContent {
				s.srv = append(s.srv, n)
			}
		}
	}
	if c.cfg.API.Ranks() && res.Req.ErrorKind == "" {
		if err := checkRanked(&s.pl, r); err != nil {
			c.fail(ctx, res, schemas.ErrMalformedAnswer, fmt.Errorf("%w: %s", err, clip(body)))
		}
	}
	c.finish(res)
	if ch := &res.Chunks[0]; ch.ServerSentNs == 0 {
		ch.ServerSentNs = sent // a whole response without tokens (embeddings) is still one event
	}
	if c.cfg.API.Streams() {
		// Parsed as it is (text, usage, finish reason), but it carries no token timing.
		c.fail(ctx, res, schemas.ErrNotStreamed, fmt.Errorf("a whole answer of %d bytes with Content-Type %q, not text/event-stream, to a streaming request: no token timing",
			end, resp.header.Get("Content-Type")))
	}
}

// checkRanked checks a ranking API's answer (parsed into pl) against the request: every entry
// has an index and a score, no index is outside the documents sent, and there are as many
// entries as expected.
func checkRanked(pl *payload, r *Request) error {
	switch {
	case pl.Items == 0 && r.Answers > 0:
		return fmt.Errorf("no scores in the answer (want %d: results, data or a top-level array)", r.Answers)
	case pl.Ranked != pl.Items:
		return fmt.Errorf("%d of the answer's %d entries lack an integer index or a numeric score", pl.Items-pl.Ranked, pl.Items)
	case r.Documents > 0 && pl.MaxIndex >= int64(r.Documents):
		return fmt.Errorf("index %d in the answer, but %d documents were sent", pl.MaxIndex, r.Documents)
	case r.Answers > 0 && pl.Items != int(r.Answers):
		return fmt.Errorf("%d scores in the answer; want %d", pl.Items, r.Answers)
	}
	return nil
}

// clip returns at most 1 KiB of b as a string for error messages.
func clip(b []byte) string {
	if len(b) > 1024 {
		return string(b[:1024]) + "..."
	}
	return string(b)
}

// intern returns the common finish reasons without allocating.
func intern(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	case "eos_token":
		return "eos_token"
	case "completed":
		return "completed"
	case "incomplete":
		return "incomplete"
	case "max_output_tokens":
		return "max_output_tokens"
	case "end_turn":
		return "end_turn"
	case "max_tokens":
		return "max_tokens"
	case "tool_use":
		return "tool_use"
	}
	return string(b)
}
