package worker

import (
	"bufio"
	"cmp"
	"container/heap"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/capture/wire"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// bodyWindow is how far ahead of their send time request bodies are built.
const bodyWindow = 2 * time.Second

// Config is one worker process's share of a capture. The coordinator sends it as the
// first JSON line of the worker's stdin.
type Config struct {
	Run          string        `json:"run"`
	Worker       int           `json:"worker"`
	Workers      int           `json:"workers"`
	Shard        int           `json:"shard"`
	Shards       int           `json:"shards"`
	CPU          int           `json:"cpu"` // -1: not pinned
	GOMAXPROCS   int           `json:"gomaxprocs"`
	PacerNice    int           `json:"pacer_nice"`        // the pacer thread's nice value; never lowered below the process's own
	Target       string        `json:"target"`            // base URL
	Targets      []string      `json:"targets,omitempty"` // target.urls' base URLs by schedule endpoint; empty: Target alone
	MaxInflight  int           `json:"max_inflight"`
	MaxConns     int           `json:"max_connections"` // 0: only the open-files limit
	Connections  int           `json:"connections"`
	KeepText     bool          `json:"keep_text"`
	DrainTimeout time.Duration `json:"drain_timeout"`
	Timeout      time.Duration `json:"timeout"`      // per request; 0 = none
	TTFTTimeout  time.Duration `json:"ttft_timeout"` // 0 = none
	GapTimeout   time.Duration `json:"gap_timeout"`  // 0 = none
	// ConnectTimeout bounds each dial; 0 = wire.DefaultConnectTimeout.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	// MemoryBudget bounds the bytes of response state all requests in flight hold together
	// (wire.ClientConfig.MemoryBudget): past it a request ends with kind memory_budget. 0 = none.
	MemoryBudget int64         `json:"memory_budget"`
	PartRows     int           `json:"part_rows"`
	PartInterval time.Duration `json:"part_interval"`
	Args         []string      `json:"args"`
	// NoKernelTimestamps and StampAfterDecode: see Config.
	NoKernelTimestamps bool `json:"no_kernel_timestamps,omitempty"`
	StampAfterDecode   bool `json:"stamp_after_decode,omitempty"`
	// Live: keep the live histograms and errors by kind and send them with progress (live.go).
	Live bool `json:"live,omitempty"`

	// Headers are target.headers as the config gives them: the manifest keeps a secret value
	// redacted, so the coordinator hands them over here (a pipe, never a file).
	Headers map[string]string `json:"headers,omitempty"`

	In  io.Reader `json:"-"` // control lines after the config (start, stop); EOF = coordinator gone
	Out io.Writer `json:"-"` // messages for the coordinator
}

// ReadConfig reads the first line of in as a Config and leaves the rest of in for
// Run.
func ReadConfig(in io.Reader) (Config, *bufio.Reader, error) {
	br := bufio.NewReader(in)
	line, err := br.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return Config{}, nil, fmt.Errorf("read worker config from stdin: %w", err)
	}
	var wc Config
	if err := json.Unmarshal(line, &wc); err != nil {
		return Config{}, nil, fmt.Errorf("read worker config from stdin: %w", err)
	}
	return wc, br, nil
}

// item is one owned request.
type item struct {
	r      schemas.ScheduleRequest
	prompt *schemas.Prompt
	next   *item // the request that follows this one's end: next turn or the user's next request
	body   []byte
	hist   []byte       // kept for next
	req    wire.Request // while in flight
}

type worker struct {
	cfg    Config
	log    *slog.Logger
	out    *LineWriter
	tgt    schemas.Target
	tls    *tls.Config // target.tls, loaded
	stages []schemas.StageInfo
	bases  []string // base URLs by schedule endpoint
	urls   []string // request URLs by schedule endpoint
	bb     *bodyBuilder
	api    wire.API
	client *wire.Client
	header map[string][]string

	roots   []*item
	owned   int64
	startNs int64

	built     atomic.Int64 // roots[:built] have bodies
	lateBody  atomic.Int64
	remaining atomic.Int64 // owned items not yet finished or skipped
	skipped   atomic.Int64
	sentTotal atomic.Int64
	stopping  atomic.Bool
	stopCh    chan struct{}
	wg        sync.WaitGroup // sends and think timers

	sem      chan struct{}
	inflight atomic.Int64
	peak     atomic.Int64
	sent     []atomic.Int64 // per stage
	waits    []atomic.Int64 // per stage
	fsent    atomic.Int64   // planned in the first second

	tmu   sync.Mutex
	timed timedHeap

	results chan *wire.Result
	pool    sync.Pool
}

