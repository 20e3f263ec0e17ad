package worker

import (
	"cmp"
	"runtime"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/capture/wire"
	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// usage is a snapshot of the process's resource counters.
type usage struct {
	wall, user, sys, gcPause, maxRSS, reads, bytes, opened, sent int64
}

var gcSamples = []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}, {Name: "/memory/classes/heap/objects:bytes"}}

func (w *worker) usage() (u usage, heapBytes int64) {
	u.wall = time.Now().UnixNano()
	u.sent = w.sentTotal.Load()
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		u.user = ru.Utime.Nano()
		u.sys = ru.Stime.Nano()
		u.maxRSS = ru.Maxrss * 1024
	}
	metrics.Read(gcSamples)
	if gcSamples[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := gcSamples[0].Value.Float64Histogram()
		var s float64
		for i, c := range h.Counts {
			if c == 0 {
				continue
			}
			lo, hi := h.Buckets[i], h.Buckets[i+1]
			if lo < 0 || lo != lo || hi > 1e9 {
				lo = max(lo, 0)
				hi = lo
			}
			s += float64(c) * (lo + hi) / 2 // bucket midpoint
		}
		u.gcPause = int64(s * 1e9)
	}
	if gcSamples[1].Value.Kind() == metrics.KindUint64 {
		heapBytes = int64(gcSamples[1].Value.Uint64())
	}
	if w.client != nil {
		u.reads, u.bytes = w.client.Stats()
		u.opened = w.client.Opened()
	}
	return u, heapBytes
}

