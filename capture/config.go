package capture

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/capture/wire"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/redact"
	"github.com/wirebench/wirebench/schemas"
)

// Options are the capture options a user may set, declared once (capture/internal/worker):
// Config embeds them, the command line's flags are their fields (the help tags say what each
// means), and each worker is told them. Zero = not given: resolve, for every caller, takes the
// config's capture or target value, else its Default constant (DefaultConnections and the rest).
type Options = worker.Options

// CoordOptions are the options of the coordinating process a user may set, declared once:
// Config embeds them and so does the command line's CaptureFlags (kong reads the flags from the
// tags below). Zero values are the defaults.
type CoordOptions struct {
	NoPin     bool `help:"Do not pin workers to CPUs."`
	KeepAwake bool `help:"Keep each pinned worker's CPU from halting while the capture runs: a spinner at the lowest priority (SCHED_IDLE) that gives way at once to any other thread. A halted CPU wakes late (on VMs up to milliseconds) and that lateness becomes send and read lag. Costs a full CPU per worker in power and, where a host caps the VM's CPU time or the instance is burstable, in quota: use it on machines whose CPUs are your own. Ignored under a cgroup CPU quota (see README)."`
	// StopBelowFidelity stops sending (and ends the run as complete, saying so in the manifest's
	// missing list) once an open-loop stage has ended with fewer sends than this share of its
	// plan: the client has broken and later, faster stages would only measure the client.
	// 0 = never. Calibration uses it to end its sweep early.
	StopBelowFidelity float64 `name:"stop-below-fidelity" placeholder:"SHARE" help:"Stop sending once an open-loop stage ends with fewer than this share of its planned sends made on time (e.g. 0.9): the client has broken and later stages would measure only the client. The run ends complete; the manifest says what was not sent. 0 = never." default:"0"`
	// Tap is the packet tap (tap.go): TapAuto ("" too: on where possible), TapOn, TapOff.
	Tap   string `enum:"auto,on,off" default:"auto" help:"Packet tap: record every TCP segment of the run's connections (AF_PACKET, headers only) in raw/segments-PPPP.parquet, so aggregate gives every event the arrival time of the segment that carried it, however late the client read. auto: on where this process may open a packet socket (CAP_NET_RAW) and the target is http or https over IPv4, else off with a note in the log and the manifest; on: fail when it cannot run. One of: ${enum}."`
	Quiet bool   `help:"No progress output (warnings and errors are still logged)."`
}

// Config is one capture of a run directory. Zero values take the manifest's config
// (schemas.Config.Capture and .Target), then the defaults below.
type Config struct {
	Run     string    // run directory holding manifest.json and schedule/
	Workers int       // worker processes; 0 = capture.workers, else the CPUs this process may use
	Shard   int       // this host's shard index, 0 <= Shard < Shards
	Shards  int       // number of hosts sharing the schedule; 0 or 1 = one host
	StartAt time.Time // common start time (multi-host runs); zero = a little after every worker is ready
	Target  string    // base URL overriding target.url
	Targets []string  // target.urls' base URLs by schedule endpoint (resolve); nil with one endpoint
	// Options are the options a user sets (flags, or the config's capture and target sections;
	// see Options); zero values take the config's, then the defaults below.
	Options
	// CoordOptions are the coordinator's own options a user may set (--no-pin to --quiet).
	CoordOptions
	Progress   io.Writer // where progress goes (stderr in the CLI); nil = no live bar, log lines only
	Exe        string    // binary that runs `worker`; "" = os.Executable()
	WorkerArgs []string  // global flags before `worker` (the log level and format)
	Args       []string  // the command line, recorded in the manifest and file metadata
	// Lock is the run directory's lock file (rundir.Lock.File) held by the caller; each
	// worker inherits it, so the lock stays held until the last worker has closed its parts,
	// even when the coordinator is killed. nil: the caller holds no lock.
	Lock *os.File

	// CPUs are the CPUs workers are pinned to, worker i to CPUs[i mod len]; nil = this process's
	// affinity mask. Calibration keeps the simulator's CPU out of it; capture --cpus sets it.
	CPUs []int
	// Clock reads the host's clock discipline for the manifest; nil = hostclock.Read (tests
	// fake an unsynchronised clock with it).
	Clock func() schemas.Clock
	// NoKernelTimestamps turns SO_TIMESTAMPING off: every event gets the user-space time only.
	NoKernelTimestamps bool
	// StampAfterDecode stamps each event's arrival after its JSON is decoded instead of right
	// after the socket read: the naive client, for `calibrate --single-process` only.
	StampAfterDecode bool
	// Watch, when set, is called about once a second with this host's progress in the current
	// stage; a non-empty answer stops sending as StopBelowFidelity does (the run ends complete,
	// the answer in the manifest's missing list). `wirebench search` stops with it a step that
	// is already clearly failing its SLOs.
	Watch func(Live) string
	// Secrets is the config's target as loaded, secrets included: `wirebench run` passes it in
	// memory. Its url, metrics_url and headers replace the manifest's, which keeps their secrets
	// redacted (schemas.Target.Redacted). nil: the manifest's, where a redacted secret is an
	// error naming its field.
	Secrets *schemas.Target
	// Live, when set, gets the workers' progress with live histograms for
	// `--metrics-listen` (live.go); nil: the workers keep none.
	Live *LiveMetrics
}

