package capture

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/hostclock"
	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// Run captures cfg.Run: it starts the workers, gives them a common start time, follows their
// progress, records every finished part in the manifest as it is reported, and ends with the
// manifest's status: complete, interrupted (first Ctrl-C: ctx cancelled; sending stops, in-flight
// requests get DrainTimeout), or failed (target down, a dead worker, an error). Finished parts
// are kept in every case.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (err error) {
	mpath := filepath.Join(cfg.Run, schemas.ManifestName)
	m, err := schemas.ReadManifest(mpath)
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	rc, err := m.RunConfig()
	if err != nil {
		return fmt.Errorf("%s: %w", mpath, err)
	}
	if s := cfg.Secrets; s != nil {
		rc.Target.URL, rc.Target.MetricsURL, rc.Target.Headers = s.URL, s.MetricsURL, s.Headers
		if len(s.URLs) == len(rc.Target.URLs) {
			rc.Target.URLs = s.URLs // the manifest's, with their user:password
		}
	}
	if cfg.Target != "" {
		rc.Target.URL = cfg.Target
	}
	// Every variable set, no secret missing, before anything is written or started; from here
	// on, the target's secrets are kept out of what this process writes and logs.
	if _, err := rc.Target.Resolve(); err != nil {
		return inFile(mpath, err)
	}
	if err := resolve(&cfg, &rc); err != nil {
		return err
	}
	rawDir := filepath.Join(cfg.Run, "raw")
	if old, _ := filepath.Glob(filepath.Join(rawDir, "*.parquet")); len(old) > 0 {
		return fmt.Errorf("%s already holds a capture (%s); capture into a fresh run directory or remove raw/", rawDir, filepath.Base(old[0]))
	}
	planned, total, err := plannedPerStage(cfg.Run, cfg.Shard, cfg.Shards)
	if err != nil {
		return err
	}
	cpus, usable, err := cpuset.Allowed()
	if err != nil {
		return err
	}
	if len(cfg.CPUs) > 0 {
		cpus, usable = cfg.CPUs, min(usable, len(cfg.CPUs))
	}
	pl := locate(ctx, cfg.Target, log)
	cpus = pl.applyColocated(&cfg, cpus, usable)
	if cfg.Workers == 0 {
		cfg.Workers = usable
	}
	exe := cfg.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find wirebench binary for workers: %w", err)
		}
	}

	// The manifest says "running" and what may be missing until the end rewrites it, so a
	// killed coordinator leaves an honest manifest behind.
	step := schemas.Step{Name: schemas.StepCapture, Args: cfg.Args, Started: time.Now(), Status: schemas.StatusRunning}
	m.Steps = append(m.Steps, step)
	stepIdx := len(m.Steps) - 1
	m.Status = schemas.StatusRunning
	if cfg.Shards > 1 {
		m.Shard = fmt.Sprintf("%d/%d", cfg.Shard, cfg.Shards)
	}
	m.Workers = nil
	m.ShardPlanned = planned
	readClock := cfg.Clock
	if readClock == nil {
		readClock = hostclock.Read
	}
	clock := readClock()
	m.Clock = &clock
	if h, err := os.Hostname(); err == nil {
		m.Host = h
	}
	m.Colocation = pl.col
	m.StageUsage = nil
	m.Missing = []string{"capture did not finish (the coordinator stopped while status was running): parts not listed in files, raw/workers.parquet and raw/server-metrics.parquet may be absent"}
	// Room for the last manifest writes when the disk fills up; deleted after them.
	release, err := schemas.Reserve(cfg.Run)
	if err != nil {
		return err
	}
	defer release()
	if err := m.Write(mpath); err != nil {
		return err
	}

	c := &coord{cfg: cfg, log: log, m: m, mpath: mpath, msgs: make(chan workerMsg, 256), exits: make(chan workerExit, cfg.Workers)}
	// The tap starts before any worker dials (its join needs each connection's handshake) and
	// stops after the last worker has exited.
	rec, tapStatus, err := startTap(cfg, pl.local, log)
	if err != nil {
		return err
	}
	m.Tap = tapStatus
	m.OpenFilesLimit = worker.OpenFilesLimit()
	m.MaxConnections = worker.ConnCap(cfg.MaxConns, cfg.MaxInflight, m.OpenFilesLimit)
	defer func() {
		if rec != nil {
			if terr := rec.finish(c.m); terr != nil && err == nil {
				err = fmt.Errorf("packet tap: %w", terr)
			}
		}
		c.finish(err)
		end := hostclock.Worse(clock, readClock())
		c.m.Clock = &end
		if werr := c.m.Write(mpath); werr != nil && err == nil {
			err = werr
		}
	}()
	c.stepIdx = stepIdx
	c.planned, c.total = planned, total
	var pinned []int
	for i := range cfg.Workers {
		if !cfg.NoPin && len(cpus) > 0 {
			pinned = append(pinned, cpus[i%len(cpus)])
		}
	}
	if cfg.KeepAwake {
		if a := keepAwake(exe, pinned, log); a != nil {
			defer a.stop()
			c.spinPID = a.pid()
		}
	}
	for i := range cfg.Workers {
		cpu := -1
		if len(pinned) > 0 {
			cpu = pinned[i]
		}
		wc := worker.Config{Run: cfg.Run, Worker: i, Workers: cfg.Workers, Shard: cfg.Shard, Shards: cfg.Shards, CPU: cpu,
			GOMAXPROCS: cfg.GOMAXPROCS, PacerNice: pl.pacerNice, Target: cfg.Target, Targets: cfg.Targets, Headers: rc.Target.Headers, MaxInflight: cfg.MaxInflight, MaxConns: cfg.MaxConns, Connections: cfg.Connections,
			KeepText: cfg.KeepText, DrainTimeout: cfg.DrainTimeout, Timeout: *cfg.Timeout, TTFTTimeout: cfg.TTFTTimeout, GapTimeout: cfg.GapTimeout,
			ConnectTimeout: cfg.ConnectTimeout, PartRows: cfg.PartRows, PartInterval: cfg.PartInterval, Args: cfg.Args,
			MemoryBudget:       cfg.MemoryBudget,
			NoKernelTimestamps: cfg.NoKernelTimestamps, StampAfterDecode: cfg.StampAfterDecode, Live: cfg.Live != nil}
		if err := c.start(exe, wc); err != nil {
			c.stopAll()
			c.waitAll()
			return err
		}
	}
	return c.loop(ctx, rc.Target)
}

