package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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

// served is a model name the simulator answers to.
type served struct {
	lit    string // the name as a JSON string literal
	parent string // the base model of a LoRA adapter; "" for a base model
	offset int64  // the adapter's extra prefill (Adapter.Offset), ns
}

// Server is the simulator: an http.Handler over one engine.
type Server struct {
	cfg    Config
	log    *slog.Logger
	m      *metrics
	eng    *engine
	mux    *http.ServeMux
	models map[string]served // by served name
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
// DefaultMaxTokens, MaxModelLen, ReasoningField and EmbeddingDim take their defaults; every
// other zero means zero (no latency, unlimited sequences, no faults, no reasoning, images
// free). Call Close when done.
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
	if cfg.ReasoningField == "" {
		cfg.ReasoningField = def.ReasoningField
	}
	if cfg.EmbeddingDim == 0 {
		cfg.EmbeddingDim = def.EmbeddingDim
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
		models: map[string]served{},
		rng:    rand.New(rand.NewPCG(uint64(cfg.FaultSeed), 0x5eed)),
		abort:  make(chan struct{}),
	}
	s.m.kvCapacity = int64(cfg.PrefixCacheBlocks)
	s.faults = cfg.Fault429+cfg.Fault500+cfg.Fault503+cfg.FaultStall+cfg.FaultDrop+cfg.FaultMalformed+cfg.FaultSlowHeaders > 0
	s.eagerHeaders = cfg.TTFT > 0 || cfg.ITL > 0 || cfg.PrefillBase > 0 || cfg.PrefillPerToken > 0 ||
		cfg.MaxNumSeqs > 0 || cfg.StampLead > 0
	for _, m := range cfg.Models {
		lit, _ := json.Marshal(m)
		s.models[m] = served{lit: string(lit)}
	}
	for _, a := range cfg.LoRA {
		lit, _ := json.Marshal(a.Name)
		s.models[a.Name] = served{lit: string(lit), parent: cfg.Models[0], offset: int64(a.Offset)}
	}
	s.bufs.New = func() any { b := make([]byte, 0, 16<<10); return &b }
	s.mux = http.NewServeMux()
	for a, path := range apiPaths {
		s.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, api(a)) })
	}
	s.mux.HandleFunc("GET /v1/models", s.listModels)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.eng = newEngine(&s.cfg, s.m)
	return s, nil
}

// ConnState counts the connections an http.Server serving Handler accepts
// (wirebench_sim:connections_accepted_total), as Serve does: set it as the server's ConnState.
func (s *Server) ConnState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.m.accepted.Add(1)
	}
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

// generate is the net/http handler of the generation endpoints (Handler, and the fast
// server's fallback for unusual requests).
func (s *Server) generate(w http.ResponseWriter, r *http.Request, a api) {
	bp := s.bufs.Get().(*[]byte)
	body, err := readBody(w, r, (*bp)[:0])
	*bp = body[:0]
	var j job
	ok := s.parseJob(w, body, err, r.Header.Get(FaultHeader), a, &j)
	s.bufs.Put(bp) // goccy/go-json decodes from its own copy of body
	if !ok {
		return
	}
	fl, _ := w.(http.Flusher)
	p := &httpPeer{s: s, ctx: r.Context(), w: w, fl: fl}
	defer p.release()
	s.runJob(w, p, &j, new(render))
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
	// stampBufs returns two zeroed slices of n stamps each: for a stream's deltas, the times
	// taken just before and just after the write that carries each.
	stampBufs(n int) (sent, end []int64)
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
		writeError(w, j.api, http.StatusTooManyRequests, "injected fault: too many requests")
		return
	case Fault500:
		writeError(w, j.api, http.StatusInternalServerError, "injected fault: internal server error")
		return
	case Fault503:
		writeError(w, j.api, http.StatusServiceUnavailable, "injected fault: service unavailable")
		return
	case FaultSlowHeaders:
		if !p.sleep(s.cfg.SlowHeaders) {
			return
		}
	}

	k := s.cfg.TokensPerChunk
	q := &seq{
		prompt:      j.bh.tokens,
		blocks:      j.bh.blocks,
		chains:      j.bh.chains,
		maxTokens:   j.maxTokens,
		nChunks:     chunkCount(j.maxTokens, k),
		k:           k,
		prefillOnly: j.api == apiEmbeddings || j.api.ranks(),
		offset:      j.offset,
		model:       j.model,
		wake:        make(chan struct{}, 1),
	}
	if q.prefillOnly {
		q.nChunks = 1
		if j.api.ranks() && s.eng.fixed { // one document's score every ITL after the first
			q.nChunks, q.k = len(j.rank.seeds), 1
		}
	}
	rd.reset(j, s.ids.Add(1), s.cfg.ReasoningField)
	q.notifyAdmit = j.stream && len(rd.prelude()) > 0
	defer q.gone.Store(true)
	q.arrive, q.in = j.read, j.in
	select {
	case s.eng.arrive <- q:
	case <-p.gone():
		return
	case <-s.abort:
		return
	}
	if j.stream {
		if !s.stream(p, q, rd, j.fault, j.usage) && j.fault == "" && !s.stopping() {
			// The client closed the connection mid-stream (a cancelled request): the deferred
			// gone frees its slot at the engine's next step.
			s.eng.m.cancelled.Add(1)
		}
	} else {
		s.complete(w, p, q, rd, j)
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

func (p *httpPeer) stampBufs(n int) (sent, end []int64) {
	b := make([]int64, 2*n)
	return b[:n:n], b[n:]
}

func (p *httpPeer) release() {
	if p.bp != nil {
		p.s.bufs.Put(p.bp)
	}
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
	for _, a := range s.cfg.LoRA {
		out.Data = append(out.Data, model{ID: a.Name, Object: "model", Created: now, OwnedBy: "wirebench", Root: a.Name, Parent: &s.cfg.Models[0], MaxModelLen: s.cfg.MaxModelLen})
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

// stopping reports whether the server is ending every handler (Close or a hard shutdown).
func (s *Server) stopping() bool {
	select {
	case <-s.abort:
		return true
	default:
		return false
	}
}
