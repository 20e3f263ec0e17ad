package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	gojson "github.com/goccy/go-json"
)

// Fault names accepted by the x-sim-fault request header.
const (
	Fault429         = "429"
	Fault500         = "500"
	Fault503         = "503"
	FaultStall       = "stall"
	FaultDrop        = "drop"
	FaultMalformed   = "malformed"
	FaultSlowHeaders = "slow-headers"
)

// FaultHeader is the request header that forces a fault for that request.
const FaultHeader = "x-sim-fault"

// Shared header values (net/http does not modify them).
var (
	sseContentType = []string{"text/event-stream; charset=utf-8"}
	noCache        = []string{"no-cache"}
	chunked        = []string{"chunked"}
)

// maxBody bounds a request body.
const maxBody = 64 << 20

// words is the fixed, deterministic output vocabulary: output token i is words[i%len(words)]
// followed by a space, so tokenizer.CountWords(text) == completion_tokens.
var words = [...]string{
	"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "while", "seven",
	"tired", "engines", "stream", "tokens", "across", "a", "quiet", "network", "and", "every",
	"packet", "lands", "right", "on", "time", "because", "nobody", "waits", "for", "slow",
	"clients", "anymore", "so", "latency", "stays", "honest", "through", "bursts", "of", "load",
	"queues", "grow", "then", "drain", "as", "batches", "finish", "their", "decode", "steps",
	"in", "order", "with", "prefix", "blocks", "cached", "warm", "ready", "to", "serve",
	"more", "requests", "all", "day",
}

// Server is the simulator: an http.Handler over one engine.
type Server struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics
	eng    *engine
	mux    *http.ServeMux
	models map[string]string // served name -> its JSON string literal
	ids    atomic.Uint64

	faultMu sync.Mutex
	rng     *rand.Rand
	faults  bool
	// eagerHeaders: flush response headers before the first token. Off when the model has no
	// latency at all, where the first chunk is ready at once and goes out with the headers.
	eagerHeaders bool

	abort     chan struct{} // closed by Close or a hard shutdown: every handler returns
	abortOnce sync.Once
	active    sync.WaitGroup
	closeOnce sync.Once

	bufs sync.Pool
}

// New validates cfg and starts the engine. Zero Models, BlockSize, TokensPerChunk,
// DefaultMaxTokens and MaxModelLen take their defaults; every other zero means zero (no
// latency, unlimited sequences, no faults). Call Close when done.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	def := DefaultConfig()
	if len(cfg.Models) == 0 {
		cfg.Models = def.Models
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = def.BlockSize
	}
	if cfg.TokensPerChunk == 0 {
		cfg.TokensPerChunk = def.TokensPerChunk
	}
	if cfg.DefaultMaxTokens == 0 {
		cfg.DefaultMaxTokens = def.DefaultMaxTokens
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = def.MaxModelLen
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:    cfg,
		log:    log,
		m:      newMetrics(cfg.Models[0]),
		models: map[string]string{},
		rng:    rand.New(rand.NewPCG(uint64(cfg.FaultSeed), 0x5eed)),
		abort:  make(chan struct{}),
	}
	s.faults = cfg.Fault429+cfg.Fault500+cfg.Fault503+cfg.FaultStall+cfg.FaultDrop+cfg.FaultMalformed+cfg.FaultSlowHeaders > 0
	s.eagerHeaders = cfg.TTFT > 0 || cfg.ITL > 0 || cfg.PrefillBase > 0 || cfg.PrefillPerToken > 0 ||
		cfg.MaxNumSeqs > 0 || cfg.StampLead > 0
	for _, m := range cfg.Models {
		lit, _ := json.Marshal(m)
		s.models[m] = string(lit)
	}
	s.bufs.New = func() any { b := make([]byte, 0, 16<<10); return &b }
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	s.mux.HandleFunc("GET /v1/models", s.listModels)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.eng = newEngine(&s.cfg, s.m)
	return s, nil
}

// Handler returns the HTTP handler (for httptest or an http.Server of the caller's own).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.active.Add(1)
		defer s.active.Done()
		s.mux.ServeHTTP(w, r)
	})
}

// Close ends every in-flight request and stops the engine.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.abortOnce.Do(func() { close(s.abort) })
		s.active.Wait()
		s.eng.close()
	})
}