// inFile prefixes each of the errors joined in err with the file they are about.
func inFile(path string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s: %w", path, e)
	}
	return errors.Join(out...)
}

// Check resolves cfg against the run config rc as Run will, touching nothing: `wirebench run`
// calls it before replay replaces a run directory, so that options capture would refuse fail
// while the old run is still whole.
func Check(cfg Config, rc *schemas.Config) error { return resolve(&cfg, rc) }

// resolve fills cfg from the manifest's config and the defaults.
func resolve(cfg *Config, rc *schemas.Config) error {
	co := rc.Capture
	if eps := rc.Target.URLs; len(eps) > 1 {
		if cfg.Target != "" && cfg.Target != eps[0].URL {
			return fmt.Errorf("--target %s: the schedule spreads its requests over the %d endpoints of target.urls; plan the run anew with replay --target to send them all to one", redact.URL(cfg.Target), len(eps))
		}
		cfg.Targets = rc.Target.Endpoints()
	}
	if cfg.Target == "" {
		cfg.Target = rc.Target.URL
	}
	if cfg.Target == "" {
		return errors.New("no target URL: set target.url in the config or pass --target")
	}
	u, err := url.Parse(cfg.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("target %q: want an http:// or https:// base URL", cfg.Target)
	}
	if cfg.Workers == 0 {
		cfg.Workers = co.Workers
	}
	if cfg.Workers < 0 {
		return fmt.Errorf("workers %d: want >= 1 (0 = the CPUs this process may use)", cfg.Workers)
	}
	if cfg.Shards < 1 {
		cfg.Shards = 1
	}
	if cfg.StopBelowFidelity < 0 || cfg.StopBelowFidelity > 1 {
		return fmt.Errorf("stop-below-fidelity %g: want a share between 0 and 1", cfg.StopBelowFidelity)
	}
	if co.Shards > 1 && cfg.Shards != co.Shards {
		return fmt.Errorf("shard %d/%d: the config's capture.shards is %d: give --shard i/%d", cfg.Shard, cfg.Shards, co.Shards, co.Shards)
	}
	if cfg.Shard < 0 || cfg.Shard >= cfg.Shards {
		return fmt.Errorf("shard %d/%d: want 0 <= i < n", cfg.Shard, cfg.Shards)
	}
	pick := func(v, c, d int) int {
		if v != 0 {
			return v
		}
		if c != 0 {
			return c
		}
		return d
	}
	pickD := func(v, c, d time.Duration) time.Duration {
		if v != 0 {
			return v
		}
		if c != 0 {
			return c
		}
		return d
	}
	cfg.MaxInflight = pick(cfg.MaxInflight, co.MaxInflight, 0)
	cfg.MaxConns = pick(cfg.MaxConns, co.MaxConnections, 0)
	cfg.Connections = pick(cfg.Connections, co.Connections, DefaultConnections)
	cfg.PartRows = pick(cfg.PartRows, co.PartRows, DefaultPartRows)
	cfg.GOMAXPROCS = pick(cfg.GOMAXPROCS, 0, DefaultGOMAXPROCS)
	cfg.DrainTimeout = pickD(cfg.DrainTimeout, co.DrainTimeout.D(), DefaultDrainTimeout)
	cfg.Timeout = requestTimeout(cfg.Timeout, rc.Target.Timeout)
	cfg.TTFTTimeout = pickD(cfg.TTFTTimeout, rc.Target.TTFTTimeout.D(), DefaultTTFTTimeout)
	cfg.GapTimeout = pickD(cfg.GapTimeout, rc.Target.GapTimeout.D(), DefaultGapTimeout)
	cfg.ConnectTimeout = pickD(cfg.ConnectTimeout, rc.Target.ConnectTimeout.D(), DefaultConnectTimeout)
	cfg.Watchdog = pickD(cfg.Watchdog, 0, DefaultWatchdog)
	if *cfg.Timeout < 0 || cfg.TTFTTimeout < 0 || cfg.GapTimeout < 0 || cfg.ConnectTimeout < 0 || cfg.Watchdog < 0 {
		return fmt.Errorf("timeouts must be >= 0 (timeout %v, ttft-timeout %v, gap-timeout %v, connect-timeout %v, watchdog %v)",
			*cfg.Timeout, cfg.TTFTTimeout, cfg.GapTimeout, cfg.ConnectTimeout, cfg.Watchdog)
	}
	cfg.PartInterval = pickD(cfg.PartInterval, co.PartInterval.D(), DefaultPartInterval)
	cfg.MemoryBudget = cmp.Or(cfg.MemoryBudget, int64(co.MemoryBudget), DefaultMemoryBudget)
	if cfg.MemoryBudget < 0 {
		return fmt.Errorf("memory budget must be >= 0 (%d bytes)", cfg.MemoryBudget)
	}
	cfg.KeepText = cfg.KeepText || co.KeepText
	return nil
}