// Defaults.
const (
	DefaultConnections  = 64
	DefaultDrainTimeout = 30 * time.Second
	// DefaultGapTimeout: no server streams a token, keep-alive or anything else a minute apart
	// while healthy; a stream silent that long has stalled, and the benchmark must not wait on
	// it forever.
	DefaultGapTimeout = 60 * time.Second
	// DefaultTTFTTimeout: a first token can wait long in an overloaded server's queue, which is
	// what an overload run measures; ten minutes is past any queue worth measuring, and bounds
	// a request the server accepted and forgot. (A non-streaming body comes whole: there it
	// bounds the whole generation.)
	DefaultTTFTTimeout = 10 * time.Minute
	// DefaultTimeout bounds a whole request: past any generation worth measuring (32,768 tokens
	// at 20 tokens/s take 27 minutes), it ends one that a server keeps alive with a byte now and
	// then, which no other timeout cuts.
	DefaultTimeout = 30 * time.Minute
	// DefaultConnectTimeout bounds a dial: three SYN retransmissions (1 s, 3 s and 7 s after the
	// first SYN) and a TLS handshake fit.
	DefaultConnectTimeout = wire.DefaultConnectTimeout
	// DefaultWatchdog: a worker reports its progress every second while it runs; 30 s of silence
	// is a worker stopped (SIGSTOP, a debugger) or hung, not a slow one.
	DefaultWatchdog     = 30 * time.Second
	DefaultPartRows     = 500_000
	DefaultPartInterval = 10 * time.Second
	// DefaultMemoryBudget bounds what one worker's requests in flight hold of their responses
	// (events at 256 bytes each, text, buffered lines, whole bodies): 1,048,576 events, as many
	// as the longest single response may have. A 2-CPU machine runs two workers: 512 MiB, and
	// about twice that of memory with the garbage collector's headroom. Past it a request ends
	// with kind memory_budget, not the worker with an out-of-memory kill.
	DefaultMemoryBudget = 256 << 20
	// DefaultGOMAXPROCS is 4 for a worker pinned to one CPU: the pacer's locked thread gives up
	// its P while it sleeps in clock_nanosleep and must find an idle one when it wakes, or wait
	// for a thread handoff (milliseconds on a busy CPU); with readers busy on the other Ps, 4
	// leaves one idle nearly always (measured: see README, "GOMAXPROCS").
	DefaultGOMAXPROCS = 4
	// MaxGOMAXPROCS bounds --gomaxprocs: the runtime allocates every P up front, and with a
	// mistyped 100000000 a capture of three requests made no progress in 30 s.
	MaxGOMAXPROCS = 256
	// MaxReadCoalesce bounds --read-coalesce: each read of a batching connection waits the
	// window, so a mistyped 10s would hold every stream's end that long.
	MaxReadCoalesce = 10 * time.Millisecond
	// startLead is how far after the last worker's "ready" the coordinator puts the common start.
	startLead = 300 * time.Millisecond
)

// Sentinel errors.
var (
	// ErrTargetDown: every request of the first second failed; the run was stopped.
	ErrTargetDown = errors.New("target failed every request of the first second")
	// ErrWorkerDied: a worker process ended abnormally; the others went on.
	ErrWorkerDied = errors.New("worker died")
	// ErrWorkerStuck: a worker sent nothing for Config.Watchdog; it was killed, the others went on.
	ErrWorkerStuck = errors.New("worker stuck")
	// ErrInterrupted: the capture was stopped by an interrupt; finished parts are kept.
	ErrInterrupted = errors.New("capture interrupted")
)

// ParseCPUs parses a CPU list such as "0,2-3" (the kernel's cpulist format, as taskset -c).
func ParseCPUs(s string) ([]int, error) { return cpuset.ParseList(s) }

