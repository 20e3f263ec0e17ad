package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/schemas"
)

type workerMsg struct {
	worker int
	msg    worker.Message
}

type workerExit struct {
	worker int
	status string
	ok     bool
}

type workerProc struct {
	cfg   worker.Config
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	ready bool
	done  *worker.Message
	exit  *workerExit
	last  *worker.Progress

	planned int64     // requests it owns (its ready message)
	lastMsg time.Time // its latest message since the start, for the watchdog
	stuck   string    // why the watchdog killed it; empty when it did not
}

type coord struct {
	cfg     Config
	log     *slog.Logger
	m       *schemas.Manifest
	mpath   string
	stepIdx int
	planned map[int32]int64
	total   int64
	procs   []*workerProc
	msgs    chan workerMsg
	exits   chan workerExit
	rows    []schemas.Worker
	server  []schemas.ServerMetric
	startNs int64

	spinPID     int // the keep-awake process, 0 = none
	interrupted bool
	stopped     bool
	failure     error
	readersWG   sync.WaitGroup

	// Early stop (Config.StopBelowFidelity): per stage, each worker's last progress sample
	// taken inside the stage window, and the stages already judged.
	atEnd     map[int32]map[int]endSample
	judged    map[int32]bool
	earlyStop string // why sending stopped early; empty when it did not
}

func (c *coord) start(exe string, wc worker.Config) error {
	cmd := exec.Command(exe, append(slices.Clone(c.cfg.WorkerArgs), "worker")...)
	cmd.Stderr = os.Stderr
	// Own process group: a terminal's Ctrl-C reaches only the coordinator, which stops the
	// workers itself (drain first, then close their stdin).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.cfg.Lock != nil {
		cmd.ExtraFiles = []*os.File{c.cfg.Lock} // fd 3: the worker writes under the run's lock
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("start worker %d: %w", wc.Worker, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("start worker %d: %w", wc.Worker, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker %d (%s worker): %w", wc.Worker, exe, err)
	}
	p := &workerProc{cfg: wc, cmd: cmd, stdin: stdin}
	c.procs = append(c.procs, p)
	line, _ := json.Marshal(wc)
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("configure worker %d: %w", wc.Worker, err)
	}
	c.readersWG.Add(1)
	go func() {
		defer c.readersWG.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var m worker.Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				c.log.Warn("worker wrote a line that is not a message", "worker", wc.Worker, "line", sc.Text())
				continue
			}
			c.msgs <- workerMsg{wc.Worker, m}
		}
		err := cmd.Wait()
		e := workerExit{worker: wc.Worker, status: "ok", ok: err == nil}
		if err != nil {
			e.status = err.Error()
		}
		c.exits <- e
	}()
	return nil
}

// pids returns the worker processes' ids.
func (c *coord) pids() []int {
	out := make([]int, len(c.procs))
	for i, p := range c.procs {
		out[i] = p.cmd.Process.Pid
	}
	return out
}

func (c *coord) control(p *workerProc, v worker.Control) {
	b, _ := json.Marshal(v)
	p.stdin.Write(append(b, '\n')) // a dead worker is reported by its exit
}

// stopAll asks every worker to stop sending and drain.
func (c *coord) stopAll() {
	if c.stopped {
		return
	}
	c.stopped = true
	for _, p := range c.procs {
		c.control(p, worker.Control{Stop: true})
	}
}

func (c *coord) waitAll() {
	for range c.procs {
		c.exited(<-c.exits)
	}
}

// exited records a worker's exit.
func (c *coord) exited(e workerExit) {
	p := c.procs[e.worker]
	if p.stuck != "" {
		e.status = "stuck: killed by the watchdog (" + e.status + ")"
	}
	p.exit = &e
}

func (c *coord) handle(wm workerMsg) {
	p := c.procs[wm.worker]
	if !p.lastMsg.IsZero() {
		p.heard(time.Now())
	}
	switch m := wm.msg; m.Type {
	case "ready":
		p.ready, p.planned = true, m.Planned
		if m.Warn != "" {
			c.log.Warn("worker warm-up", "worker", wm.worker, "msg", m.Warn)
		}
	case "file":
		if m.File != nil {
			c.m.AddFile(schemas.FileEntry{Path: m.File.Path, Kind: m.File.Kind, Rows: m.File.Rows, Worker: int32(wm.worker), Part: m.File.Part})
			if err := c.m.Write(c.mpath); err != nil {
				c.log.Error("update manifest", "err", err)
			}
		}
	case "worker":
		if m.Row != nil {
			c.rows = append(c.rows, *m.Row)
		}
	case "progress":
		p.last = m.Progress
		c.cfg.Live.update(wm.worker, m.Progress)
	case "done":
		p.done = &m
	}
}

// loop waits for the workers to be ready, starts them together, follows them to the end.
func (c *coord) loop(ctx context.Context, target schemas.Target) error {
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	start, err := c.startAll()
	if err != nil {
		c.stopAll()
		c.drainExits()
		return err
	}
	usage := startUsage(c.m.Stages, c.startNs, c.spinPID, c.pids)
	for _, p := range c.procs {
		c.control(p, worker.Control{StartNs: c.startNs})
		p.heard(time.Now())
	}
	c.log.Info("capture starting", "workers", len(c.procs), "start", start.Format(time.RFC3339Nano), "planned", c.total, "target", c.cfg.Target)
	scraped, stopScrape := c.startScrape(target)

	var live io.Writer
	if !c.cfg.Quiet && c.cfg.Progress != nil && isTerminal(c.cfg.Progress) {
		live = c.cfg.Progress
	}
	tr := newTracker(c.m.Stages, c.planned, c.cfg.Shards, live, c.log)
	c.cfg.Live.begin(c.m.Stages, c.planned)
	defer c.cfg.Live.end()
	tr.startNs = c.startNs
	checkFirst := c.follow(ctx, tr)
	c.m.StageUsage = usage.finish()
	// Messages sent just before a worker's exit are still queued.
	c.readersWG.Wait()
	for len(c.msgs) > 0 {
		c.handle(<-c.msgs)
	}
	// A short run can end before a tick saw its first second's last failure: judge it now.
	if checkFirst && c.failure == nil && !c.interrupted {
		c.checkFirstSecond()
	}
	tr.finish()
	stopScrape()
	c.server = <-scraped
	return c.result()
}

