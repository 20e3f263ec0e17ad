package worker

import (
	"container/heap"
	"context"
	"time"

	"github.com/wirebench/wirebench/capture/wire"
	"github.com/wirebench/wirebench/schemas"
)

// follow schedules the request that comes after it: at its end plus think time, with its real
// answer in the body.
func (w *worker) follow(ctx context.Context, it, next *item, res *wire.Result) {
	end := time.Now().UnixNano()
	if res.Req.DoneNs != nil {
		end = *res.Req.DoneNs
	}
	due := end + next.r.ThinkNs
	if st := w.stageInfo(next.r.Stage); st != nil && st.Mode == schemas.ModeClosed && st.DurationNs > 0 && due > w.startNs+st.OffsetNs+st.DurationNs {
		var n int64
		for x := next; x != nil; x = x.next {
			n++
		}
		w.skipped.Add(n)
		w.remaining.Add(-n)
		return
	}
	// Only a later turn of the same conversation carries the history and the real answer; a
	// closed-loop user's next request (or next conversation) starts afresh.
	prev, answer := []byte(nil), ""
	if next.r.DependsOn >= 0 {
		prev, answer = it.hist, res.Text
	}
	body, hist, err := w.bb.build(next.r.Model, next.r.MaxTokens, next.prompt, prev, answer)
	if err != nil {
		w.log.Error("build request body", "seq", next.r.Seq, "err", err)
		w.stop()
		return
	}
	next.body = body
	if next.next != nil {
		next.hist = hist
	}
	if w.stopping.Load() {
		return
	}
	if next.r.ThinkNs <= 0 {
		w.dispatch(ctx, next, due)
		return
	}
	// Hand it to the pacer well before it is due (the pacer naps at most maxNap).
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if d := time.Until(time.Unix(0, due)) - 2*maxNap; d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-w.stopCh:
				return
			}
		}
		w.tmu.Lock()
		heap.Push(&w.timed, timedItem{due: due, it: next})
		w.tmu.Unlock()
	}()
}

func (w *worker) stageInfo(i int32) *schemas.StageInfo {
	for k := range w.stages {
		if w.stages[k].Index == i {
			return &w.stages[k]
		}
	}
	return nil
}

type timedItem struct {
	due int64
	it  *item
}

type timedHeap []timedItem

func (h timedHeap) Len() int           { return len(h) }
func (h timedHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h timedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timedHeap) Push(x any)        { *h = append(*h, x.(timedItem)) }
func (h *timedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
