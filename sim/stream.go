package sim

import (
	"net/http"
	"strconv"
	"time"
)

// stream writes the SSE response. By default every event goes out in its own write, back to
// back, as from vLLM (uvicorn writes each event the application yields): the API's prelude
// (once the engine admitted the sequence), then per chunk the events that open a segment and
// the deltas carrying its tokens, then the closing events, the finish and usage events, the
// x-sim comment and the terminal event. With CoalesceTail each write carries every event
// ready since the previous one, and the write of the last chunk the whole tail. Each delta has
// two stamps: time.Now() taken just before the write that carries it (then StampLead, then the
// write) and just after that write returned. On loopback the client's kernel stamps the segment
// inside that write (loopback xmit → netif_rx, in the writer's context), so the true arrival
// lies between the two however long the simulator was held up in between (see
// docs/design/simulator.md, "Ground truth"). It reports whether the whole stream was written
// (false: the client left, a fault cut it, or the server is stopping).
func (s *Server) stream(p peer, q *seq, rd *render, fault string, usage bool) (complete bool) {
	p.startStream(s.eagerHeaders) // eager: the client sees the headers at once, as from vLLM
	n := q.nChunks
	mid := -1 // chunk index at which a mid-stream fault strikes (n = before the final chunk)
	split := false
	switch fault {
	case FaultStall, FaultDrop:
		mid, split = max(1, n/2), true
	case FaultMalformed:
		mid = max(1, n/2)
	}
	w := streamWriter{s: s, p: p, q: q, rd: rd, mid: mid, malformed: fault == FaultMalformed, usage: usage,
		coalesce: s.cfg.CoalesceTail, preluded: len(rd.prelude()) == 0}
	w.sent, w.sentEnd = p.stampBufs(rd.tokenEvents(n, q.k))
	written := 0
	for written <= n {
		avail := int(q.ready.Load())
		if avail == n {
			avail = n + 1 // the tail is ready too
		}
		if split && written == mid {
			split = false
			if fault == FaultDrop {
				panic(http.ErrAbortHandler) // the connection closes mid-body
			}
			if !p.sleep(s.cfg.Stall) {
				return false
			}
			continue
		}
		if avail == written && (w.preluded || !q.admitted.Load()) {
			if !p.wait(q) {
				return false
			}
			continue
		}
		end := avail
		if split && written < mid && end > mid {
			end = mid
		}
		if !w.write(written, end) {
			return false
		}
		written = end
	}
	s.eng.m.served.e2e.observe(s.eng.now() - q.in)
	return true
}

// streamWriter writes the events of one stream.
type streamWriter struct {
	s         *Server
	p         peer
	q         *seq
	rd        *render
	b         []byte  // the events of the current write
	sent      []int64 // per delta: time.Now() just before the write that carries it
	sentEnd   []int64 // per delta: time.Now() just after that write returned
	nsent     int     // deltas stamped (sent)
	nend      int     // deltas whose write has returned (sentEnd)
	mid       int     // chunk index of the malformed fault (-1: none)
	malformed bool    // the malformed fault strikes at mid
	usage     bool
	coalesce  bool // CoalesceTail: one write per call of write
	preluded  bool // the prelude is written (or there is none)
}

// write writes the prelude if not yet written, chunks [from, end) of q, and the tail when end
// is past the last chunk.
func (w *streamWriter) write(from, end int) bool {
	n, rd, q := w.q.nChunks, w.rd, w.q
	if w.coalesce && !w.s.spinTokens(chunkTokens(q, from, end)) {
		return false
	}
	w.b = w.p.streamBuf()
	if !w.preluded {
		w.preluded = true
		rd.cached = q.cachedTokens // admitted (or a chunk is out): the engine has set it
		if !w.events(rd.prelude(), 0) {
			return false
		}
	}
	first := w.nsent
	for j := from; j < end && j < n; j++ {
		if !w.chunk(j) {
			return false
		}
	}
	if w.coalesce {
		stamp := time.Now().UnixNano()
		for i := first; i < w.nsent; i++ {
			w.sent[i] = stamp
		}
	}
	if end > n && !w.tail() {
		return false
	}
	if !w.coalesce {
		return true
	}
	if lead := w.s.cfg.StampLead; lead > 0 && w.nsent > first && !w.p.sleep(lead) {
		return false
	}
	if w.p.streamWrite(w.b, end > n) != nil {
		return false
	}
	if end <= n { // the last write's deltas left with the x-sim comment, without these stamps
		w.stampEnd()
	}
	return true
}