// apiError writes an OpenAI-style error body.
func apiError(w http.ResponseWriter, code int, typ, msg string) {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	b, _ := json.Marshal(struct {
		Error body `json:"error"`
	}{body{Message: msg, Type: typ, Code: code}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func badRequest(w http.ResponseWriter, format string, a ...any) {
	apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(format, a...))
}

// request is the part of an OpenAI completions or chat request that the simulator reads.
type request struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []message       `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N         *int `json:"n"`
	IgnoreEOS bool `json:"ignore_eos"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// unsafeString views b as a string; b must not change while the string is in use (the decoded
// request's own bytes, never modified, only hashed inside the handler).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// readBody reads the request body into buf (bounded by maxBody).
func readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > maxBody {
		return buf, fmt.Errorf("body of %d bytes is over the %d byte limit", r.ContentLength, maxBody)
	}
	if r.ContentLength > 0 && int(r.ContentLength) > cap(buf) {
		buf = make([]byte, 0, r.ContentLength)
	}
	rd := http.MaxBytesReader(w, r.Body, maxBody)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// promptTokens counts and hashes a completions prompt: a string, [string] or token ids.
func promptTokens(raw json.RawMessage, bh *blockHasher) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return errors.New("prompt: required")
	}
	if str, ok := plainString(raw); ok {
		bh.text(str)
		return nil
	}
	var str string
	if err := gojson.Unmarshal(raw, &str); err == nil {
		bh.text(str)
		return nil
	}
	var strs []string
	if err := gojson.Unmarshal(raw, &strs); err == nil {
		if len(strs) != 1 {
			return fmt.Errorf("prompt: a list of %d prompts; only one prompt per request is supported", len(strs))
		}
		bh.text(strs[0])
		return nil
	}
	var ids []int64
	if err := gojson.Unmarshal(raw, &ids); err == nil {
		for _, id := range ids {
			bh.id(id)
		}
		return nil
	}
	return errors.New("prompt: want a string, a list of one string or a list of token ids")
}

// plainString returns the contents of a JSON string literal without escapes, without
// decoding or allocating (the common case for prompts).
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	return unsafeString(in), true
}

// chatTokens counts and hashes the words of all message contents.
func chatTokens(msgs []message, bh *blockHasher) error {
	if len(msgs) == 0 {
		return errors.New("messages: required")
	}
	for i, m := range msgs {
		raw := bytes.TrimSpace(m.Content)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		if str, ok := plainString(raw); ok {
			bh.text(str)
			continue
		}
		var str string
		if err := gojson.Unmarshal(raw, &str); err == nil {
			bh.text(str)
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := gojson.Unmarshal(raw, &parts); err != nil {
			return fmt.Errorf("messages[%d].content: want a string or a list of parts", i)
		}
		for _, p := range parts {
			bh.text(p.Text)
		}
	}
	return nil
}

// pickFault returns the fault forced by the header, else one drawn from the rates.
func (s *Server) pickFault(header string) (string, error) {
	switch header {
	case "":
	// the constants, not header: the fast server's header bytes are reused by the next request
	case Fault429:
		return Fault429, nil
	case Fault500:
		return Fault500, nil
	case Fault503:
		return Fault503, nil
	case FaultStall:
		return FaultStall, nil
	case FaultDrop:
		return FaultDrop, nil
	case FaultMalformed:
		return FaultMalformed, nil
	case FaultSlowHeaders:
		return FaultSlowHeaders, nil
	default:
		return "", fmt.Errorf("%s: unknown fault %q (want 429, 500, 503, stall, drop, malformed or slow-headers)", FaultHeader, header)
	}
	if !s.faults {
		return "", nil
	}
	s.faultMu.Lock()
	u := s.rng.Float64()
	s.faultMu.Unlock()
	c := &s.cfg
	for _, f := range []struct {
		rate float64
		name string
	}{{c.Fault429, Fault429}, {c.Fault500, Fault500}, {c.Fault503, Fault503}, {c.FaultStall, FaultStall},
		{c.FaultDrop, FaultDrop}, {c.FaultMalformed, FaultMalformed}, {c.FaultSlowHeaders, FaultSlowHeaders}} {
		if u < f.rate {
			return f.name, nil
		}
		u -= f.rate
	}
	return "", nil
}

// sleep waits d unless the request or the server ends first; it reports whether d passed.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.abort:
	}
	return false
}

// job is a decoded, validated generation request.
type job struct {
	chat, stream, usage bool
	model               string // the model name as a JSON string literal
	bh                  blockHasher
	maxTokens           int
	fault               string
	read                int64 // engine clock when the request was read, before decoding: its arrival
}

