package worker

import (
	"container/heap"
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/capture/wire"
)

// Go's timers wake up to about 1 ms late (the netpoller waits in whole milliseconds), which alone
// would break a 1 ms send-lag budget. The pacer therefore runs on its own locked OS thread,
// sleeps with clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME) and a 1 µs timer slack, and writes
// each request itself (wire.Client.Send), so nothing else has to be scheduled between its wake-up
// and the write.
//
// On a busy CPU a woken thread can still wait behind others for milliseconds, so the pacer thread
// asks for a 0.1 ms scheduler slice (EEVDF lets a task with a shorter slice preempt on wake-up)
// and, when the server is on another machine, nice -20 (the coordinator chooses: beside the
// server the pacer is not raised above the server's priority, see capture's colocated.go). A
// raise needs CAP_SYS_NICE; without it the thread keeps its priority and the worker says so.
// Real-time scheduling (SCHED_FIFO) is not used: the Go runtime's spin-waits (stack scans,
// stop-the-world) on a real-time thread can starve the thread they wait for, and a trial
// stalled sends for a whole second.

// pacerSlice is the scheduler slice lockPacerThread asks for.
const pacerSlice = 100 * time.Microsecond

// lockPacerThread must be called on the pacer goroutine before sleepUntil. It asks for nice
// (when that is a higher priority than the thread's own; a lower one is never taken) and
// pacerSlice, and returns a warning when the priority could not be raised.
func lockPacerThread(nice int) (warn string) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0) // ns; best effort
	own := int32(0)
	if cur, err := unix.SchedGetAttr(0, 0); err == nil {
		own = cur.Nice
	}
	raise := int32(nice) < own
	attr := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: min(int32(nice), own), Runtime: uint64(pacerSlice)}
	err := unix.SchedSetAttr(0, &attr, 0)
	if err == unix.EINVAL { // a kernel without custom slices: the nice value alone
		attr.Runtime = 0
		err = unix.SchedSetAttr(0, &attr, 0)
	}
	if err != nil && raise {
		return fmt.Sprintf("pacer thread priority not raised (nice %d: %v; needs CAP_SYS_NICE): send lag may be higher on a busy machine", nice, err)
	}
	return ""
}

// maxNap bounds one clock_nanosleep, so a stop request is seen within this long.
const maxNap = 20 * time.Millisecond

// sleepUntil sleeps until the wall-clock time ns (CLOCK_REALTIME nanoseconds) or for at most
// maxNap, and reports whether ns was reached.
func sleepUntil(ns int64) bool {
	now := time.Now().UnixNano()
	if now >= ns {
		return true
	}
	target := ns
	if ns-now > int64(maxNap) {
		target = now + int64(maxNap)
	}
	ts := unix.NsecToTimespec(target)
	for unix.ClockNanosleep(unix.CLOCK_REALTIME, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
	return target == ns
}

// nextDue says what the pacer sends next and when: the root at i, due at start plus its planned
// offset, or the timed heap's earliest item when that is due before it (a tie goes to the root).
// due < 0: nothing is waiting. The caller holds the heap's lock.
func nextDue(start int64, roots []*item, i int, timed timedHeap) (due int64, fromTimed bool) {
	due = -1
	if i < len(roots) {
		due = start + roots[i].r.PlannedOffsetNs
	}
	if len(timed) > 0 && (due < 0 || timed[0].due < due) {
		return timed[0].due, true
	}
	return due, false
}

// pace sends every root at its planned time and the chained requests the timed heap holds, on a
// locked OS thread, until everything owned is sent or skipped, or a stop.
func (w *worker) pace(ctx context.Context) {
	if warn := lockPacerThread(w.cfg.PacerNice); warn != "" && w.cfg.Worker == 0 {
		w.log.Warn(warn) // the same for every worker: said once
	}
	defer runtime.UnlockOSThread()
	i := 0
	for !w.stopping.Load() {
		w.tmu.Lock()
		due, timed := nextDue(w.startNs, w.roots, i, w.timed)
		w.tmu.Unlock()
		if due < 0 {
			if w.remaining.Load() == 0 {
				return
			}
			sleepUntil(time.Now().UnixNano() + int64(maxNap))
			continue
		}
		if !sleepUntil(due) {
			continue // napped; look again (a timed item may have arrived)
		}
		if timed {
			w.tmu.Lock()
			t := heap.Pop(&w.timed).(timedItem)
			w.tmu.Unlock()
			w.dispatch(ctx, t.it, t.due)
			continue
		}
		it := w.roots[i]
		if int64(i) >= w.built.Load() {
			if err := w.buildRoot(it); err != nil {
				w.log.Error("build request body", "err", err)
				w.stop()
				return
			}
			w.lateBody.Add(1)
		}
		i++
		w.dispatch(ctx, it, due)
	}
}

// dispatch starts one send, waiting on the in-flight cap if there is one (a wait shows as send
// lag and is counted).
func (w *worker) dispatch(ctx context.Context, it *item, planned int64) {
	delayed := false
	if w.sem != nil {
		select {
		case w.sem <- struct{}{}:
		default:
			delayed = true
			w.waits[it.r.Stage].Add(1)
			select {
			case w.sem <- struct{}{}:
			case <-w.stopCh:
				return
			}
		}
	}
	if planned < w.startNs+int64(time.Second) {
		w.fsent.Add(1)
	}
	w.sent[it.r.Stage].Add(1)
	w.sentTotal.Add(1)
	w.wg.Add(1)
	n := w.inflight.Add(1)
	for p := w.peak.Load(); n > p && !w.peak.CompareAndSwap(p, n); p = w.peak.Load() {
	}
	res := w.pool.Get().(*wire.Result)
	it.req = wire.Request{Seq: it.r.Seq, URL: w.urls[it.r.Endpoint], Body: it.body, Header: w.header,
		CancelAfterTokens: it.r.CancelAfterTokens, CancelAfter: time.Duration(it.r.CancelAfterNs)}
	if w.api.Ranks() {
		it.req.Documents, it.req.Answers = it.r.Documents, w.bb.answers(it.r.Documents)
	}
	// On a warm connection the request is written right here, on the pacer's thread.
	w.client.Send(ctx, &it.req, res, func(res *wire.Result) { w.finished(ctx, it, planned, delayed, res) })
}

// finished records a request that has ended and schedules what follows it.
func (w *worker) finished(ctx context.Context, it *item, planned int64, delayed bool, res *wire.Result) {
	defer w.wg.Done()
	w.inflight.Add(-1)
	if w.sem != nil {
		<-w.sem
	}
	q := &res.Req
	q.Seq, q.Stage, q.Worker, q.Shard, q.Endpoint = it.r.Seq, it.r.Stage, int32(w.cfg.Worker), int32(w.cfg.Shard), it.r.Endpoint
	q.Warmup, q.Conversation, q.Turn, q.Model = it.r.Warmup, it.r.Conversation, it.r.Turn, it.r.Model
	q.InputTokens, q.MaxTokens, q.PlannedNs, q.InflightDelay = it.r.InputTokens, it.r.MaxTokens, planned, delayed
	q.Documents = it.r.Documents
	if w.cfg.KeepText {
		q.OutputText = res.Text
	}
	it.body, it.req = nil, wire.Request{}
	if next := it.next; next != nil {
		w.follow(ctx, it, next, res)
	}
	it.hist = nil
	w.remaining.Add(-1)
	w.results <- res
}