// writeLoop owns the part writer, the TTFT histogram and the per-stage accounting. It runs off
// the send path: send goroutines hand it finished results through a buffered channel.
func (w *worker) writeLoop() error {
	pw := newPartWriter(w.cfg.Run, w.cfg.Worker, schemas.Producer{Command: "capture", Args: w.cfg.Args},
		w.cfg.PartRows, w.cfg.PartInterval, func(f FileDone) {
			w.out.send(Message{Type: "file", Worker: w.cfg.Worker, File: &f})
		})
	tl := newTally(len(w.sent))
	if w.cfg.Live {
		tl.live = newLiveTally(len(w.sent))
	}
	clk := newStageClock(w.stages)
	var werr error
	fail := func(err error, what string) {
		if err != nil && werr == nil {
			werr = err
			w.log.Error(what+"; stopping", "err", err)
			w.stop()
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	clk.advance(w)
	// Stages begin on time, not at the next tick: each workers.parquet row covers its stage's
	// window, as the coordinator's stage_usage does.
	next := time.NewTimer(clk.untilNext(w))
	defer next.Stop()
	for {
		select {
		case <-next.C:
			clk.advance(w)
			next.Reset(clk.untilNext(w))
		case res, ok := <-w.results:
			if !ok {
				clk.advance(w)
				u, _ := w.usage()
				clk.closeStage(w, u)
				w.sendProgress(tl, clk)
				if err := pw.close(); err != nil && werr == nil {
					werr = err
				}
				return werr
			}
			// A server may echo the request's credentials, in an error or in its text.
			if res.Req.ErrorMessage != "" {
				res.Req.ErrorMessage = redact.String(res.Req.ErrorMessage)
			}
			if res.Req.OutputText != "" {
				res.Req.OutputText = redact.String(res.Req.OutputText)
			}
			tl.add(res, w.startNs)
			if werr == nil {
				fail(pw.add(&res.Req, res.Chunks), "write raw part")
			}
			res.Text = ""
			res.Req.OutputText = ""
			res.Release() // its rows are copied: the memory budget has them back
			w.pool.Put(res)
		case now := <-tick.C:
			clk.advance(w)
			w.sendProgress(tl, clk)
			if werr == nil {
				fail(pw.tick(now), "roll raw part")
			}
		}
	}
}

// tally counts the worker's finished requests for the coordinator's progress lines.
type tally struct {
	done, errs []int64                   // per stage
	ttft       []*hdrhistogram.Histogram // per stage, µs
	firstOK    int64                     // requests planned in the first second: finished ok ...
	firstFail  int64                     // ... failed
	firstErr   string                    // the first of those failures
	live       *liveTally                // Config.Live; nil: off
}

func newTally(stages int) *tally {
	t := &tally{done: make([]int64, stages), errs: make([]int64, stages), ttft: make([]*hdrhistogram.Histogram, stages)}
	for i := range t.ttft {
		t.ttft[i] = hdrhistogram.New(1, 600_000_000, 2)
	}
	return t
}

// add counts res and gives its chunks their request's seq. A request the client closed as
// planned (cancelled_by_client) counts as done: the server answered it.
func (t *tally) add(res *wire.Result, startNs int64) {
	q := &res.Req
	failed := q.ErrorKind != "" && q.ErrorKind != schemas.ErrCancelledByClient
	if failed {
		t.errs[q.Stage]++
	} else {
		t.done[q.Stage]++
	}
	if q.PlannedNs < startNs+int64(time.Second) {
		if !failed {
			t.firstOK++
		} else if t.firstFail++; t.firstErr == "" {
			t.firstErr = q.ErrorKind + ": " + q.ErrorMessage
		}
	}
	if t.live != nil {
		t.live.add(q, res.Chunks)
	}
	first := true
	for i := range res.Chunks {
		c := &res.Chunks[i]
		c.Seq = q.Seq
		if first && c.Kind == schemas.ChunkContent {
			_ = t.ttft[q.Stage].RecordValue(max((c.Time()-q.SentNs)/1000, 1))
			first = false
		}
	}
}

// stageClock follows the stages of the worker's plan: stage s runs from start+offset(s) to the
// next stage's start (the last one to the end of the worker); each stage ends with its
// workers.parquet row.
type stageClock struct {
	order    []schemas.StageInfo // by offset
	cur      int32               // running stage; -1 before the first
	next     int                 // index into order of the next stage to begin
	begin    usage               // at the running stage's start
	heapPeak int64
}

func newStageClock(stages []schemas.StageInfo) *stageClock {
	order := slices.Clone(stages)
	slices.SortFunc(order, func(a, b schemas.StageInfo) int { return cmp.Compare(a.OffsetNs, b.OffsetNs) })
	return &stageClock{order: order, cur: -1}
}

// advance begins every stage whose start has passed, closing the running one.
func (c *stageClock) advance(w *worker) {
	now := time.Now().UnixNano()
	for c.next < len(c.order) && w.startNs+c.order[c.next].OffsetNs <= now {
		u, hb := w.usage()
		c.closeStage(w, u)
		c.begin, c.heapPeak = u, hb
		if c.cur < 0 {
			c.begin.sent = 0 // the pacer may send before this goroutine sees the first stage begin
		}
		c.cur = c.order[c.next].Index
		c.next++
	}
}

// untilNext is the time until the next stage begins (an hour when no stage is left).
func (c *stageClock) untilNext(w *worker) time.Duration {
	if c.next >= len(c.order) {
		return time.Hour
	}
	return max(time.Until(time.Unix(0, w.startNs+c.order[c.next].OffsetNs)), 0)
}

// closeStage sends the running stage's workers.parquet row, measured up to now.
func (c *stageClock) closeStage(w *worker, now usage) {
	if c.cur < 0 {
		return
	}
	b := c.begin
	row := schemas.Worker{
		Worker: int32(w.cfg.Worker), Shard: int32(w.cfg.Shard), Stage: c.cur, CPU: int32(w.cfg.CPU),
		GOMAXPROCS: int32(runtime.GOMAXPROCS(0)), WallNs: now.wall - b.wall,
		CPUUserNs: now.user - b.user, CPUSysNs: now.sys - b.sys, GCPauseNs: now.gcPause - b.gcPause,
		HeapPeakBytes: c.heapPeak, MaxRSSBytes: now.maxRSS, Requests: now.sent - b.sent,
		Reads: now.reads - b.reads, BytesRead: now.bytes - b.bytes,
		InflightPeak: int32(w.peak.Swap(w.inflight.Load())), InflightWaits: w.waits[c.cur].Load(),
		ConnsOpened: now.opened - b.opened, ConnsWarm: int32(w.cfg.Connections),
	}
	if w.client != nil {
		row.ConnsPeak = int32(w.client.TakeOpenPeak())
	}
	w.out.send(Message{Type: "worker", Worker: w.cfg.Worker, Row: &row})
}

// sendProgress sends the worker's cumulative state, with the running stage's TTFT histogram.
func (w *worker) sendProgress(t *tally, c *stageClock) {
	u, hb := w.usage()
	c.heapPeak = max(c.heapPeak, hb)
	p := &Progress{Stage: c.cur, Done: t.done, Errors: t.errs, Inflight: w.inflight.Load(),
		CPUNs: u.user + u.sys, NowNs: u.wall, FirstSent: w.fsent.Load(), FirstOK: t.firstOK, FirstFailed: t.firstFail, FirstError: t.firstErr}
	p.Sent = make([]int64, len(w.sent))
	for i := range p.Sent {
		p.Sent[i] = w.sent[i].Load()
	}
	if t.live != nil { // encoded below, before the write loop changes them again
		p.Live = t.live.take()
		if w.client != nil {
			p.ConnsOpen = w.client.Open()
		}
	}
	if c.cur >= 0 {
		if b, err := t.ttft[c.cur].Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
			p.TTFT = b
		}
	}
	w.out.send(Message{Type: "progress", Worker: w.cfg.Worker, Progress: p})
}