// generate is the net/http handler of both generation endpoints (Handler, and the fast
// server's fallback for unusual requests).
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	bp := s.bufs.Get().(*[]byte)
	body, err := readBody(w, r, (*bp)[:0])
	*bp = body[:0]
	var j job
	ok := s.parseJob(w, body, err, r.Header.Get(FaultHeader), chat, &j)
	s.bufs.Put(bp) // goccy/go-json decodes from its own copy of body
	if !ok {
		return
	}
	fl, _ := w.(http.Flusher)
	p := &httpPeer{s: s, ctx: r.Context(), w: w, fl: fl}
	defer p.release()
	s.runJob(w, p, &j, new(render))
}

// parseJob decodes and validates a request body (readErr: the error reading it); on failure it
// writes the error response to w and returns false.
func (s *Server) parseJob(w http.ResponseWriter, body []byte, readErr error, faultHeader string, chat bool, j *job) bool {
	// The model's clock starts when the request is in, not after this server has decoded and
	// tokenized it: a fixed TTFT is then TTFT from the request's arrival.
	j.read = s.eng.now()
	if readErr != nil {
		badRequest(w, "read request body: %v", readErr)
		return false
	}
	var req request
	err := gojson.Unmarshal(body, &req) // goccy/go-json: a third of encoding/json's CPU per request
	if err != nil {
		if e := json.Unmarshal(body, &req); e != nil {
			err = e // encoding/json's messages name the problem more plainly
		}
		badRequest(w, "invalid JSON body: %v", err)
		return false
	}
	if req.Model == "" {
		badRequest(w, "model: required")
		return false
	}
	model, ok := s.models[req.Model]
	if !ok {
		apiError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return false
	}
	j.bh = newBlockHasher(s.cfg.BlockSize)
	if chat {
		err = chatTokens(req.Messages, &j.bh)
	} else {
		err = promptTokens(req.Prompt, &j.bh)
	}
	if err != nil {
		badRequest(w, "%v", err)
		return false
	}
	if req.N != nil && *req.N != 1 {
		badRequest(w, "n: %d is not supported (only n=1)", *req.N)
		return false
	}
	maxTokens := s.cfg.DefaultMaxTokens
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	} else if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if maxTokens < 1 {
		badRequest(w, "max_tokens: %d must be at least 1", maxTokens)
		return false
	}
	if j.bh.tokens+maxTokens > s.cfg.MaxModelLen {
		badRequest(w, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.MaxModelLen, j.bh.tokens+maxTokens, j.bh.tokens, maxTokens)
		return false
	}
	fault, err := s.pickFault(faultHeader)
	if err != nil {
		badRequest(w, "%v", err)
		return false
	}
	j.chat, j.stream, j.model, j.maxTokens, j.fault = chat, req.Stream, model, maxTokens, fault
	j.usage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	return true
}

// peer is the connection side of one generation request: net/http's (httpPeer) or the fast
// server's (*conn). The streaming path talks to it directly, so the fast server writes SSE
// without going through an http.ResponseWriter.
type peer interface {
	// gone is closed when the client or the request went away (nil: never noticed here).
	gone() <-chan struct{}
	// wait blocks until q.wake fires (true), or the client or the server ends (false).
	wait(q *seq) bool
	// sleep waits d unless the client or the server ends first; it reports whether d passed.
	sleep(d time.Duration) bool
	// startStream sends the status line and the SSE headers, at once when flush is set, else
	// with the first write.
	startStream(flush bool)
	// streamBuf returns the buffer to append the events of the next write to (the peer may
	// keep room in front of it for framing).
	streamBuf() []byte
	// streamWrite sends b (from streamBuf plus the appended events) to the client as one
	// write; last ends the response.
	streamWrite(b []byte, last bool) error
	// sentBuf returns a zeroed slice of n send stamps.
	sentBuf(n int) []int64
}

// runJob applies the pre-stream faults, submits the sequence to the engine and writes the
// response: SSE through p, JSON through w.
func (s *Server) runJob(w http.ResponseWriter, p peer, j *job, rd *render) {
	if s.cfg.CPUPerRequest > 0 {
		// the request's own CPU work; the engine sees the request once it is done
		if !spinCPU(s.cfg.CPUPerRequest, s.abort) {
			return
		}
		j.read = s.eng.now()
	}
	switch j.fault {
	case Fault429:
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "RateLimitError", "injected fault: too many requests")
		return
	case Fault500:
		apiError(w, http.StatusInternalServerError, "InternalServerError", "injected fault: internal server error")
		return
	case Fault503:
		apiError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "injected fault: service unavailable")
		return
	case FaultSlowHeaders:
		if !p.sleep(s.cfg.SlowHeaders) {
			return
		}
	}

	k := s.cfg.TokensPerChunk
	q := &seq{
		prompt:    j.bh.tokens,
		blocks:    j.bh.blocks,
		maxTokens: j.maxTokens,
		nChunks:   chunkCount(j.maxTokens, k),
		k:         k,
		wake:      make(chan struct{}, 1),
	}
	defer q.gone.Store(true)
	q.arrive = j.read
	select {
	case s.eng.arrive <- q:
	case <-p.gone():
		return
	case <-s.abort:
		return
	}
	rd.reset(j.chat, j.model, s.ids.Add(1), j.bh.tokens, j.maxTokens)
	if j.stream {
		s.stream(p, q, rd, j.fault, j.usage)
	} else {
		s.complete(w, p, q, rd, j.fault)
	}
}