// waitReady waits until every worker has reported ready; a worker's exit, ctx's end or two
// minutes without every worker ready stop them all.
func (c *coord) waitReady(ctx context.Context) error {
	readyBy := time.NewTimer(2 * time.Minute)
	defer readyBy.Stop()
	for ready := 0; ready < len(c.procs); {
		select {
		case wm := <-c.msgs:
			c.handle(wm)
			if wm.msg.Type == "ready" {
				ready++
			}
		case e := <-c.exits:
			c.exited(e)
			c.stopAll()
			c.drainExits()
			return fmt.Errorf("worker %d ended before it was ready (%s); see its log above", e.worker, e.status)
		case <-ctx.Done():
			c.interrupted = true
			c.stopAll()
			c.drainExits()
			return ErrInterrupted
		case <-readyBy.C:
			c.stopAll()
			c.drainExits()
			return errors.New("workers not ready after 2m (loading the schedule or warming connections)")
		}
	}
	return nil
}

// startAll sets the common start time (startLead from now, or Config.StartAt) and records it in
// the manifest.
func (c *coord) startAll() (time.Time, error) {
	start := time.Now().Add(startLead)
	if !c.cfg.StartAt.IsZero() {
		start = c.cfg.StartAt
		if d := time.Until(start); d < 0 {
			c.log.Warn("start time is in the past: early requests will be late and show it as send lag", "start_at", start, "late_by", -d)
		}
	}
	c.startNs = start.UnixNano()
	c.m.StartNs = c.startNs
	return start, c.m.Write(c.mpath)
}

// startScrape scrapes target.metrics_url, if set, until stop is called; the scraped rows then
// come on the channel (nil when there is nothing to scrape).
func (c *coord) startScrape(target schemas.Target) (scraped <-chan []schemas.ServerMetric, stop func()) {
	scrapeCtx, stop := context.WithCancel(context.Background())
	out := make(chan []schemas.ServerMetric, 1)
	warn := func(err error) { c.log.Warn("server metrics", "err", err) }
	if target.MetricsURL == "" {
		out <- nil
	} else if client, err := metricsClient(target); err != nil {
		warn(err)
		out <- nil
	} else {
		go func() { out <- scrape(scrapeCtx, client, target.MetricsURL, c.stageAt, warn) }()
	}
	return out, stop
}

// follow handles the workers' messages and exits until the last worker has exited, and once a
// second runs the watchdog, the progress line and the stop judgements; an interrupt (ctx) stops
// the workers, who drain. It reports whether the first second is still to be judged.
func (c *coord) follow(ctx context.Context, tr *tracker) (checkFirst bool) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	checkFirst = true
	alive := len(c.procs)
	ctxDone := ctx.Done()
	for alive > 0 {
		select {
		case wm := <-c.msgs:
			c.handle(wm)
			if wm.msg.Type == "progress" && wm.msg.Progress != nil {
				tr.update(wm.worker, wm.msg.Progress)
				c.sampleStages(wm.worker, wm.msg.Progress)
			}
		case e := <-c.exits:
			alive--
			c.exited(e)
			if !e.ok {
				c.log.Error("worker died; the others go on", "worker", e.worker, "cpu", c.procs[e.worker].cfg.CPU, "exit", e.status)
			}
		case <-ctxDone:
			ctxDone = nil
			c.interrupted = true
			c.log.Warn("stopping: workers drain their in-flight requests", "drain_timeout", c.cfg.DrainTimeout)
			c.stopAll()
		case now := <-tick.C:
			checkFirst = c.tick(now, tr, checkFirst)
		}
	}
	return checkFirst
}

// tick is follow's once-a-second work; it returns checkFirst for the next tick.
func (c *coord) tick(now time.Time, tr *tracker, checkFirst bool) bool {
	c.watch(now)
	if !c.cfg.Quiet {
		tr.render(now.UnixNano())
	}
	if checkFirst && now.UnixNano() >= c.startNs+int64(time.Second) {
		checkFirst = c.checkFirstSecond()
	}
	if c.cfg.StopBelowFidelity > 0 && c.earlyStop == "" && !c.interrupted {
		c.judgeStages(now.UnixNano())
	}
	if c.cfg.Watch != nil && c.earlyStop == "" && !c.interrupted {
		c.askWatch(tr, now.UnixNano())
	}
	return checkFirst
}

func (c *coord) drainExits() {
	for _, p := range c.procs {
		if p.exit == nil {
			c.exited(<-c.exits)
		}
	}
	c.readersWG.Wait()
	for len(c.msgs) > 0 {
		c.handle(<-c.msgs)
	}
}

// stageAt returns the stage whose clock runs at ns, or -1 outside every stage.
func (c *coord) stageAt(ns int64) int32 {
	st := int32(-1)
	var best int64 = -1
	for _, s := range c.m.Stages {
		at := c.startNs + s.OffsetNs
		if ns >= at && at > best && (s.DurationNs == 0 || ns < at+s.DurationNs) {
			st, best = s.Index, at
		}
	}
	return st
}