// requestTimeout is the whole-request timeout: the flag, else target.timeout, else
// DefaultTimeout; 0 = none.
func requestTimeout(flag *time.Duration, conf *schemas.Duration) *time.Duration {
	d := DefaultTimeout
	switch {
	case flag != nil:
		d = *flag
	case conf != nil:
		d = conf.D()
	}
	return &d
}

// plannedPerStage counts this host's planned requests per stage.
func plannedPerStage(run string, shard, shards int) (map[int32]int64, int64, error) {
	rows, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](run))
	if err != nil {
		return nil, 0, fmt.Errorf("read schedule: %w", err)
	}
	out := map[int32]int64{}
	var total int64
	for i := range rows {
		if s, _ := worker.Owner(&rows[i], shards, 1); s == shard {
			out[rows[i].Stage]++
			total++
		}
	}
	return out, total, nil
}

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

// endSample is a worker's cumulative sends of a stage at a time inside the stage window.
type endSample struct{ sent, nowNs int64 }

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
	start := time.Now().Add(startLead)
	if !c.cfg.StartAt.IsZero() {
		start = c.cfg.StartAt
		if d := time.Until(start); d < 0 {
			c.log.Warn("start time is in the past: early requests will be late and show it as send lag", "start_at", start, "late_by", -d)
		}
	}
	c.startNs = start.UnixNano()
	c.m.StartNs = c.startNs
	if err := c.m.Write(c.mpath); err != nil {
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

	scrapeCtx, stopScrape := context.WithCancel(context.Background())
	scraped := make(chan []schemas.ServerMetric, 1)
	warn := func(err error) { c.log.Warn("server metrics", "err", err) }
	if target.MetricsURL == "" {
		scraped <- nil
	} else if client, err := metricsClient(target); err != nil {
		warn(err)
		scraped <- nil
	} else {
		go func() { scraped <- scrape(scrapeCtx, client, target.MetricsURL, c.stageAt, warn) }()
	}

	var live io.Writer
	if !c.cfg.Quiet && c.cfg.Progress != nil && isTerminal(c.cfg.Progress) {
		live = c.cfg.Progress
	}
	tr := newTracker(c.m.Stages, c.planned, c.cfg.Shards, live, c.log)
	c.cfg.Live.begin(c.m.Stages, c.planned)
	defer c.cfg.Live.end()
	tr.startNs = c.startNs
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	checkFirst := true
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
		}
	}
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