// Run runs one worker process: pin, load its share, warm, report ready, wait for the
// start, pace, drain and close its parts.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if cfg.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(cfg.GOMAXPROCS)
	}
	if cfg.CPU >= 0 {
		if err := cpuset.PinProcess(cfg.CPU); err != nil {
			log.Warn("pinning failed; running unpinned", "worker", cfg.Worker, "err", err)
			cfg.CPU = -1
		}
	}
	// A coordinator that exits at once (a second Ctrl-C, SIGKILL) leaves the message pipe
	// broken: a write to it must fail, not kill the worker by SIGPIPE before it has closed
	// its open parts.
	signal.Ignore(unix.SIGPIPE)
	log = log.With("worker", cfg.Worker)
	w := &worker{cfg: cfg, log: log, out: NewLineWriter(cfg.Out), stopCh: make(chan struct{})}
	if err := w.load(); err != nil {
		return err
	}
	w.client = w.newClient()
	defer w.client.Close()
	if cfg.MaxInflight > 0 {
		w.sem = make(chan struct{}, cfg.MaxInflight)
	}
	w.pool.New = func() any { return new(wire.Result) }
	// First window of bodies before "ready", so none is built on the send path.
	if err := w.buildUntil(int64(bodyWindow)); err != nil {
		return err
	}
	w.out.send(Message{Type: "ready", Worker: cfg.Worker, Planned: w.owned, Warn: w.warm(ctx)})
	startCh, abort := w.readControl()
	select {
	case w.startNs = <-startCh:
	case <-abort:
		return errors.New("coordinator closed stdin before the start")
	case <-ctx.Done():
		return ctx.Err()
	}
	go func() {
		select {
		case <-ctx.Done():
			w.stop()
		case <-w.stopCh:
		}
	}()

	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	w.results = make(chan *wire.Result, 4096)
	wdone := make(chan error, 1)
	go func() { wdone <- w.writeLoop() }()
	go w.buildLoop()
	w.pace(reqCtx)
	w.drain(cancelReqs, abort)
	close(w.results)
	werr := <-wdone
	done := Message{Type: "done", Worker: cfg.Worker, Sent: w.sentTotal.Load(), Unsent: w.owned - w.sentTotal.Load() - w.skipped.Load(), Skipped: w.skipped.Load(), LateBody: w.lateBody.Load()}
	if werr != nil {
		done.Error = werr.Error() // the coordinator names it in the manifest
	}
	w.out.send(done)
	return werr
}

// newClient makes the worker's wire client. The pool size caps the connections per host. There
// is no hidden cap: it is --max-connections or the in-flight cap when set, else what the
// open-files limit allows; a request that waits at it is marked (conn_capped). Spare idle
// connections (half the warm ones) are kept dialed off the send path.
func (w *worker) newClient() *wire.Client {
	cfg := w.cfg
	keepText := cfg.KeepText
	for _, it := range w.allChained() {
		if it.r.DependsOn >= 0 {
			keepText = true // conversations carry the real answers
			break
		}
	}
	maxConns := ConnCap(cfg.MaxConns, cfg.MaxInflight, OpenFilesLimit())
	w.log.Info("connections", "max_connections", maxConns, "open_files_limit", OpenFilesLimit())
	w.log.Info("timeouts", "timeout", cfg.Timeout, "ttft_timeout", cfg.TTFTTimeout, "gap_timeout", cfg.GapTimeout, "connect_timeout", cfg.ConnectTimeout)
	return wire.NewClient(wire.ClientConfig{API: w.api, MaxConns: maxConns, MinIdle: min(cfg.Connections/2, maxConns), KeepText: keepText,
		Timeout: cfg.Timeout, TTFTTimeout: cfg.TTFTTimeout, GapTimeout: cfg.GapTimeout, ConnectTimeout: cfg.ConnectTimeout, TLS: w.tls, MemoryBudget: cfg.MemoryBudget,
		Timestamps: !cfg.NoKernelTimestamps, StampAfterDecode: cfg.StampAfterDecode})
}

