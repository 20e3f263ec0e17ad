package aggregate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/wirebench/wirebench/schemas"
)

// partReader joins one part's requests and chunks. Its buffers are reused from part to part.
type partReader struct {
	agg    *aggregator
	states []reqState
	index  map[int64]int32
	rows   []schemas.MetricRequest
	kinds  map[string]string // interned error kinds
}

// read loads the part's requests into per-request state, records their seqs in the ledger,
// streams its chunks through that state and marks the requests whose events are not all there
// (lost); it returns the finished state (valid until the next call; nil when the requests file
// is unreadable or damaged: the whole part counts as missing).
func (pr *partReader) read(ctx context.Context, p *part) ([]reqState, error) {
	pr.states = pr.states[:0]
	clear(pr.index)
	if ok, err := pr.readRequests(ctx, p); err != nil || !ok {
		return nil, err
	}
	if err := pr.agg.seqs.record(p.requests, pr.states); err != nil {
		return nil, err
	}
	events := false
	if p.chunks != "" {
		var err error
		if events, err = pr.readChunks(ctx, p); err != nil {
			return nil, err
		}
	}
	return pr.states, pr.reconcile(p, events)
}

// reconcile marks the part's requests whose events are not all there: all that recorded any
// when the chunks file is missing or damaged (events false), else those with fewer or more
// event rows than their row says (a short chunks file); a short file is named as damaged.
func (pr *partReader) reconcile(p *part, events bool) error {
	lost := 0
	for i := range pr.states {
		s := &pr.states[i]
		s.lost = s.wantEvents != s.events
		if !events {
			s.lost = s.wantEvents > 0
		}
		if s.lost {
			lost++
		}
	}
	if lost == 0 || !events {
		return nil
	}
	return p.run.damaged(pr.agg.w, p.chunks, fmt.Sprintf("%d requests of %s lack some of their events and count as missing", lost, filepath.Base(p.requests)))
}

// readRequests reads the part's request rows into pr.states; false when the file is cut short or
// damaged (named; the part is skipped with its chunks, its requests missing).
func (pr *partReader) readRequests(ctx context.Context, p *part) (bool, error) {
	a := pr.agg
	bnd := p.run.bounds
	rows, err := forBatches(ctx, p.requests, schemas.KindOf[schemas.RawRequest](), requestCols, func(b *batch) error {
		c := takeRequestColumns(b)
		if b.err != nil {
			return b.err
		}
		for i := range b.n {
			if bad := bnd.badRequest(&c, i); bad != "" {
				return corruptRow(p.requests, b.first+int64(i), bad)
			}
			s := pr.request(&c, i, p)
			pr.index[s.seq] = int32(len(pr.states))
			pr.states = append(pr.states, s)
		}
		return nil
	})
	if errors.Is(err, schemas.ErrCorrupt) {
		pr.states = pr.states[:0]
		return false, p.run.damaged(a.w, p.requests, whyCorrupt(p.requests, err)+"; the part's requests count as missing")
	}
	if err != nil {
		return false, err
	}
	a.requestsRead += rows
	if want := p.run.listedRows(p.requests); want >= 0 && want != rows {
		if err := p.run.damaged(a.w, p.requests, fmt.Sprintf("has %d rows; the manifest says %d", rows, want)); err != nil {
			return false, err
		}
	}
	return true, nil
}

// requestColumns are the raw-requests columns of one batch, by the schema's names.
type requestColumns struct {
	seq, conv, planned, sent, done, srvQueue, srvPrefill, srvDecode       *array.Int64
	sentEnd, sendStart, connect, txEnd, connWait, headers                 *array.Int64
	stage, worker, shard, turn, inTok, status, uPrompt, uOut, port, synRe *array.Int32
	uReason, chunks, docs, endpoint                                       *array.Int32
	warmup, capped                                                        *array.Boolean
	errorKind, text, model                                                func(int) string
	times                                                                 []timeCol // checked against the run's window
}