// sampleStages keeps, for every open-loop stage whose window contains the sample's time, the
// worker's cumulative sends of that stage.
func (c *coord) sampleStages(worker int, p *worker.Progress) {
	if c.cfg.StopBelowFidelity <= 0 {
		return
	}
	for _, st := range c.m.Stages {
		start := c.startNs + st.OffsetNs
		if st.Mode != schemas.ModeOpen || st.DurationNs <= 0 || p.NowNs < start || p.NowNs > start+st.DurationNs || int(st.Index) >= len(p.Sent) {
			continue
		}
		if c.atEnd == nil {
			c.atEnd, c.judged = map[int32]map[int]endSample{}, map[int32]bool{}
		}
		if c.atEnd[st.Index] == nil {
			c.atEnd[st.Index] = map[int]endSample{}
		}
		c.atEnd[st.Index][worker] = endSample{sent: p.Sent[st.Index], nowNs: p.NowNs}
	}
}

// judgeStages looks at each open-loop stage once its window has ended and every worker has
// reported since (progress comes once a second): fidelity = sends seen / sends due by the time
// of each worker's last sample inside the window. Below Config.StopBelowFidelity it stops
// sending; the run ends complete, and the manifest says why requests are missing.
func (c *coord) judgeStages(now int64) {
	for _, st := range c.m.Stages {
		end := c.startNs + st.OffsetNs + st.DurationNs
		if st.Mode != schemas.ModeOpen || st.DurationNs <= 0 || c.judged[st.Index] || now < end+int64(1500*time.Millisecond) {
			continue
		}
		if c.judged == nil {
			c.judged = map[int32]bool{}
		}
		c.judged[st.Index] = true
		samples := c.atEnd[st.Index]
		planned := c.planned[st.Index]
		if len(samples) == 0 || planned == 0 {
			continue
		}
		var sent int64
		var frac float64
		for _, smp := range samples {
			sent += smp.sent
			frac += float64(smp.nowNs-(c.startNs+st.OffsetNs)) / float64(st.DurationNs)
		}
		frac /= float64(len(samples))
		if frac < 0.5 { // too little of the window seen to judge
			continue
		}
		fid := float64(sent) / (float64(planned) * frac)
		if fid < c.cfg.StopBelowFidelity {
			c.earlyStop = fmt.Sprintf("stopped early after stage %d (%s): %.0f%% of its planned sends went out on time, below the %.0f%% limit (StopBelowFidelity); later stages were not sent",
				st.Index, st.Name, 100*fid, 100*c.cfg.StopBelowFidelity)
			c.log.Warn("stopping early: the client cannot keep up", "stage", st.Index, "fidelity", fmt.Sprintf("%.3f", fid), "limit", c.cfg.StopBelowFidelity)
			c.stopAll()
			return
		}
	}
}

// askWatch asks Config.Watch about the current stage and stops sending when it answers why.
func (c *coord) askWatch(tr *tracker, now int64) {
	s, ok := tr.summary(now)
	if !ok {
		return
	}
	if why := c.cfg.Watch(s.live()); why != "" {
		c.earlyStop = fmt.Sprintf("stopped early in stage %d: %s; the rest of the schedule was not sent", s.stage, why)
		c.log.Warn("stopping early", "stage", s.stage, "why", why)
		c.stopAll()
	}
}