// warm dials the warm connections before "ready", to each endpoint (each has its own pool); it
// returns the problems, if any, for the coordinator (the connections are then dialed on the
// send path).
func (w *worker) warm(ctx context.Context) string {
	conns := min(w.cfg.Connections, int(w.owned))
	if conns <= 0 {
		return ""
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var warns []string
	for _, b := range w.bases {
		if err := w.client.Warm(wctx, b, conns); err != nil {
			w.log.Warn("warm-up failed; connections will be dialed on the send path", "err", err)
			warns = append(warns, fmt.Sprintf("warm %d connections to %s: %v", conns, b, err))
		}
	}
	return strings.Join(warns, "; ")
}

// readControl reads the coordinator's lines on stdin: the start time (sent on the first channel)
// and stop; EOF (the coordinator is gone) closes abort and stops the worker.
func (w *worker) readControl() (<-chan int64, <-chan struct{}) {
	startCh := make(chan int64, 1)
	abort := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(w.cfg.In)
		for sc.Scan() {
			var c Control
			if json.Unmarshal(sc.Bytes(), &c) != nil {
				continue
			}
			if c.StartNs != 0 {
				startCh <- c.StartNs
			}
			if c.Stop {
				w.stop()
			}
		}
		close(abort)
		w.stop()
	}()
	return startCh, abort
}

// drain waits for what is in flight: all of it after a normal end (each request has the target
// timeout), up to the drain timeout after a stop, nothing once the coordinator is gone.
func (w *worker) drain(cancelReqs func(), abort <-chan struct{}) {
	drained := make(chan struct{})
	go func() { w.wg.Wait(); close(drained) }()
	if w.stopping.Load() {
		t := time.NewTimer(w.cfg.DrainTimeout)
		select {
		case <-drained:
		case <-t.C:
			w.log.Warn("drain timeout: cancelling requests in flight", "inflight", w.inflight.Load())
			cancelReqs()
		case <-abort:
			cancelReqs()
		}
		t.Stop()
	}
	<-drained
}

func (w *worker) stop() {
	if w.stopping.CompareAndSwap(false, true) {
		close(w.stopCh)
	}
}