var requestCols = []string{
	"seq", "stage", "worker", "shard", "warmup", "conversation", "turn", "input_tokens",
	"planned_ns", "sent_ns", "done_ns", "status", "error_kind", "usage_prompt_tokens",
	"usage_completion_tokens", "server_queue_ns", "server_prefill_ns", "server_decode_ns", "output_text",
	"sent_end_ns", "send_start_ns", "connect_ns", "local_port", "tx_stream_end", "conn_wait_ns", "syn_retrans", "conn_capped",
	"usage_reasoning_tokens",
	"headers_ns", "chunks", "documents", "model", "endpoint",
}

func takeRequestColumns(b *batch) requestColumns {
	c := requestColumns{
		seq: b.i64("seq"), conv: b.i64("conversation"), planned: b.i64("planned_ns"), sent: b.i64("sent_ns"), done: b.i64("done_ns"),
		srvQueue: b.i64("server_queue_ns"), srvPrefill: b.i64("server_prefill_ns"), srvDecode: b.i64("server_decode_ns"),
		sentEnd: b.i64("sent_end_ns"), sendStart: b.i64("send_start_ns"), connect: b.i64("connect_ns"),
		txEnd: b.i64("tx_stream_end"), connWait: b.i64("conn_wait_ns"), headers: b.i64("headers_ns"),
		stage: b.i32("stage"), worker: b.i32("worker"), shard: b.i32("shard"), turn: b.i32("turn"), inTok: b.i32("input_tokens"),
		status: b.i32("status"), uPrompt: b.i32("usage_prompt_tokens"), uOut: b.i32("usage_completion_tokens"),
		port: b.i32("local_port"), synRe: b.i32("syn_retrans"), uReason: b.i32("usage_reasoning_tokens"), chunks: b.i32("chunks"),
		docs: b.i32("documents"), endpoint: b.i32("endpoint"),
		warmup: b.boolean("warmup"), capped: b.boolean("conn_capped"),
		errorKind: b.str("error_kind"), text: b.str("output_text"), model: b.str("model"),
	}
	c.times = []timeCol{{"planned_ns", c.planned, false}, {"send_start_ns", c.sendStart, true}, {"sent_ns", c.sent, true},
		{"sent_end_ns", c.sentEnd, false}, {"headers_ns", c.headers, false}, {"done_ns", c.done, false}}
	return c
}

// request makes row i's state: its times as its host took them, its send moments (from the tap
// when it saw them), and what the server reported.
func (pr *partReader) request(c *requestColumns, i int, p *part) reqState {
	a := pr.agg
	s := reqState{
		seq: c.seq.Value(i), stage: c.stage.Value(i), worker: c.worker.Value(i), shard: c.shard.Value(i), endpoint: c.endpoint.Value(i),
		warmup: c.warmup.Value(i), conversation: c.conv.Value(i), turn: c.turn.Value(i),
		inputSched: c.inTok.Value(i), docs: c.docs.Value(i), plannedNs: c.planned.Value(i), sentNs: c.sent.Value(i),
		status: c.status.Value(i), textTokens: -1, lastIndex: -1, evTokensOK: true,
		sendStartNs: c.sendStart.Value(i), connectNs: -1, connCapped: c.capped.Value(i), wantEvents: c.chunks.Value(i),
	}
	if c.sent.Value(i) == 0 {
		s.unsent, s.sentNs = true, s.sendStartNs // never written: the timeline uses its start
	}
	s.sentEndNs = s.sentNs
	if v, ok := optI64(c.sentEnd, i); ok {
		s.sentEndNs = max(v, s.sentNs)
	}
	if v, ok := optI64(c.connect, i); ok {
		s.connectNs = v
	}
	s.connWaitNs, _ = optI64(c.connWait, i)
	s.synRetrans, _ = optI32(c.synRe, i)
	pr.sendMoments(&s, c, i, p.run.tap)
	if v, ok := optI64(c.done, i); ok {
		s.doneNs, s.hasDone = v, true
	}
	if v, ok := optI64(c.headers, i); ok {
		s.headersNs = v
	}
	if k := c.errorKind(i); k != "" {
		s.errorKind = pr.intern(k)
	}
	s.usagePrompt, s.hasUPrompt = optI32(c.uPrompt, i)
	s.usageReason, s.hasUReason = optI32(c.uReason, i)
	if s.usageOut, s.hasUOut = optI32(c.uOut, i); !s.hasUOut {
		if t := c.text(i); t != "" && a.tok != nil {
			s.textTokens = int32(a.tok.Count(t))
		}
	}
	if v, ok := optI64(c.srvPrefill, i); ok {
		s.srvPrefill, s.hasSrv = v, true
		s.srvQueue, _ = optI64(c.srvQueue, i)
		s.srvDecode, _ = optI64(c.srvDecode, i)
	}
	s.model = pr.intern(c.model(i))
	if !s.warmup || a.cfg.IncludeWarmup {
		s.acc = a.stageOf(s.stage, p.requests)
		a.groupsOf(&s)
	}
	return s
}

