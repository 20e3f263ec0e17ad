package sim

import (
	"sync/atomic"
	"time"
)

// seq is one request inside the engine. The handler fills the request fields, submits it, then
// waits on wake and reads ready; the engine owns the engine fields and publishes the timings
// before each ready.Store (so a reader that sees ready == nChunks sees final timings).
type seq struct {
	// request, set before submission
	arrive    int64 // monotonic ns (engine clock) when the request reached the engine
	in        int64 // engine clock when the server had read the request (before its CPU work)
	prompt    int   // prompt tokens
	blocks    []uint64
	maxTokens int
	nChunks   int
	k         int     // tokens per chunk after the first
	chains    []int32 // blocks of each input's own prefix-cache chain (embeddings); nil: one chain
	// prefillOnly: an embeddings or ranking request, whose one "chunk" (the response) is due
	// when its prefill is done (fixed mode, ranking: its last chunk, one per document); it
	// generates no tokens and adds no decode time to a step
	prefillOnly bool
	offset      int64  // extra prefill, ns: its model's (a LoRA adapter's Offset)
	model       string // its model as a JSON string literal, for the ground truth
	// notifyAdmit: wake the handler when the sequence is admitted (its stream's first events
	// go out then)
	notifyAdmit bool

	// engine-owned
	admit, first, last int64 // engine clock, ns
	emitted            int   // chunks emitted
	next               int64 // fixed mode: due time of the next chunk
	hidx               int   // fixed mode: heap index
	prefill            int64 // engine mode: prefill cost of the step it was admitted in
	cachedTokens       int

	// shared
	admitted atomic.Bool   // set (with notifyAdmit) once admitted: cachedTokens is final
	ready    atomic.Int32  // chunks emitted so far
	gone     atomic.Bool   // the handler left (client gone, fault): drop the sequence
	wake     chan struct{} // cap 1: ready or admitted changed
}

// chunkCount returns how many chunks carry n tokens: the first chunk one token, later ones k.
func chunkCount(n, k int) int {
	if n <= 0 {
		return 0
	}
	return 1 + (n-1+k-1)/k
}

// chunkSpan returns the first token index and the token count of chunk j.
func chunkSpan(j, n, k int) (start, count int) {
	if j == 0 {
		return 0, 1
	}
	start = 1 + (j-1)*k
	return start, min(k, n-start)
}

// engine is the scheduler: one goroutine steps every running sequence, with one timer.
type engine struct {
	cfg    *Config
	m      *metrics
	cache  *prefixCache
	base   time.Time
	fixed  bool
	arrive chan *seq
	stop   chan struct{}
	done   chan struct{}

	waiting []*seq // FIFO: waiting[whead:]
	whead   int
	running []*seq
	heap    seqHeap // fixed mode

	// engine mode step state
	inStep      bool
	stepEnd     int64
	stepDur     int64
	prefillOnly int // running prefill-only sequences (they do not decode)
	kvBlocks    int // KV blocks the running sequences hold (kvBlocksOf each)
}

// maxLag is how far behind the engine's logical clock may fall before it resynchronises with
// real time (a late wake-up then shifts the following steps instead of bunching them).
const maxLag = int64(time.Millisecond)

// preciseWindow: the last stretch of a wait is slept with preciseSleep, which is not
// interrupted by arrivals (they queue in the channel and are taken on the next pass).
const preciseWindow = int64(2 * time.Millisecond)

// slack coalesces wake-ups: events due within slack of now are handled in the same pass.
const slack = int64(20 * time.Microsecond)

func newEngine(cfg *Config, m *metrics) *engine {
	e := &engine{
		cfg:    cfg,
		m:      m,
		base:   time.Now(),
		fixed:  cfg.fixed(),
		arrive: make(chan *seq, 4096),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if cfg.PrefixCacheBlocks > 0 {
		e.cache = newPrefixCache(cfg.PrefixCacheBlocks)
	}
	go e.loop()
	return e
}

// now is the engine clock: monotonic nanoseconds since the engine started.
func (e *engine) now() int64 { return int64(time.Since(e.base)) }

func (e *engine) loop() {
	defer close(e.done)
	preciseThread()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		e.drain()
		now := e.now()
		var next int64
		var idle bool
		if e.fixed {
			next, idle = e.runFixed(now)
		} else {
			next, idle = e.runEngine(now)
		}
		e.m.running.Store(int64(len(e.running)))
		e.m.waiting.Store(int64(len(e.waiting) - e.whead))
		e.m.kvBlocks.Store(int64(e.kvBlocks))
		if idle {
			select {
			case s := <-e.arrive:
				e.enqueue(s)
			case <-e.stop:
				return
			}
			continue
		}
		if next <= now+slack {
			select {
			case <-e.stop:
				return
			default:
			}
			continue
		}
		if d := next - now; d <= preciseWindow {
			preciseSleep(time.Duration(d))
			continue
		}
		timer.Reset(time.Duration(next - now - preciseWindow/2))
		select {
		case <-timer.C:
		case s := <-e.arrive:
			timer.Stop()
			e.enqueue(s)
		case <-e.stop:
			timer.Stop()
			return
		}
	}
}