// httpPeer is the peer of a request served by net/http.
type httpPeer struct {
	s   *Server
	ctx context.Context
	w   http.ResponseWriter
	fl  http.Flusher
	bp  *[]byte
}

func (p *httpPeer) gone() <-chan struct{} { return p.ctx.Done() }

func (p *httpPeer) wait(q *seq) bool {
	select {
	case <-q.wake:
		return true
	case <-p.ctx.Done():
	case <-p.s.abort:
	}
	return false
}

func (p *httpPeer) sleep(d time.Duration) bool { return p.s.sleep(p.ctx, d) }

func (p *httpPeer) startStream(flush bool) {
	h := p.w.Header()
	h["Content-Type"] = sseContentType
	h["Cache-Control"] = noCache
	// chunked even when the whole stream fits the first write (zero latency), as from vLLM
	h["Transfer-Encoding"] = chunked
	p.w.WriteHeader(http.StatusOK)
	if flush && p.fl != nil {
		p.fl.Flush()
	}
}

func (p *httpPeer) streamBuf() []byte {
	if p.bp == nil {
		p.bp = p.s.bufs.Get().(*[]byte)
	}
	return (*p.bp)[:0]
}

func (p *httpPeer) streamWrite(b []byte, last bool) error {
	*p.bp = b[:0]
	if _, err := p.w.Write(b); err != nil {
		return err
	}
	if p.fl != nil && !last {
		p.fl.Flush()
	} // the last write is flushed by net/http with the terminating chunk: one system call
	return nil
}

func (p *httpPeer) sentBuf(n int) []int64 { return make([]int64, n) }

func (p *httpPeer) release() {
	if p.bp != nil {
		p.s.bufs.Put(p.bp)
	}
}

// stream writes the SSE response. By default every event goes out in its own write, back to
// back, as from vLLM (uvicorn writes each event the application yields): the chat role chunk,
// each content chunk, the final chunk, the usage chunk, the x-sim comment and data: [DONE].
// With CoalesceTail each write carries every chunk the engine has published since the previous
// one, and the write of the last content chunk the whole tail. A content chunk's send stamp is
// time.Now() taken just before the write that carries it (then StampLead, then the write).
func (s *Server) stream(p peer, q *seq, rd *render, fault string, usage bool) {
	p.startStream(s.eagerHeaders) // eager: the client sees the headers at once, as from vLLM
	n := q.nChunks
	sent := p.sentBuf(n)
	mid := -1 // chunk index at which a mid-stream fault strikes (n = before the final chunk)
	split := false
	switch fault {
	case FaultStall, FaultDrop:
		mid, split = max(1, n/2), true
	case FaultMalformed:
		mid = max(1, n/2)
	}
	w := streamWriter{s: s, p: p, q: q, rd: rd, sent: sent, mid: mid, malformed: fault == FaultMalformed, usage: usage}
	written := 0
	for written <= n {
		avail := int(q.ready.Load())
		if avail == n {
			avail = n + 1 // the tail (finish, usage, x-sim, [DONE]) is ready too
		}
		if split && written == mid {
			split = false
			if fault == FaultDrop {
				panic(http.ErrAbortHandler) // the connection closes mid-body
			}
			if !p.sleep(s.cfg.Stall) {
				return
			}
			continue
		}
		if avail == written {
			if !p.wait(q) {
				return
			}
			continue
		}
		end := avail
		if split && written < mid && end > mid {
			end = mid
		}
		var ok bool
		if s.cfg.CoalesceTail {
			ok = w.batch(written, end)
		} else {
			ok = w.events(written, end)
		}
		if !ok {
			return
		}
		written = end
	}
}

// streamWriter writes the events of one stream: chunks [from, end) of q, and the tail when end
// is past the last chunk.
type streamWriter struct {
	s         *Server
	p         peer
	q         *seq
	rd        *render
	sent      []int64
	mid       int  // chunk index of the malformed fault (-1: none)
	malformed bool // the malformed fault strikes at mid
	usage     bool
}