// checkFirstSecond stops the run when every request planned in the first second has failed. It
// reports whether to check again (results still pending).
func (c *coord) checkFirstSecond() bool {
	var sent, ok, failed int64
	firstErr := ""
	for _, p := range c.procs {
		if p.last == nil {
			if p.exit == nil {
				return true // no news yet
			}
			continue
		}
		sent += p.last.FirstSent
		ok += p.last.FirstOK
		failed += p.last.FirstFailed
		if firstErr == "" {
			firstErr = p.last.FirstError
		}
	}
	switch {
	case ok > 0 || sent == 0:
		return false
	case failed < sent:
		return true
	}
	c.failure = fmt.Errorf("%w: %d of %d failed (first: %s); check the target %s", ErrTargetDown, failed, sent, firstErr, c.cfg.Target)
	c.log.Error("stopping the run", "err", c.failure)
	c.stopAll()
	return false
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

// result writes the coordinator's files and decides the outcome.
func (c *coord) result() error {
	prod := schemas.Producer{Command: "capture", Args: c.cfg.Args}
	var ferr error
	sort.Slice(c.rows, func(i, j int) bool {
		a, b := c.rows[i], c.rows[j]
		return a.Worker < b.Worker || a.Worker == b.Worker && a.Stage < b.Stage
	})
	if len(c.rows) > 0 {
		if err := schemas.WriteFile(schemas.FileOf[schemas.Worker](c.cfg.Run), c.rows, prod); err != nil {
			ferr = err
		} else {
			c.m.AddFile(schemas.EntryOf[schemas.Worker](int64(len(c.rows))))
		}
	}
	if len(c.server) > 0 {
		if err := schemas.WriteFile(schemas.FileOf[schemas.ServerMetric](c.cfg.Run), c.server, prod); err != nil && ferr == nil {
			ferr = err
		} else if err == nil {
			c.m.AddFile(schemas.EntryOf[schemas.ServerMetric](int64(len(c.server))))
		}
	}
	dead, stuck := c.lost()
	switch {
	case c.failure != nil:
		return c.failure
	case ferr != nil:
		return ferr
	case stuck:
		return fmt.Errorf("%w: %s; the other workers finished and every finished part is kept", ErrWorkerStuck, strings.Join(dead, ", "))
	case len(dead) > 0:
		return fmt.Errorf("%w: %s; the other workers finished and every finished part is kept", ErrWorkerDied, strings.Join(dead, ", "))
	case c.interrupted:
		return ErrInterrupted
	}
	return nil
}

// lost names the workers that died or were killed stuck, and reports whether one was stuck.
func (c *coord) lost() (dead []string, stuck bool) {
	for _, p := range c.procs {
		switch {
		case p.stuck != "":
			dead, stuck = append(dead, p.stuck), true
		case p.exit != nil && !p.exit.ok:
			why := p.exit.status
			if p.done != nil && p.done.Error != "" {
				why += ": " + p.done.Error
			}
			dead = append(dead, fmt.Sprintf("worker %d (%s)", p.cfg.Worker, why))
		}
	}
	return dead, stuck
}

// finish records the outcome in the manifest (written by Run's deferred call).
func (c *coord) finish(err error) {
	m := c.m
	m.Missing = nil
	m.Workers = m.Workers[:0]
	var sent int64
	for _, p := range c.procs {
		ws := schemas.WorkerStatus{Worker: int32(p.cfg.Worker), Shard: int32(p.cfg.Shard), CPU: int32(p.cfg.CPU), Exit: "unknown"}
		if p.exit != nil {
			ws.Exit = p.exit.status
		}
		m.Workers = append(m.Workers, ws)
		switch {
		case p.done != nil:
			sent += p.done.Sent + p.done.Skipped
		case p.last != nil:
			for _, n := range p.last.Sent {
				sent += n
			}
			m.Missing = append(m.Missing, fmt.Sprintf("worker %d (cpu %d) ended with %s: the requests of its open part, its last workers.parquet row and its unsent requests are missing", p.cfg.Worker, p.cfg.CPU, ws.Exit))
		default:
			m.Missing = append(m.Missing, fmt.Sprintf("worker %d (cpu %d) ended with %s before sending", p.cfg.Worker, p.cfg.CPU, ws.Exit))
		}
	}
	if len(c.procs) > 0 && sent < c.total {
		m.Missing = append(m.Missing, fmt.Sprintf("%d of %d planned requests were not sent", c.total-sent, c.total))
	}
	if c.earlyStop != "" {
		m.Missing = append(m.Missing, c.earlyStop)
	}
	st := &m.Steps[c.stepIdx]
	st.Ended = time.Now()
	switch {
	case err == nil:
		m.Status, st.Status = schemas.StatusComplete, schemas.StatusComplete
	case errors.Is(err, ErrInterrupted):
		m.Status, st.Status = schemas.StatusInterrupted, schemas.StatusInterrupted
		st.Error = err.Error()
	default:
		m.Status, st.Status = schemas.StatusFailed, schemas.StatusFailed
		st.Error = err.Error()
	}
}