// drain moves every submitted sequence into the waiting queue without blocking.
func (e *engine) drain() {
	for {
		select {
		case s := <-e.arrive:
			e.enqueue(s)
		default:
			return
		}
	}
}

func (e *engine) enqueue(s *seq) {
	if e.whead > 0 && e.whead == len(e.waiting) {
		clear(e.waiting)
		e.waiting, e.whead = e.waiting[:0], 0
	}
	e.waiting = append(e.waiting, s)
}

// popWaiting returns the oldest waiting sequence that arrived by t and is still wanted.
func (e *engine) popWaiting(t int64) *seq {
	for e.whead < len(e.waiting) {
		s := e.waiting[e.whead]
		if s.gone.Load() {
			e.waiting[e.whead] = nil
			e.whead++
			continue
		}
		if s.arrive > t {
			return nil
		}
		e.waiting[e.whead] = nil
		e.whead++
		return s
	}
	return nil
}

func (e *engine) hasSlot() bool {
	return e.cfg.MaxNumSeqs == 0 || len(e.running) < e.cfg.MaxNumSeqs
}

// admitAt starts s at engine time t: prefix-cache lookup and token counters.
func (e *engine) admitAt(s *seq, t int64) {
	s.admit = t
	hit := 0
	if e.cache != nil && len(s.blocks) > 0 {
		if s.chains == nil {
			hit = e.cache.lookupInsert(s.blocks)
		} else {
			b := s.blocks
			for _, n := range s.chains {
				hit += e.cache.lookupInsert(b[:n])
				b = b[n:]
			}
		}
		hit *= e.cfg.BlockSize
		e.m.cacheQueries.Add(uint64(len(s.blocks) * e.cfg.BlockSize))
		e.m.cacheHits.Add(uint64(hit))
	}
	s.cachedTokens = min(hit, s.prompt)
	s.prefill = int64(e.cfg.PrefillBase) + int64(s.prompt-s.cachedTokens)*int64(e.cfg.PrefillPerToken) + s.offset
	e.m.promptTokens.Add(uint64(s.prompt))
	e.running = append(e.running, s)
	e.kvBlocks += e.kvBlocksOf(s)
	if s.prefillOnly {
		e.prefillOnly++
	}
	if s.notifyAdmit {
		s.admitted.Store(true)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// kvBlocksOf is the KV cache a running sequence holds, as vLLM reserves it: its prompt and
// every token it may generate, in BlockSize blocks.
func (e *engine) kvBlocksOf(s *seq) int {
	return (s.prompt + s.maxTokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize
}

// removeRunning drops running[i] (order is not kept; the step treats all alike).
func (e *engine) removeRunning(i int) {
	if e.running[i].prefillOnly {
		e.prefillOnly--
	}
	e.kvBlocks -= e.kvBlocksOf(e.running[i])
	last := len(e.running) - 1
	e.running[i] = e.running[last]
	e.running[last] = nil
	e.running = e.running[:last]
}

// emit publishes the next chunk of s at engine time t and reports whether s is finished.
func (e *engine) emit(s *seq, t int64) bool {
	j := s.emitted
	_, cnt := chunkSpan(j, s.maxTokens, s.k)
	switch {
	case j == 0:
		s.first = t
		e.m.queue.observe(s.admit - s.arrive)
		e.m.prefill.observe(t - s.admit)
		if !s.prefillOnly {
			e.m.ttft.observe(t - s.arrive)
		}
	case !s.prefillOnly: // a ranking request's later documents (fixed mode) are no tokens
		e.m.itl.observe(t - s.last)
	}
	s.last = t
	s.emitted++
	if !s.prefillOnly {
		e.m.genTokens.Add(uint64(cnt))
	}
	done := s.emitted == s.nChunks
	if done {
		if !s.prefillOnly {
			e.m.decode.observe(s.last - s.first)
		}
		e.m.e2e.observe(s.last - s.arrive)
		e.m.success.Add(1)
	}
	s.ready.Store(int32(s.emitted))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return done
}

// runEngine advances the batching model: it completes the current step when due, then starts
// the next one. It returns the next due time, or idle when nothing runs or waits.
func (e *engine) runEngine(now int64) (next int64, idle bool) {
	start := now
	if e.inStep {
		if e.stepEnd > now+slack {
			return e.stepEnd, false
		}
		t := e.stepEnd
		for i := 0; i < len(e.running); {
			s := e.running[i]
			if s.gone.Load() || e.emit(s, t) {
				e.removeRunning(i)
				continue
			}
			i++
		}
		e.inStep = false
		if e.stepDur > 0 && now-t <= maxLag {
			start = t
		}
	}
	var prefill int64
	for e.hasSlot() {
		s := e.popWaiting(start)
		if s == nil {
			break
		}
		e.admitAt(s, start)
		prefill += s.prefill
	}
	if len(e.running) == 0 {
		return 0, e.whead == len(e.waiting)
	}
	k := int64(e.cfg.TokensPerChunk)
	e.stepDur = prefill
	if decoding := len(e.running) - e.prefillOnly; decoding > 0 {
		e.stepDur += int64(float64(k*int64(e.cfg.ITL)) * (1 + e.cfg.BatchSlowdown*float64(decoding)))
	}
	e.stepEnd = start + e.stepDur
	e.inStep = true
	return e.stepEnd, false
}

// runFixed advances fixed mode: every sequence has its own timeline, one shared timer.
func (e *engine) runFixed(now int64) (next int64, idle bool) {
	// A slot free now has been free since before any still-waiting arrival (each pass admits
	// every arrival it can), so those sequences start at their arrival time.
	e.admitFixed(0, now)
	for e.heap.len() > 0 {
		s := e.heap.min()
		if s.next > now+slack {
			return s.next, false
		}
		e.heap.pop()
		t := s.next
		if s.gone.Load() || e.emit(s, t) {
			for i, r := range e.running {
				if r == s {
					e.removeRunning(i)
					break
				}
			}
			e.admitFixed(t, now)
			continue
		}
		s.next = t + int64(s.k)*int64(e.cfg.ITL)
		e.heap.push(s)
	}
	if e.whead < len(e.waiting) && e.hasSlot() {
		// only sequences from the future wait: wake when the first one is due
		return e.waiting[e.whead].arrive, false
	}
	return 0, e.heap.len() == 0 && e.whead == len(e.waiting)
}

// admitFixed admits waiting sequences into free slots; a slot freed at engine time t admits
// its next sequence at max(t, arrival), so late wake-ups do not shift the model.
func (e *engine) admitFixed(t, now int64) {
	for e.hasSlot() {
		s := e.popWaiting(now)
		if s == nil {
			return
		}
		e.admitAt(s, max(t, s.arrive))
		s.next = s.admit + int64(e.cfg.TTFT) + s.offset
		e.heap.push(s)
	}
}

func (e *engine) close() {
	close(e.stop)
	<-e.done
}

// seqHeap is a min-heap on next (fixed mode), typed to avoid interface boxing.
type seqHeap struct{ a []*seq }

func (h *seqHeap) len() int           { return len(h.a) }
func (h *seqHeap) min() *seq          { return h.a[0] }
func (h *seqHeap) less(i, j int) bool { return h.a[i].next < h.a[j].next }
func (h *seqHeap) swap(i, j int) {
	h.a[i], h.a[j] = h.a[j], h.a[i]
	h.a[i].hidx, h.a[j].hidx = i, j
}

func (h *seqHeap) push(s *seq) {
	s.hidx = len(h.a)
	h.a = append(h.a, s)
	for i := s.hidx; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *seqHeap) pop() *seq {
	s := h.a[0]
	last := len(h.a) - 1
	h.swap(0, last)
	h.a[last] = nil
	h.a = h.a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.a) && h.less(l, m) {
			m = l
		}
		if r < len(h.a) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.swap(i, m)
		i = m
	}
	return s
}