// sendMoments sets the send interval used by latencies: [sent_ns, sent_end_ns] of the client,
// or the tap's time of the segment that carried the request's last byte.
func (pr *partReader) sendMoments(s *reqState, c *requestColumns, i int, tp *tapIndex) {
	s.sNs, s.sEndNs = s.sentNs, s.sentEndNs
	if port, ok := optI32(c.port, i); ok && tp != nil && !s.unsent {
		s.conn = tp.conn(port, s.sentNs)
	}
	if end, ok := optI64(c.txEnd, i); ok && s.conn != nil {
		if ns, ok := at(s.conn.tx, end); ok {
			s.txTapNs, s.sNs, s.sEndNs = ns, ns, ns
		}
	}
}

// chunkColumns are the raw-chunks columns of one batch, by the schema's names.
type chunkColumns struct {
	seq, kernel, user, after, rxEnd      *array.Int64
	index, tokens, cBytes, rBytes, tools *array.Int32
	quality, kind                        func(int) string
	times                                []timeCol // checked against the run's window
}

var chunkCols = []string{"seq", "index", "rx_kernel_ns", "rx_user_ns", "quality", "kind", "tokens", "rx_after_ns", "rx_stream_end",
	"content_bytes", "reasoning_bytes", "tool_calls"}

func takeChunkColumns(b *batch) chunkColumns {
	c := chunkColumns{
		seq: b.i64("seq"), kernel: b.i64("rx_kernel_ns"), user: b.i64("rx_user_ns"), after: b.i64("rx_after_ns"), rxEnd: b.i64("rx_stream_end"),
		index: b.i32("index"), tokens: b.i32("tokens"), quality: b.str("quality"), kind: b.str("kind"),
		cBytes: b.i32("content_bytes"), rBytes: b.i32("reasoning_bytes"), tools: b.i32("tool_calls"),
	}
	c.times = []timeCol{{"rx_user_ns", c.user, false}, {"rx_kernel_ns", c.kernel, false}, {"rx_after_ns", c.after, false}}
	return c
}

// readChunks streams the part's events through the state of their requests; false when the
// file is cut short or damaged (named; its requests lose their events).
func (pr *partReader) readChunks(ctx context.Context, p *part) (bool, error) {
	a := pr.agg
	bnd := p.run.bounds
	unknown, disorder := 0, 0
	rows, err := forBatches(ctx, p.chunks, schemas.KindOf[schemas.RawChunk](), chunkCols, func(b *batch) error {
		c := takeChunkColumns(b)
		if b.err != nil {
			return b.err
		}
		for i := range b.n {
			if bad := bnd.badChunk(&c, i); bad != "" {
				return corruptRow(p.chunks, b.first+int64(i), bad)
			}
			j, ok := pr.index[c.seq.Value(i)]
			if !ok {
				unknown++
				continue
			}
			s := &pr.states[j]
			if x := c.index.Value(i); x <= s.lastIndex {
				disorder++
				continue
			} else {
				s.lastIndex = x
			}
			pr.event(s, &c, i)
		}
		return nil
	})
	if errors.Is(err, schemas.ErrCorrupt) {
		return false, p.run.damaged(a.w, p.chunks, whyCorrupt(p.chunks, err)+"; its requests lack their events and count as missing")
	}
	if err != nil {
		return false, err
	}
	a.chunksRead += rows
	if want := p.run.listedRows(p.chunks); want >= 0 && want != rows {
		if err := a.w.warn(p.chunks, "has %d rows; the manifest says %d", rows, want); err != nil {
			return false, err
		}
	}
	if unknown > 0 {
		if err := a.w.warn(p.chunks, "%d events belong to no request of %s (a request's events must be in the part of its row); skipped", unknown, p.requests); err != nil {
			return false, err
		}
	}
	if disorder > 0 {
		return true, a.w.warn(p.chunks, "%d events out of index order within their request; skipped", disorder)
	}
	return true, nil
}

