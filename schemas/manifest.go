package schemas

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirebench/wirebench/internal/redact"
)

// Run statuses in manifest.json.
const (
	StatusPlanned     = "planned"     // replay wrote the schedule
	StatusRunning     = "running"     // capture is sending
	StatusComplete    = "complete"    // capture finished every stage
	StatusInterrupted = "interrupted" // stopped by Ctrl-C; finished parts are kept
	StatusFailed      = "failed"      // stopped by an error; finished parts are kept
)

// Step names and the status of a step that succeeded (manifest.json's steps). A step that did
// not succeed has the run status it left: StatusInterrupted or StatusFailed (capture's step
// also StatusRunning while it sends, then StatusComplete).
const (
	StepReplay    = "replay"
	StepCapture   = "capture"
	StepAggregate = "aggregate"
	StepReport    = "report"
	StepOK        = "ok"
)

// ManifestName is the manifest's file name inside a run directory.
const ManifestName = "manifest.json"

// Manifest is RUN/manifest.json: what the run is, what made it and which files it holds.
type Manifest struct {
	SchemaVersion      int             `json:"schema_version" doc:"the run files' schema version (SchemaVersion); a reader refuses another"`
	RunID              string          `json:"run_id" doc:"the run's id, made by replay; every host of a distributed run shares it"`
	ToolVersion        string          `json:"tool_version" doc:"wirebench version that wrote the manifest last"`
	Host               string          `json:"host" doc:"host name of the step that wrote it last (replay, then capture)"`
	CPUs               int             `json:"cpus" doc:"CPUs that process could use"`
	ClockSource        string          `json:"clock_source" doc:"the clock of every timestamp: CLOCK_REALTIME"`
	Created            time.Time       `json:"created" doc:"when replay made the run"`
	StartNs            int64           `json:"start_ns,omitempty" doc:"capture's common start time (CLOCK_REALTIME ns): the schedule's time zero"`
	Clock              *Clock          `json:"clock,omitempty" doc:"the clock discipline of the host that wrote the manifest last"`
	Shard              string          `json:"shard,omitempty" doc:"i/n for a host of a distributed capture"`
	ShardPlanned       map[int32]int64 `json:"shard_planned,omitempty" doc:"requests of each stage (by index) this host's shard plans to send, written before it sends; aggregate compares it with what it finds"`
	Config             json.RawMessage `json:"config,omitempty" doc:"the resolved run configuration (the YAML config as JSON; no secrets: the API key is named by api_key_env, a URL's user:password and a credential header's value are [REDACTED], ${VAR} references kept)"`
	Stages             []StageInfo     `json:"stages" doc:"the load plan, one per stage"`
	Steps              []Step          `json:"steps" doc:"the commands applied to the run, in order"`
	Files              []FileEntry     `json:"files" doc:"every finished file with its row count"`
	Workers            []WorkerStatus  `json:"workers,omitempty" doc:"how each capture worker process ended"`
	Status             string          `json:"status" doc:"planned, running, complete, interrupted or failed"`
	Missing            []string        `json:"missing,omitempty" doc:"what the run lacks: dead workers, unsent requests, hosts that died or never started"`
	Tap                *TapStatus      `json:"tap,omitempty" doc:"the packet tap of capture --tap"`
	OpenFilesLimit     int64           `json:"open_files_limit,omitempty" doc:"capture's RLIMIT_NOFILE (raised to the hard limit)"`
	MaxConnections     int             `json:"max_connections,omitempty" doc:"connections each worker may open (capture --max-connections, else what that limit allows)"`
	ReadCoalesceNs     int64           `json:"read_coalesce_ns,omitempty" doc:"capture's read coalescing window (--read-coalesce): once a connection's reads came less than this apart, a read waited for 1 KiB or this long; absent = every event read as it arrived"`
	Hosts              []Host          `json:"hosts,omitempty" doc:"the host directories a merged run was aggregated from"`
	ClockUncertaintyNs int64           `json:"clock_uncertainty_ns,omitempty" doc:"how far apart the hosts' clocks may be: the sum of the two largest max errors among hosts on different clocks (0 on one clock)"`
	Outages            []Outage        `json:"outages,omitempty" doc:"spans when the target could not be reached, as aggregate finds them in the requests' outcomes (rewritten by every aggregate)"`
	Colocation         *Colocation     `json:"colocation,omitempty" doc:"capture: whether the target shares this host with the client, and what capture did about it"`
	StageUsage         []StageUsage    `json:"stage_usage,omitempty" doc:"capture: per stage, this host's CPU use (/proc/stat) and the coordinator's, read at the stage's boundaries; aggregate adds the workers' (raw/workers.parquet) to judge the client's footprint"`
}