// batch writes chunks [from, end), and the tail when end is past the last chunk, in one write
// (CoalesceTail).
func (w *streamWriter) batch(from, end int) bool {
	n, rd := w.q.nChunks, w.rd
	if w.s.cfg.CPUPerToken > 0 {
		tokens := 0
		for j := from; j < end && j < n; j++ {
			_, cnt := chunkSpan(j, w.q.maxTokens, w.q.k)
			tokens += cnt
		}
		if !w.s.spinTokens(tokens) {
			return false
		}
	}
	b := w.p.streamBuf()
	for j := from; j < end && j < n; j++ {
		if j == w.mid && w.malformed {
			b = rd.appendBogus(b)
		}
		if j == 0 && rd.chat {
			b = rd.appendRole(b)
		}
		start, cnt := chunkSpan(j, w.q.maxTokens, w.q.k)
		b = rd.appendChunk(b, start, cnt, !(j == w.mid && w.malformed))
	}
	stamp := time.Now().UnixNano()
	for j := from; j < end && j < n; j++ {
		w.sent[j] = stamp
	}
	if end > n {
		if w.mid == n && w.malformed {
			b = rd.appendBogus(b)
		}
		b = rd.appendTail(b, w.q, w.sent, w.usage)
	}
	if lead := w.s.cfg.StampLead; lead > 0 && !w.p.sleep(lead) {
		return false
	}
	return w.p.streamWrite(b, end > n) == nil
}

// events writes chunks [from, end), and the tail when end is past the last chunk, one event per
// write.
func (w *streamWriter) events(from, end int) bool {
	n, rd, p := w.q.nChunks, w.rd, w.p
	for j := from; j < end && j < n; j++ {
		if j == w.mid && w.malformed {
			if p.streamWrite(rd.appendBogus(p.streamBuf()), false) != nil {
				return false
			}
		}
		if j == 0 && rd.chat {
			if p.streamWrite(rd.appendRole(p.streamBuf()), false) != nil {
				return false
			}
		}
		start, cnt := chunkSpan(j, w.q.maxTokens, w.q.k)
		if !w.s.spinTokens(cnt) {
			return false
		}
		b := rd.appendChunk(p.streamBuf(), start, cnt, !(j == w.mid && w.malformed))
		w.sent[j] = time.Now().UnixNano()
		if lead := w.s.cfg.StampLead; lead > 0 && !p.sleep(lead) {
			return false
		}
		if p.streamWrite(b, false) != nil {
			return false
		}
	}
	if end <= n {
		return true
	}
	if w.mid == n && w.malformed && p.streamWrite(rd.appendBogus(p.streamBuf()), false) != nil {
		return false
	}
	if p.streamWrite(rd.appendFinish(p.streamBuf()), false) != nil {
		return false
	}
	if w.usage && p.streamWrite(rd.appendUsageChunk(p.streamBuf()), false) != nil {
		return false
	}
	if p.streamWrite(appendXsim(p.streamBuf(), w.q, w.sent), false) != nil {
		return false
	}
	return p.streamWrite(appendDone(p.streamBuf()), true) == nil
}

// complete writes a non-streaming response once the engine has finished the sequence.
func (s *Server) complete(w http.ResponseWriter, p peer, q *seq, rd *render, fault string) {
	for int(q.ready.Load()) < q.nChunks {
		if !p.wait(q) {
			return
		}
	}
	if !s.spinTokens(q.maxTokens) {
		return
	}
	b := rd.appendFull(nil, q.maxTokens)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-sim-queue-ns", strconv.FormatInt(q.admit-q.arrive, 10))
	h.Set("x-sim-prefill-ns", strconv.FormatInt(q.first-q.admit, 10))
	h.Set("x-sim-decode-ns", strconv.FormatInt(q.last-q.first, 10))
	switch fault {
	case FaultStall:
		if !p.sleep(s.cfg.Stall) {
			return
		}
	case FaultMalformed:
		b = b[:len(b)/2]
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	stamp := time.Now().UnixNano()
	h.Set("x-sim-sent-ns", strconv.FormatInt(stamp, 10))
	if s.cfg.StampLead > 0 && !p.sleep(s.cfg.StampLead) {
		return
	}
	w.WriteHeader(http.StatusOK)
	if fault == FaultDrop {
		w.Write(b[:len(b)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.Write(b)
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen int     `json:"max_model_len"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	now := time.Now().Unix()
	for _, m := range s.cfg.Models {
		out.Data = append(out.Data, model{ID: m, Object: "model", Created: now, OwnedBy: "wirebench", Root: m, MaxModelLen: s.cfg.MaxModelLen})
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	*bp = s.m.appendText((*bp)[:0])
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(*bp)
}