// ParseStartAt parses an RFC 3339 time or a unix time in nanoseconds.
func ParseStartAt(s string) (time.Time, error) {
	if ns, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(0, ns), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid start time %q: want RFC 3339 (2026-01-02T15:04:05Z) or unix nanoseconds", s)
	}
	return t, nil
}

// Live is one host's progress in the current stage, as Config.Watch sees it.
type Live struct {
	Stage     int32         // stage index
	Elapsed   time.Duration // since the stage's planned start
	Planned   int64         // requests this host plans in the stage
	Sent      int64         // requests sent so far
	Done      int64         // requests ended ok so far
	Errors    int64         // requests failed so far
	Inflight  int64         // requests in flight now (every stage)
	TTFTCount int64         // requests of the stage with a first token so far
	TTFTP50   time.Duration // their median TTFT (to 2 significant digits)
}

// Check resolves cfg against the run config rc as Run will, touching nothing: `wirebench run`
// calls it before replay replaces a run directory, so that options capture would refuse fail
// while the old run is still whole.
func Check(cfg Config, rc *schemas.Config) error { return resolve(&cfg, rc) }

// resolve fills cfg from the manifest's config and the defaults, and checks it; its Options
// in resolveOptions.
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
	cfg.Workers = cmp.Or(cfg.Workers, co.Workers)
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
	return resolveOptions(&cfg.Options, rc)
}

// resolveOptions gives every option not given its value from the config rc, else its default:
// the one place capture's defaults are applied.
func resolveOptions(o *Options, rc *schemas.Config) error {
	co, t := rc.Capture, rc.Target
	o.MaxInflight = cmp.Or(o.MaxInflight, co.MaxInflight)
	o.MaxConnections = cmp.Or(o.MaxConnections, co.MaxConnections)
	o.Connections = cmp.Or(o.Connections, co.Connections, DefaultConnections)
	o.PartRows = cmp.Or(o.PartRows, co.PartRows, DefaultPartRows)
	o.GOMAXPROCS = cmp.Or(o.GOMAXPROCS, DefaultGOMAXPROCS)
	if o.GOMAXPROCS < 1 || o.GOMAXPROCS > MaxGOMAXPROCS {
		return fmt.Errorf("gomaxprocs %d: want 1..%d (0 = %d)", o.GOMAXPROCS, MaxGOMAXPROCS, DefaultGOMAXPROCS)
	}
	if o.MaxInflight < 0 || o.MaxConnections < 0 || o.Connections < 0 || o.PartRows < 1 {
		return fmt.Errorf("max-inflight %d, max-connections %d, connections %d: want >= 0; part-rows %d: want >= 1", o.MaxInflight, o.MaxConnections, o.Connections, o.PartRows)
	}
	o.DrainTimeout = cmp.Or(o.DrainTimeout, co.DrainTimeout.D(), DefaultDrainTimeout)
	o.Timeout = requestTimeout(o.Timeout, t.Timeout)
	o.TTFTTimeout = cmp.Or(o.TTFTTimeout, t.TTFTTimeout.D(), DefaultTTFTTimeout)
	o.GapTimeout = cmp.Or(o.GapTimeout, t.GapTimeout.D(), DefaultGapTimeout)
	o.ConnectTimeout = cmp.Or(o.ConnectTimeout, t.ConnectTimeout.D(), DefaultConnectTimeout)
	o.Watchdog = cmp.Or(o.Watchdog, DefaultWatchdog)
	if *o.Timeout < 0 || o.TTFTTimeout < 0 || o.GapTimeout < 0 || o.ConnectTimeout < 0 || o.Watchdog < 0 {
		return fmt.Errorf("timeouts must be >= 0 (timeout %v, ttft-timeout %v, gap-timeout %v, connect-timeout %v, watchdog %v)",
			*o.Timeout, o.TTFTTimeout, o.GapTimeout, o.ConnectTimeout, o.Watchdog)
	}
	o.PartInterval = cmp.Or(o.PartInterval, co.PartInterval.D(), DefaultPartInterval)
	o.MemoryBudget = cmp.Or(o.MemoryBudget, co.MemoryBudget, DefaultMemoryBudget)
	if o.MemoryBudget < 0 {
		return fmt.Errorf("memory budget must be >= 0 (%d bytes)", o.MemoryBudget)
	}
	o.KeepText = o.KeepText || co.KeepText
	if o.ReadCoalesce != nil && (*o.ReadCoalesce < 0 || *o.ReadCoalesce > MaxReadCoalesce) {
		return fmt.Errorf("read-coalesce %v: want 0..%v", *o.ReadCoalesce, MaxReadCoalesce)
	}
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