// Colocation is what capture found of the target's place. The rule: a target is co-located
// when an address its host name resolves to is a loopback address or an address of one of this
// host's network interfaces; the server then gets only the CPU the client leaves, so capture
// runs gentler defaults (see the README's operator notes) and aggregate judges whether the
// client disturbed it (schemas.Stage.ServerDisturbed).
type Colocation struct {
	TargetLocal bool           `json:"target_local" doc:"the target's address is this host's (loopback, or an address of one of its interfaces): client and server share the machine"`
	Address     string         `json:"address,omitempty" doc:"the target address (ip:port) that decided"`
	Rule        string         `json:"rule" doc:"why, in words (or why it could not be told)"`
	Server      *ServerProcess `json:"server,omitempty" doc:"the process listening on the target's port, when one could be found (best effort: another user's or another namespace's process is not)"`
	Defaults    []string       `json:"defaults,omitempty" doc:"what capture's defaults did because the target is co-located (each an explicit flag would override)"`
}

// ServerProcess is the process found listening on a co-located target's port.
type ServerProcess struct {
	PID      int    `json:"pid" doc:"its process id"`
	Command  string `json:"command" doc:"its command name"`
	CPUs     string `json:"cpus" doc:"its CPU affinity, in the kernel's list format (0-3)"`
	CPUCount int    `json:"cpu_count" doc:"CPUs in that affinity"`
	Nice     int    `json:"nice" doc:"its nice value"`
}

// StageUsage is one host's CPU use over one stage, read by the capture coordinator when the
// stage began and when the next one began (the last: when the capture ended).
type StageUsage struct {
	Stage            int32 `json:"stage" doc:"stage index"`
	WallNs           int64 `json:"wall_ns" doc:"length of the window"`
	MachineCPUs      int32 `json:"machine_cpus" doc:"the host's online CPUs (/proc/stat)"`
	MachineBusyNs    int64 `json:"machine_busy_ns" doc:"CPU time the host's CPUs were busy in the window, summed over CPUs: machine_total_ns less their idle and iowait time (/proc/stat, which the kernel counts at every idle entry and exit; its busy columns are samples at the clock tick, which miss the short bursts between idle periods), less the keep-awake spinners' time (idle_spin_ns), and never less than client_cpu_ns (idle time and the spinners' are counted in 10 ms units)"`
	MachineTotalNs   int64 `json:"machine_total_ns" doc:"all CPU time of the window: the online CPUs times its wall time; busy / total is the machine's busy share"`
	CoordinatorCPUNs int64 `json:"coordinator_cpu_ns" doc:"user + system CPU time of the capture coordinator (the packet tap's recorder included) in the window"`
	ClientCPUNs      int64 `json:"client_cpu_ns" doc:"user + system CPU time of the whole client in the window: the coordinator's and its worker processes' (/proc/PID/stat while they run, the coordinator's RUSAGE_CHILDREN once they have ended), read at the same moments as the machine's"`
	IdleSpinNs       int64 `json:"idle_spin_ns,omitempty" doc:"CPU time of the --keep-awake spinners (SCHED_IDLE: they give way to any other thread, so it is counted as idle)"`
}