// stampEnd stamps the deltas stamped since the last call: their write has just returned.
func (w *streamWriter) stampEnd() {
	if w.nend == w.nsent {
		return
	}
	stamp := time.Now().UnixNano()
	for ; w.nend < w.nsent; w.nend++ {
		w.sentEnd[w.nend] = stamp
	}
}

// chunk appends chunk j: its tokens as one delta, or as two when it straddles the end of the
// reasoning, each delta preceded by the events opening its segment when it is the segment's
// first.
func (w *streamWriter) chunk(j int) bool {
	rd, q := w.rd, w.q
	bad := j == w.mid && w.malformed
	if bad {
		w.b = rd.appendBogus(w.b)
		if !w.flush(false) {
			return false
		}
	}
	start, cnt := chunkSpan(j, q.maxTokens, q.k)
	for cnt > 0 {
		g := rd.segOf(start)
		segStart, segEnd := rd.span(g)
		c := min(cnt, segEnd-start)
		if start == segStart {
			if g != segReasoning && rd.reasoning > 0 && !w.events(rd.closes(segReasoning), segReasoning) {
				return false
			}
			if !w.events(rd.opens(g), g) {
				return false
			}
		}
		if !w.coalesce && !w.s.spinTokens(c) {
			return false
		}
		w.b = rd.appendDelta(w.b, g, start, c, !bad)
		bad = false
		if w.nsent == 0 {
			w.s.eng.m.served.ttft.observe(w.s.eng.now() - q.in)
		}
		if !w.coalesce {
			w.sent[w.nsent] = time.Now().UnixNano()
			if lead := w.s.cfg.StampLead; lead > 0 && !w.p.sleep(lead) {
				return false
			}
		}
		w.nsent++
		if !w.flush(false) {
			return false
		}
		if !w.coalesce {
			w.stampEnd()
		}
		start, cnt = start+c, cnt-c
	}
	return true
}

// tail appends what follows the last chunk: the last segment's closing events, the finish and
// usage events, the x-sim comment and the terminal event.
func (w *streamWriter) tail() bool {
	rd := w.rd
	if w.mid == w.q.nChunks && w.malformed {
		w.b = rd.appendBogus(w.b)
		if !w.flush(false) {
			return false
		}
	}
	g := rd.answer()
	if !w.events(rd.closes(g), g) {
		return false
	}
	end := rd.end(w.usage)
	for i, k := range end {
		if k == evXsim {
			w.b = appendXsim(w.b, w.q, w.sent, w.sentEnd[:w.nend])
		} else {
			w.b = rd.appendEvent(w.b, k, g)
		}
		if !w.flush(i == len(end)-1) {
			return false
		}
	}
	return true
}

// events appends events ks of segment g.
func (w *streamWriter) events(ks []evKind, g seg) bool {
	for _, k := range ks {
		w.b = w.rd.appendEvent(w.b, k, g)
		if !w.flush(false) {
			return false
		}
	}
	return true
}

// flush ends an event: without CoalesceTail it goes out in its own write (last: the
// response's last) and the next event starts a new buffer.
func (w *streamWriter) flush(last bool) bool {
	if w.coalesce {
		return true
	}
	if w.p.streamWrite(w.b, last) != nil {
		return false
	}
	if !last {
		w.b = w.p.streamBuf()
	}
	return true
}

// chunkTokens is the number of tokens in chunks [from, end) of q.
func chunkTokens(q *seq, from, end int) int {
	tokens := 0
	for j := from; j < end && j < q.nChunks; j++ {
		_, cnt := chunkSpan(j, q.maxTokens, q.k)
		tokens += cnt
	}
	return tokens
}

// complete writes a non-streaming response once the engine has finished the sequence.
func (s *Server) complete(w http.ResponseWriter, p peer, q *seq, rd *render, j *job) {
	for int(q.ready.Load()) < q.nChunks {
		if !p.wait(q) {
			return
		}
	}
	if !s.spinTokens(q.maxTokens) {
		return
	}
	rd.cached = q.cachedTokens
	var b []byte
	if j.api == apiEmbeddings {
		b = s.appendEmbeddings(nil, j)
	} else if j.api.ranks() {
		b = s.appendRank(nil, j)
	} else {
		b = rd.appendFull(nil)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-sim-queue-ns", strconv.FormatInt(q.admit-q.arrive, 10))
	h.Set("x-sim-prefill-ns", strconv.FormatInt(q.first-q.admit, 10))
	h.Set("x-sim-decode-ns", strconv.FormatInt(q.last-q.first, 10))
	h.Set("x-sim-model", q.model[1:len(q.model)-1]) // the literal without its quotes
	switch j.fault {
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
	if j.fault == FaultDrop {
		w.Write(b[:len(b)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.Write(b)
}