// event adds event i, in index order, to its request's state s.
func (pr *partReader) event(s *reqState, c *chunkColumns, i int) {
	u := c.user.Value(i)
	t := u
	k, hasK := optI64(c.kernel, i)
	if hasK {
		t = k
		if lag := u - k; !s.hasKernel || lag > s.readLagMax {
			s.readLagMax = lag
		}
		s.hasKernel = true
	}
	q, stamped := c.quality(i), hasK // stamped: t is a kernel time (socket read or tap)
	if e, ok := optI64(c.rxEnd, i); ok && s.conn != nil {
		if ns, ok := at(s.conn.rx, e); ok {
			t, stamped, q = ns, true, schemas.QualityExact // the segment's own arrival
			s.tapChunks++
			if s.acc != nil {
				s.acc.tapped++
			}
		}
	}
	s.events++
	s.lastEvNs = max(s.lastEvNs, t)
	if s.hasDone {
		s.doneNs = t // E: the final event's time
	}
	s.countQuality(q)
	if acc := s.acc; acc != nil {
		acc.events++
		if q == schemas.QualityExact {
			acc.exact++
		}
		if hasK {
			acc.readLag.add(u - k)
		}
	}
	var aft int64
	if v, ok := optI64(c.after, i); ok {
		aft = v
	}
	if acc := s.acc; acc != nil && aft == 0 && !(q == schemas.QualityExact && stamped) {
		acc.unbounded++ // no socket time bounds it below: its interval starts at the send
	}
	content := c.kind(i) == schemas.ChunkContent
	// An answer event carries answer text or tool-call arguments: any token event but one that
	// carries reasoning text only.
	answer := content && (c.cBytes.Value(i) > 0 || c.tools.Value(i) > 0 || c.rBytes.Value(i) == 0)
	gap, hasGap := s.addEvent(s.eventSpan(t, q, stamped, aft, pr.agg.allow), content, answer)
	if answer && !s.answered {
		s.answerNs, s.answered = t, true
	}
	if content {
		tok, hasTok := optI32(c.tokens, i)
		s.addContent(t, tok, hasTok, gap, hasGap)
	}
}

// countQuality counts one event of timestamp quality q (with a tap time, exact).
func (s *reqState) countQuality(q string) {
	switch q {
	case schemas.QualityExact:
		s.quality[qExact]++
	case schemas.QualityUpperBound:
		s.quality[qUpper]++
	case schemas.QualityUser:
		s.quality[qUser]++
	case schemas.QualityApprox:
		s.quality[qApprox]++
	}
}

// addContent credits a content event at t carrying tok tokens (1 when not reported) and its
// gap from the previous content event to the stage's ITL distributions.
func (s *reqState) addContent(t int64, tok int32, hasTok bool, gap span, hasGap bool) {
	if hasTok && tok > 0 {
		s.evTokens += int64(tok)
	} else {
		s.evTokensOK = false
		tok = 1
	}
	acc := s.acc
	if s.content == 0 {
		s.firstNs = t
	} else {
		g := t - s.lastNs
		s.gaps++
		s.gapSum += g
		s.gapMax = max(s.gapMax, g)
		if acc != nil && s.ok() && hasGap {
			w := int64(tok)
			acc.itl.addB(g, gap.lo, gap.hi, 1)
			s.itlGaps = append(s.itlGaps, g, gap.lo, gap.hi)
			acc.itlW.addB(g/w, gap.lo/w, gap.hi/w, w)
			for _, ga := range s.groups {
				if ga != nil {
					ga.itl.addB(g, gap.lo, gap.hi, 1)
				}
			}
		}
	}
	s.lastNs = t
	s.content++
	s.credited += int64(tok)
	if acc != nil && s.ok() {
		acc.bucket(t).outTok += int64(tok)
	}
}

func (pr *partReader) intern(k string) string {
	if v, ok := pr.kinds[k]; ok {
		return v
	}
	v := strings.Clone(k)
	pr.kinds[v] = v
	return v
}