// Clock is what the kernel says of its CLOCK_REALTIME discipline (adjtimex(2), read only), so
// that the bound NTP, chrony or PTP keeps on the clock's error travels with the run.
type Clock struct {
	Source       string    `json:"source" doc:"adjtimex"`
	Synchronized bool      `json:"synchronized" doc:"STA_UNSYNC clear and the call did not return TIME_ERROR"`
	State        string    `json:"state" doc:"adjtimex's return: TIME_OK, TIME_INS, TIME_DEL, TIME_OOP, TIME_WAIT, TIME_ERROR"`
	Status       int32     `json:"status" doc:"the STA_* bits of timex.status"`
	MaxErrorNs   int64     `json:"max_error_ns" doc:"the kernel's maxerror: the daemon's bound on the clock's error, grown by 500 µs a second between updates; 16 s when unsynchronised"`
	EstErrorNs   int64     `json:"est_error_ns" doc:"the kernel's esterror: the daemon's estimate of the error"`
	BootID       string    `json:"boot_id,omitempty" doc:"/proc/sys/kernel/random/boot_id: processes under one running kernel read one clock"`
	ReadAt       time.Time `json:"read_at" doc:"when it was read"`
	Error        string    `json:"error,omitempty" doc:"why the clock could not be read; nothing above is known then"`
}

// Host is one host directory of a merged run.
type Host struct {
	Dir      string `json:"dir" doc:"the RUN directory given to aggregate"`
	Host     string `json:"host" doc:"its host name"`
	Shard    string `json:"shard,omitempty" doc:"i/n; empty when it never captured"`
	Status   string `json:"status" doc:"its manifest's status"`
	Requests int64  `json:"requests" doc:"raw request rows aggregate read from it"`
	Clock    *Clock `json:"clock,omitempty" doc:"its clock discipline"`
	// Colocation is the host's own: each capture host judges its distance to the target.
	Colocation *Colocation `json:"colocation,omitempty" doc:"whether the target shared this host (its manifest's colocation)"`
}

// ParseShard parses a shard "i/n" (0 <= i < n).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("invalid shard %q: want i/n with 0 <= i < n, e.g. 0/2", s)
	}
	return i, n, nil
}

// Outage is a span during which the target could not be reached: requests failed to connect
// (or their connections were reset) and no response byte arrived. How aggregate finds them:
// the "Outages in manifest.json" section of SCHEMAS.md (markdownOutro). Times are
// CLOCK_REALTIME ns, as in the Parquet files.
type Outage struct {
	LastSeenNs   int64            `json:"last_seen_ns,omitempty" doc:"the target's last answer before the outage (absent when none): it went away between this and start_ns"`
	StartNs      int64            `json:"start_ns" doc:"the first failure"`
	EndNs        int64            `json:"end_ns,omitempty" doc:"the first answer after it; absent when none came before the run ended"`
	Back         bool             `json:"back" doc:"whether an answer came after the outage"`
	Requests     int64            `json:"requests" doc:"requests begun in [start_ns, end_ns)"`
	Errors       map[string]int64 `json:"errors" doc:"those of them that failed, by error kind"`
	ResolutionNs int64            `json:"resolution_ns" doc:"the times are multiples of this after the run start"`
}

// String says when the target went away and came back, in UTC to the millisecond, and what
// the requests sent meanwhile recorded: "target unreachable 12:00:03.120 → 12:00:05.300 UTC
// (2.18s; last answer 12:00:03.118): 44 requests, connect 40, reset 4".
func (o Outage) String() string {
	at := func(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000") }
	var b strings.Builder
	var notes []string
	if o.Back {
		fmt.Fprintf(&b, "target unreachable %s → %s UTC", at(o.StartNs), at(o.EndNs))
		notes = append(notes, time.Duration(o.EndNs-o.StartNs).Round(time.Millisecond).String())
	} else {
		fmt.Fprintf(&b, "target unreachable from %s UTC, not back by the end of the run", at(o.StartNs))
	}
	if o.LastSeenNs != 0 {
		notes = append(notes, "last answer "+at(o.LastSeenNs))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	fmt.Fprintf(&b, ": %d requests", o.Requests)
	kinds := make([]string, 0, len(o.Errors))
	for k := range o.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, ", %s %d", k, o.Errors[k])
	}
	return b.String()
}

// RunConfig decodes the run configuration replay stored in the manifest (the zero Config when
// there is none).
func (m *Manifest) RunConfig() (Config, error) {
	var c Config
	if len(m.Config) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(m.Config, &c); err != nil {
		return c, fmt.Errorf("manifest field config: %w", err)
	}
	return c, nil
}