// load reads the manifest and this worker's share of the schedule and prompts.
func (w *worker) load() error {
	m, err := schemas.ReadManifest(filepath.Join(w.cfg.Run, schemas.ManifestName))
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	rc, err := m.RunConfig()
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(w.cfg.Run, schemas.ManifestName), err)
	}
	w.tgt = rc.Target
	// The secrets come from the coordinator, not the manifest; metrics_url is the coordinator's.
	w.tgt.URL, w.tgt.Headers, w.tgt.MetricsURL = w.cfg.Target, w.cfg.Headers, ""
	w.stages = m.Stages
	if w.bb, err = newBodyBuilder(w.tgt, rc.Workload.Tools); err != nil {
		return err
	}
	if d := rc.Workload.Documents; d != nil && w.tgt.API == "rerank" {
		w.bb.topN = d.TopN
	}
	if w.api, err = wire.ParseAPI(w.tgt.API); err != nil {
		return fmt.Errorf("target.api: %w", err)
	}
	if w.header, err = requestHeader(w.tgt); err != nil {
		return err
	}
	if w.tls, err = w.tgt.TLS.ClientConfig(); err != nil {
		return err
	}
	w.bases = w.cfg.Targets
	if len(w.bases) == 0 {
		w.bases = []string{w.cfg.Target}
	}
	for _, b := range w.bases {
		w.urls = append(w.urls, endpoint(b, w.tgt.API))
	}
	maxStage := int32(0)
	for _, s := range w.stages {
		maxStage = max(maxStage, s.Index)
	}

	sched, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](w.cfg.Run))
	if err != nil {
		return fmt.Errorf("read schedule: %w", err)
	}
	var items []*item
	need := map[int64]*schemas.Prompt{}
	for i := range sched {
		r := &sched[i]
		if sh, wk := Owner(r, w.cfg.Shards, w.cfg.Workers); sh != w.cfg.Shard || wk != w.cfg.Worker {
			continue
		}
		if r.Stage < 0 || r.Stage > maxStage {
			return fmt.Errorf("schedule/requests.parquet: seq %d: stage %d is not in manifest stages", r.Seq, r.Stage)
		}
		if r.Endpoint < 0 || int(r.Endpoint) >= len(w.urls) {
			return fmt.Errorf("schedule/requests.parquet: seq %d: endpoint %d, but the target has %d (target.urls)", r.Seq, r.Endpoint, len(w.urls))
		}
		items = append(items, &item{r: *r})
		need[r.PromptID] = nil
		if r.Model != "" {
			w.bb.addModel(r.Model)
		}
	}
	sched = nil
	prompts, err := schemas.ReadFile[schemas.Prompt](schemas.FileOf[schemas.Prompt](w.cfg.Run))
	if err != nil {
		return fmt.Errorf("read prompts: %w", err)
	}
	for i := range prompts {
		if _, ok := need[prompts[i].PromptID]; ok {
			p := prompts[i]
			need[p.PromptID] = &p
			if err := w.bb.prepareImages(p.ImagesJSON); err != nil {
				return fmt.Errorf("schedule/prompts.parquet: prompt_id %d: %w", p.PromptID, err)
			}
		}
	}
	prompts = nil
	w.sent = make([]atomic.Int64, maxStage+1)
	w.waits = make([]atomic.Int64, maxStage+1)

	// Chains: a conversation turn follows the turn it depends on; a closed-loop user's requests
	// follow each other in seq order.
	bySeq := make(map[int64]*item, len(items))
	hasPrev := make(map[*item]bool)
	lastOfUser := map[int64]*item{}
	for _, it := range items {
		if it.prompt = need[it.r.PromptID]; it.prompt == nil {
			return fmt.Errorf("schedule/requests.parquet: seq %d: prompt_id %d is not in schedule/prompts.parquet", it.r.Seq, it.r.PromptID)
		}
		bySeq[it.r.Seq] = it
	}
	// Items come in seq order, and a closed-loop user's conversations are numbered one after
	// another, so a user's next conversation follows the last turn of the previous one.
	for _, it := range items {
		switch {
		case it.r.DependsOn >= 0:
			p := bySeq[it.r.DependsOn]
			if p == nil || p.next != nil {
				return fmt.Errorf("schedule/requests.parquet: seq %d: depends_on %d is not an earlier turn of conversation %d", it.r.Seq, it.r.DependsOn, it.r.Conversation)
			}
			p.next, hasPrev[it] = it, true
		case it.r.User >= 0:
			k := int64(it.r.Stage)<<32 | int64(it.r.User)
			if p := lastOfUser[k]; p != nil && p.next == nil {
				p.next, hasPrev[it] = it, true
			}
		}
		if it.r.User >= 0 {
			lastOfUser[int64(it.r.Stage)<<32|int64(it.r.User)] = it
		}
	}
	for _, it := range items {
		if !hasPrev[it] {
			w.roots = append(w.roots, it)
		}
	}
	sort.SliceStable(w.roots, func(i, j int) bool { return w.roots[i].r.PlannedOffsetNs < w.roots[j].r.PlannedOffsetNs })
	w.owned = int64(len(items))
	w.remaining.Store(w.owned)
	return nil
}

func (w *worker) allChained() []*item {
	var out []*item
	for _, r := range w.roots {
		for it := r.next; it != nil; it = it.next {
			out = append(out, it)
		}
	}
	return out
}

// buildUntil builds the bodies of roots planned before offset (ns from the start).
func (w *worker) buildUntil(offset int64) error {
	for i := w.built.Load(); i < int64(len(w.roots)) && w.roots[i].r.PlannedOffsetNs < offset; i++ {
		if err := w.buildRoot(w.roots[i]); err != nil {
			return err
		}
		w.built.Store(i + 1)
	}
	return nil
}

func (w *worker) buildRoot(it *item) error {
	body, hist, err := w.bb.build(it.r.Model, it.r.MaxTokens, it.prompt, nil, "")
	if err != nil {
		return fmt.Errorf("seq %d: %w", it.r.Seq, err)
	}
	it.body = body
	if it.next != nil {
		it.hist = hist
	}
	return nil
}

// buildLoop keeps request bodies built bodyWindow ahead of their send time.
func (w *worker) buildLoop() {
	for !w.stopping.Load() && w.built.Load() < int64(len(w.roots)) {
		if err := w.buildUntil(time.Now().UnixNano() - w.startNs + int64(bodyWindow)); err != nil {
			w.log.Error("build request body", "err", err)
			w.stop()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
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
		due := int64(-1)
		if i < len(w.roots) {
			due = w.startNs + w.roots[i].r.PlannedOffsetNs
		}
		w.tmu.Lock()
		var top *timedItem
		if len(w.timed) > 0 && (due < 0 || w.timed[0].due < due) {
			top = &w.timed[0]
			due = top.due
		}
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
		if top != nil {
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
