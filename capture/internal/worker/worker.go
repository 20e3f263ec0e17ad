package worker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/capture/wire"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/schemas"
)

// Config is one worker process's share of a capture. The coordinator sends it as the
// first JSON line of the worker's stdin.
type Config struct {
	Run       string   `json:"run"`
	Worker    int      `json:"worker"`
	Workers   int      `json:"workers"`
	Shard     int      `json:"shard"`
	Shards    int      `json:"shards"`
	CPU       int      `json:"cpu"`               // -1: not pinned
	PacerNice int      `json:"pacer_nice"`        // the pacer thread's nice value; never lowered below the process's own
	Target    string   `json:"target"`            // base URL
	Targets   []string `json:"targets,omitempty"` // target.urls' base URLs by schedule endpoint; empty: Target alone
	Args      []string `json:"args"`
	// Options are the capture's, resolved.
	Options
	// NoKernelTimestamps and StampAfterDecode: see capture.Config.
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
	maxConns := ConnCap(cfg.MaxConnections, cfg.MaxInflight, OpenFilesLimit())
	w.log.Info("connections", "max_connections", maxConns, "open_files_limit", OpenFilesLimit())
	w.log.Info("timeouts", "timeout", cfg.timeout(), "ttft_timeout", cfg.TTFTTimeout, "gap_timeout", cfg.GapTimeout, "connect_timeout", cfg.ConnectTimeout)
	return wire.NewClient(wire.ClientConfig{API: w.api, MaxConns: maxConns, MinIdle: min(cfg.Connections/2, maxConns), KeepText: keepText,
		Timeout: cfg.timeout(), TTFTTimeout: cfg.TTFTTimeout, GapTimeout: cfg.GapTimeout, ConnectTimeout: cfg.ConnectTimeout, TLS: w.tls, MemoryBudget: int64(cfg.MemoryBudget),
		Timestamps: !cfg.NoKernelTimestamps, StampAfterDecode: cfg.StampAfterDecode, Coalesce: cfg.readCoalesce()})
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