// TapStatus is what the packet tap did during capture.
type TapStatus struct {
	On      bool   `json:"on" doc:"whether the tap ran"`
	Reason  string `json:"reason,omitempty" doc:"why it is off, or what it records"`
	Packets int64  `json:"packets" doc:"segments recorded"`
	Drops   int64  `json:"drops" doc:"packets the kernel dropped because the ring was full"`
}

// StageInfo describes one stage of the load plan.
type StageInfo struct {
	Index       int32   `json:"index" doc:"stage index (the stage column of every file)"`
	Name        string  `json:"name" doc:"stage name"`
	Mode        string  `json:"mode" doc:"open or closed"`
	Arrival     string  `json:"arrival,omitempty" doc:"constant, poisson, gamma or trace (open loop)"`
	Rate        float64 `json:"rate,omitempty" doc:"planned requests per second (open loop)"`
	Burstiness  float64 `json:"burstiness,omitempty" doc:"gamma shape"`
	Concurrency int32   `json:"concurrency,omitempty" doc:"users (closed loop)"`
	OffsetNs    int64   `json:"offset_ns" doc:"stage start relative to the run start"`
	DurationNs  int64   `json:"duration_ns" doc:"planned length; 0 for a closed-loop stage by requests"`
	Requests    int64   `json:"requests" doc:"planned requests"`
	Warmup      bool    `json:"warmup,omitempty" doc:"sent but left out of the stage metrics by default"`
}

// Step records one stage command applied to the run.
type Step struct {
	Name    string    `json:"name" doc:"replay, capture, aggregate or report (StepReplay...)"`
	Args    []string  `json:"args,omitempty" doc:"its command-line arguments"`
	Started time.Time `json:"started" doc:"when it began"`
	Ended   time.Time `json:"ended,omitzero" doc:"when it ended"`
	Status  string    `json:"status" doc:"ok (StepOK), or how it ended: interrupted, failed; capture's: running, then the run's status"`
	Error   string    `json:"error,omitempty" doc:"its error"`
}

// FileEntry is one finished file of the run.
type FileEntry struct {
	Path   string `json:"path" doc:"relative to the run directory"`
	Kind   string `json:"kind" doc:"its Parquet kind (the sections above)"`
	Rows   int64  `json:"rows" doc:"rows written"`
	Worker int32  `json:"worker,omitempty" doc:"the capture worker that wrote it"`
	Part   int32  `json:"part,omitempty" doc:"its part number"`
}

// WorkerStatus records how a worker process ended.
type WorkerStatus struct {
	Worker int32  `json:"worker" doc:"worker number"`
	Shard  int32  `json:"shard" doc:"its host's shard"`
	CPU    int32  `json:"cpu" doc:"the CPU it was pinned to; -1 when not pinned"`
	Exit   string `json:"exit" doc:"ok, exit status 2, signal: killed, ..."`
}

// ReadManifest reads RUN/manifest.json and checks its version.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: %w: manifest is version %d, this wirebench reads version %d", path, ErrVersion, m.SchemaVersion, SchemaVersion)
	}
	return &m, nil
}

// Write writes the manifest atomically, indented for people; on a full disk it uses the run
// directory's reserve (Reserve). Its free text (the steps' arguments and errors, missing) is
// redacted first (redact.String); the config is the caller's to redact (Target.Redacted).
func (m *Manifest) Write(path string) error {
	m.SchemaVersion = SchemaVersion
	for i := range m.Steps {
		m.Steps[i].Args, m.Steps[i].Error = redact.Strings(m.Steps[i].Args), redact.String(m.Steps[i].Error)
	}
	m.Missing = redact.Strings(m.Missing)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return writeRoomy(path, append(b, '\n'))
}

// AddFile records a finished file, replacing an earlier entry for the same path.
func (m *Manifest) AddFile(e FileEntry) {
	for i := range m.Files {
		if m.Files[i].Path == e.Path {
			m.Files[i] = e
			return
		}
	}
	m.Files = append(m.Files, e)
}
