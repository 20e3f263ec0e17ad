package schemas

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Run statuses in manifest.json.
const (
	StatusPlanned     = "planned"     // replay wrote the schedule
	StatusRunning     = "running"     // capture is sending
	StatusComplete    = "complete"    // capture finished every stage
	StatusInterrupted = "interrupted" // stopped by Ctrl-C; finished parts are kept
	StatusFailed      = "failed"      // stopped by an error; finished parts are kept
)

// ManifestName is the manifest's file name inside a run directory.
const ManifestName = "manifest.json"

// Manifest is RUN/manifest.json: what the run is, what made it and which files it holds.
type Manifest struct {
	SchemaVersion int       `json:"schema_version"`
	RunID         string    `json:"run_id"`
	ToolVersion   string    `json:"tool_version"`
	Host          string    `json:"host"`
	CPUs          int       `json:"cpus"`
	ClockSource   string    `json:"clock_source"`
	Created       time.Time `json:"created"`
	StartNs       int64     `json:"start_ns,omitempty"` // capture's common start time (CLOCK_REALTIME)
	Clock         *Clock    `json:"clock,omitempty"`    // the clock discipline of the host that wrote the manifest last (replay, then capture)
	Shard         string    `json:"shard,omitempty"`    // "i/n" for multi-host captures
	// ShardPlanned is how many requests of each stage (by index) this host's shard plans to
	// send, written by capture before it sends: aggregate compares it with what it finds.
	ShardPlanned map[int32]int64 `json:"shard_planned,omitempty"`
	Config       json.RawMessage `json:"config,omitempty"`
	Stages       []StageInfo     `json:"stages"`
	Steps        []Step          `json:"steps"`
	Files        []FileEntry     `json:"files"`
	Workers      []WorkerStatus  `json:"workers,omitempty"`
	Status       string          `json:"status"`
	Missing      []string        `json:"missing,omitempty"` // what the run lacks: dead workers, unfinished parts
	Tap          *TapStatus      `json:"tap,omitempty"`     // the packet tap of capture --tap
	// OpenFilesLimit is capture's RLIMIT_NOFILE (raised to the hard limit), MaxConnections the
	// connections each worker may open (capture --max-connections, else what that limit allows).
	OpenFilesLimit int64 `json:"open_files_limit,omitempty"`
	MaxConnections int   `json:"max_connections,omitempty"`
	// Hosts are the host directories a merged run was aggregated from (several RUNs given to
	// aggregate, or one RUN aggregated into another directory); ClockUncertaintyNs is how far
	// apart their clocks may be: the sum of the two largest max errors among hosts that read
	// different clocks (0 when every host read one clock).
	Hosts              []Host `json:"hosts,omitempty"`
	ClockUncertaintyNs int64  `json:"clock_uncertainty_ns,omitempty"`
	// Outages are the spans during which the target could not be reached, as aggregate finds
	// them in the requests' outcomes (rewritten by every aggregate; absent when none).
	Outages []Outage `json:"outages,omitempty"`
}

// Clock is what the kernel says of its CLOCK_REALTIME discipline (adjtimex(2), read only), so
// that the bound NTP, chrony or PTP keeps on the clock's error travels with the run.
type Clock struct {
	Source       string `json:"source"`       // "adjtimex"
	Synchronized bool   `json:"synchronized"` // STA_UNSYNC clear and the call did not return TIME_ERROR
	State        string `json:"state"`        // adjtimex's return: TIME_OK, TIME_INS, TIME_DEL, TIME_OOP, TIME_WAIT, TIME_ERROR
	Status       int32  `json:"status"`       // the STA_* bits of timex.status
	// MaxErrorNs is the kernel's maxerror: the bound on the clock's error that the
	// synchronisation daemon hands the kernel with each update, which the kernel grows by
	// 500 µs a second between updates; 16 s (the kernel's cap) when unsynchronised.
	MaxErrorNs int64 `json:"max_error_ns"`
	EstErrorNs int64 `json:"est_error_ns"` // the kernel's esterror: the daemon's estimate of the error
	// BootID is /proc/sys/kernel/random/boot_id: processes (containers, network namespaces)
	// under one running kernel read one CLOCK_REALTIME, so their times compare exactly.
	BootID string    `json:"boot_id,omitempty"`
	ReadAt time.Time `json:"read_at"`
	Error  string    `json:"error,omitempty"` // why the clock could not be read; nothing above is known then
}

// Host is one host directory of a merged run.
type Host struct {
	Dir      string `json:"dir"`             // the RUN directory given to aggregate
	Host     string `json:"host"`            // its host name
	Shard    string `json:"shard,omitempty"` // "i/n"; empty when it never captured
	Status   string `json:"status"`          // its manifest's status
	Requests int64  `json:"requests"`        // raw request rows aggregate read from it
	Clock    *Clock `json:"clock,omitempty"`
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
	On      bool   `json:"on"`
	Reason  string `json:"reason,omitempty"` // why it is off, or what it records
	Packets int64  `json:"packets"`          // segments recorded
	Drops   int64  `json:"drops"`            // packets the kernel dropped because the ring was full
}

// StageInfo describes one stage of the load plan.
type StageInfo struct {
	Index       int32   `json:"index"`
	Name        string  `json:"name"`
	Mode        string  `json:"mode"` // open or closed
	Arrival     string  `json:"arrival,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Burstiness  float64 `json:"burstiness,omitempty"`
	Concurrency int32   `json:"concurrency,omitempty"`
	OffsetNs    int64   `json:"offset_ns"`   // stage start relative to the run start
	DurationNs  int64   `json:"duration_ns"` // planned length; closed loop by requests: 0
	Requests    int64   `json:"requests"`
	Warmup      bool    `json:"warmup,omitempty"`
}

// Step records one stage command applied to the run.
type Step struct {
	Name    string    `json:"name"` // replay, capture, aggregate, report
	Args    []string  `json:"args,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
}

// FileEntry is one finished file of the run.
type FileEntry struct {
	Path   string `json:"path"` // relative to the run directory
	Kind   string `json:"kind"`
	Rows   int64  `json:"rows"`
	Worker int32  `json:"worker,omitempty"`
	Part   int32  `json:"part,omitempty"`
}

// WorkerStatus records how a worker process ended.
type WorkerStatus struct {
	Worker int32  `json:"worker"`
	Shard  int32  `json:"shard"`
	CPU    int32  `json:"cpu"`
	Exit   string `json:"exit"` // "ok", "exit status 2", "signal: killed", ...
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
// directory's reserve (Reserve).
func (m *Manifest) Write(path string) error {
	m.SchemaVersion = SchemaVersion
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
