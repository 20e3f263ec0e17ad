package aggregate

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/wirebench/wirebench/schemas"
)

var requestCols = []string{
	"seq", "stage", "worker", "shard", "warmup", "conversation", "turn", "input_tokens",
	"planned_ns", "sent_ns", "done_ns", "status", "error_kind", "usage_prompt_tokens",
	"usage_completion_tokens", "server_queue_ns", "server_prefill_ns", "server_decode_ns", "output_text",
	"sent_end_ns", "send_start_ns", "connect_ns", "local_port", "tx_stream_end", "conn_wait_ns", "syn_retrans", "conn_capped",
}

var chunkCols = []string{"seq", "index", "rx_kernel_ns", "rx_user_ns", "quality", "kind", "tokens", "rx_after_ns", "rx_stream_end"}

// partReader joins one part's requests and chunks. Its buffers are reused from part to part.
type partReader struct {
	agg    *aggregator
	states []reqState
	index  map[int64]int32
	rows   []schemas.MetricRequest
	kinds  map[string]string // interned error kinds
}

// read loads the part's requests into per-request state, streams its chunks through that state
// and returns the finished state (valid until the next call).
func (pr *partReader) read(ctx context.Context, p *part) ([]reqState, error) {
	a := pr.agg
	pr.states = pr.states[:0]
	clear(pr.index)
	off := p.run.offsetNs
	dups := 0
	if err := checkOpen(p.requests, schemas.KindOf[schemas.RawRequest]()); err != nil {
		if errors.Is(err, schemas.ErrCorrupt) {
			if werr := a.w.warn(p.requests, "truncated or not Parquet; part skipped with its chunks"); werr != nil {
				return nil, werr
			}
			return nil, nil
		}
		return nil, err
	}
	rows, err := forBatches(ctx, p.requests, schemas.KindOf[schemas.RawRequest](), requestCols, func(n int, cols []arrow.Array) error {
		var e error
		get64 := func(i int) (c interface {
			Value(int) int64
			IsNull(int) bool
		}) {
			if e == nil {
				c, e = i64(p.requests, requestCols[i], cols[i])
			}
			return c
		}
		get32 := func(i int) (c interface {
			Value(int) int32
			IsNull(int) bool
		}) {
			if e == nil {
				c, e = i32(p.requests, requestCols[i], cols[i])
			}
			return c
		}
		seq, stage, worker, shard := get64(0), get32(1), get32(2), get32(3)
		conv, turn, inTok, planned, sent, done, status := get64(5), get32(6), get32(7), get64(8), get64(9), get64(10), get32(11)
		uPrompt, uOut, sq, sp, sd := get32(13), get32(14), get64(15), get64(16), get64(17)
		col := func(name string) int { return slices.Index(requestCols, name) }
		sentEnd, sendStart, connect, txEnd := get64(col("sent_end_ns")), get64(col("send_start_ns")), get64(col("connect_ns")), get64(col("tx_stream_end"))
		port, connWait, synRe := get32(col("local_port")), get64(col("conn_wait_ns")), get32(col("syn_retrans"))
		if e != nil {
			return e
		}
		warm, e := boolean(p.requests, "warmup", cols[4])
		if e != nil {
			return e
		}
		ekind, e := str(p.requests, "error_kind", cols[12])
		if e != nil {
			return e
		}
		text, e := str(p.requests, "output_text", cols[18])
		if e != nil {
			return e
		}
		capped, e := boolean(p.requests, "conn_capped", cols[slices.Index(requestCols, "conn_capped")])
		if e != nil {
			return e
		}
		for i := range n {
			s := reqState{
				seq: seq.Value(i), stage: stage.Value(i), worker: worker.Value(i), shard: shard.Value(i),
				warmup: warm.Value(i), conversation: conv.Value(i), turn: turn.Value(i),
				inputSched: inTok.Value(i), plannedNs: planned.Value(i) + off, sentNs: sent.Value(i) + off,
				status: status.Value(i), textTokens: -1, lastIndex: -1, evTokensOK: true,
				sendStartNs: sendStart.Value(i) + off, connectNs: -1,
			}
			if sent.Value(i) == 0 {
				s.unsent, s.sentNs = true, s.sendStartNs // never written: the timeline uses its start
			}
			s.sentEndNs = s.sentNs
			if !sentEnd.IsNull(i) {
				s.sentEndNs = max(sentEnd.Value(i)+off, s.sentNs)
			}
			if !connect.IsNull(i) {
				s.connectNs = connect.Value(i)
			}
			if !connWait.IsNull(i) {
				s.connWaitNs = connWait.Value(i)
			}
			if !synRe.IsNull(i) {
				s.synRetrans = synRe.Value(i)
			}
			s.connCapped = capped.Value(i)
			s.sNs, s.sEndNs = s.sentNs, s.sentEndNs
			if tp := p.run.tap; tp != nil && !port.IsNull(i) && !s.unsent {
				s.conn = tp.conn(port.Value(i), s.sentNs)
			}
			if s.conn != nil && !txEnd.IsNull(i) {
				if ns, ok := at(s.conn.tx, txEnd.Value(i)); ok {
					s.txTapNs, s.sNs, s.sEndNs = ns, ns, ns
				}
			}
			if !done.IsNull(i) {
				s.doneNs, s.hasDone = done.Value(i)+off, true
			}
			if k := ekind(i); k != "" {
				s.errorKind = pr.intern(k)
			}
			if !uPrompt.IsNull(i) {
				s.usagePrompt, s.hasUPrompt = uPrompt.Value(i), true
			}
			if !uOut.IsNull(i) {
				s.usageOut, s.hasUOut = uOut.Value(i), true
			} else if t := text(i); t != "" && a.tok != nil {
				s.textTokens = int32(a.tok.Count(t))
			}
			if !sp.IsNull(i) {
				s.srvPrefill, s.hasSrv = sp.Value(i), true
				if !sq.IsNull(i) {
					s.srvQueue = sq.Value(i)
				}
				if !sd.IsNull(i) {
					s.srvDecode = sd.Value(i)
				}
			}
			if !s.warmup || a.cfg.IncludeWarmup {
				s.acc = a.stageOf(s.stage, p.requests)
			}
			if _, dup := pr.index[s.seq]; dup {
				dups++
			}
			pr.index[s.seq] = int32(len(pr.states))
			pr.states = append(pr.states, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if dups > 0 {
		if err := a.w.warn(p.requests, "%d duplicate seq values; the last row of each wins", dups); err != nil {
			return nil, err
		}
	}
	if want := p.run.listedRows(p.requests); want >= 0 && want != rows {
		if err := a.w.warn(p.requests, "has %d rows; the manifest says %d", rows, want); err != nil {
			return nil, err
		}
	}
	a.requestsRead += rows
	if p.chunks == "" {
		return pr.states, nil
	}
	if err := checkOpen(p.chunks, schemas.KindOf[schemas.RawChunk]()); err != nil {
		if errors.Is(err, schemas.ErrCorrupt) {
			if werr := a.w.warn(p.chunks, "truncated or not Parquet; its requests have no events"); werr != nil {
				return nil, werr
			}
			return pr.states, nil
		}
		return nil, err
	}
	unknown, disorder := 0, 0
	crows, err := forBatches(ctx, p.chunks, schemas.KindOf[schemas.RawChunk](), chunkCols, func(n int, cols []arrow.Array) error {
		seq, e := i64(p.chunks, "seq", cols[0])
		if e != nil {
			return e
		}
		idx, e := i32(p.chunks, "index", cols[1])
		if e != nil {
			return e
		}
		kern, e := i64(p.chunks, "rx_kernel_ns", cols[2])
		if e != nil {
			return e
		}
		user, e := i64(p.chunks, "rx_user_ns", cols[3])
		if e != nil {
			return e
		}
		qual, e := str(p.chunks, "quality", cols[4])
		if e != nil {
			return e
		}
		kind, e := str(p.chunks, "kind", cols[5])
		if e != nil {
			return e
		}
		tokens, e := i32(p.chunks, "tokens", cols[6])
		if e != nil {
			return e
		}
		after, e := i64(p.chunks, "rx_after_ns", cols[7])
		if e != nil {
			return e
		}
		rxEnd, e := i64(p.chunks, "rx_stream_end", cols[8])
		if e != nil {
			return e
		}
		for i := range n {
			j, ok := pr.index[seq.Value(i)]
			if !ok {
				unknown++
				continue
			}
			s := &pr.states[j]
			x := idx.Value(i)
			if x <= s.lastIndex {
				disorder++
				continue
			}
			s.lastIndex = x
			u := user.Value(i) + off
			t := u
			k, hasK := optI64(kern, i)
			if hasK {
				k += off
				t = k
				lag := u - k
				if !s.hasKernel || lag > s.readLagMax {
					s.readLagMax = lag
				}
				s.hasKernel = true
			}
			q, stamped := qual(i), hasK // stamped: t is a kernel time (socket read or tap)
			if e, ok := optI64(rxEnd, i); ok && s.conn != nil {
				if ns, ok := at(s.conn.rx, e); ok {
					t, stamped, q = ns, true, schemas.QualityExact // the segment's own arrival
					s.tapChunks++
					if s.acc != nil {
						s.acc.tapped++
					}
				}
			}
			s.lastEvNs = max(s.lastEvNs, t)
			if s.hasDone {
				s.doneNs = t // E: the final event's time
			}
			switch q { // with a tap time, exact
			case schemas.QualityExact:
				s.quality[qExact]++
			case schemas.QualityUpperBound:
				s.quality[qUpper]++
			case schemas.QualityUser:
				s.quality[qUser]++
			case schemas.QualityApprox:
				s.quality[qApprox]++
			}
			acc := s.acc
			if acc != nil {
				acc.events++
				if q == schemas.QualityExact {
					acc.exact++
				}
				if hasK {
					acc.readLag.add(u - k)
				}
			}
			var aft int64
			if v, ok := optI64(after, i); ok {
				aft = v + off
			}
			content := kind(i) == schemas.ChunkContent
			gap, hasGap := s.addEvent(s.eventSpan(t, q, stamped, aft, a.allow), content)
			if !content {
				continue
			}
			tok, hasTok := optI32(tokens, i)
			if hasTok && tok > 0 {
				s.evTokens += int64(tok)
			} else {
				s.evTokensOK = false
				tok = 1
			}
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
					acc.itlW.addB(g/w, gap.lo/w, gap.hi/w, w)
				}
			}
			s.lastNs = t
			s.content++
			s.credited += int64(tok)
			if acc != nil && s.ok() {
				acc.bucket(t).outTok += int64(tok)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.chunksRead += crows
	if want := p.run.listedRows(p.chunks); want >= 0 && want != crows {
		if err := a.w.warn(p.chunks, "has %d rows; the manifest says %d", crows, want); err != nil {
			return nil, err
		}
	}
	if unknown > 0 {
		if err := a.w.warn(p.chunks, "%d events belong to no request of %s (a request's events must be in the part of its row); skipped", unknown, p.requests); err != nil {
			return nil, err
		}
	}
	if disorder > 0 {
		if err := a.w.warn(p.chunks, "%d events out of index order within their request; skipped", disorder); err != nil {
			return nil, err
		}
	}
	return pr.states, nil
}

func (pr *partReader) intern(k string) string {
	if v, ok := pr.kinds[k]; ok {
		return v
	}
	v := strings.Clone(k)
	pr.kinds[v] = v
	return v
}

// checkOpen checks that path opens as a complete file of kind and this schema version.
func checkOpen(path string, kind schemas.Kind) error {
	f, err := schemas.OpenKind(path, kind)
	if err != nil {
		return err
	}
	return f.Close()
}
