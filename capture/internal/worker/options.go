package worker

import (
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Options are the capture options a user may set, declared once: capture.Config embeds them (as
// capture.Options), the command line's CaptureFlags embeds them (kong reads the flags from the
// tags below), and each worker's Config embeds them (JSON). A zero value means "not given" until
// capture resolves it from the config's capture and target sections and the defaults
// (capture's resolveOptions); after that each field holds the value in force. The config's
// capture section (schemas.CaptureOptions, the file's contract) names its options by the same
// JSON keys as the tags below.
type Options struct {
	MaxInflight    int           `json:"max_inflight" help:"Per-worker cap on requests in flight; a send that waits on it is recorded as lag and counted (0 = capture.max_inflight, else unlimited)." default:"0"`
	Connections    int           `json:"connections" help:"Connections each worker opens and warms before the start (0 = capture.connections, else 64)." default:"0"`
	MaxConnections int           `json:"max_connections" name:"max-connections" help:"Most connections each worker may open (0 = capture.max_connections, else what the open-files limit allows). A request that finds no idle connection dials one and takes whichever connection comes first; at this cap it waits without dialing, and is marked conn_capped." default:"0"`
	KeepText       bool          `json:"keep_text" help:"Store the generated text in raw requests (output_text)."`
	DrainTimeout   time.Duration `json:"drain_timeout" help:"After the first Ctrl-C, wait this long for in-flight requests (0 = capture.drain_timeout, else 30s)." default:"0s"`
	// Timeout is per whole request: nil = target.timeout, else DefaultTimeout; 0 = none.
	Timeout     *time.Duration `json:"timeout" placeholder:"D" help:"End a request (error kind timeout) this long after its send began; 0 = none (default: target.timeout, else 30m)."`
	TTFTTimeout time.Duration  `json:"ttft_timeout" name:"ttft-timeout" help:"End a request (ttft_timeout) whose response body has not begun this long after its send, however far its headers have come (0 = target.ttft_timeout, else 10m)." default:"0s"`
	GapTimeout  time.Duration  `json:"gap_timeout" help:"End a request (gap_timeout) whose headers or body have begun when no byte arrives for this long (0 = target.gap_timeout, else 60s). A cut request keeps its chunks; its connection is closed." default:"0s"`
	// ConnectTimeout bounds each dial; in a worker, 0 = wire.DefaultConnectTimeout.
	ConnectTimeout time.Duration `json:"connect_timeout" help:"Give up a dial (error kind connect) after this long: TCP connect, its SYN retransmissions bounded to match, and TLS handshake (0 = target.connect_timeout, else 10s)." default:"0s"`
	// Watchdog is the coordinator's: it kills a worker silent this long.
	Watchdog     time.Duration `json:"-" help:"Fail the run when a worker that has not finished sends no progress for this long (stopped or hung): it is killed and named (0 = 30s)." default:"0s"`
	PartRows     int           `json:"part_rows" help:"Roll each worker's shard parts after this many chunk rows (0 = capture.part_rows, else 500000)." default:"0"`
	PartInterval time.Duration `json:"part_interval" help:"... or after this long (0 = capture.part_interval, else 10s)." default:"0s"`
	// MemoryBudget bounds the bytes of response state all of a worker's requests in flight hold
	// together (wire.ClientConfig.MemoryBudget): past it a request ends with kind memory_budget.
	MemoryBudget schemas.Bytes `json:"memory_budget" placeholder:"SIZE" help:"Bytes of response state (events at 256 bytes each, text, buffered lines, whole bodies) each worker's requests in flight may hold together, e.g. 1GiB; past it a request ends with error kind memory_budget, never the worker for want of memory (0 = capture.memory_budget, else 256MiB: 1,048,576 events)." default:"0"`
	GOMAXPROCS   int           `json:"gomaxprocs" name:"gomaxprocs" help:"GOMAXPROCS of each worker (0 = 4, see README)." default:"0"`
	// ReadCoalesce is the read coalescing window (wire.ClientConfig.Coalesce); 0 = off; nil =
	// capture's default (capture.ColocatedReadCoalesce beside the server with the tap, else off).
	ReadCoalesce *time.Duration `json:"read_coalesce" name:"read-coalesce" placeholder:"D" help:"Batch the socket reads of fast streams (default: 200us beside the server with the packet tap running, else off): once a connection's reads come less than D apart, a read waits until 1 KiB is queued or D has passed, and takes it all; a read that finds nothing after D goes back to reading each event as it comes. Fewer reads and wake-ups on zero-latency streams, with a read (and its ACK) still every few events; a stream's last bytes are read up to D late (see README). Events read together share one read's time: use it with the packet tap."`
}

// readCoalesce is the read coalescing window in force (0 = off).
func (o *Options) readCoalesce() time.Duration {
	if o.ReadCoalesce == nil {
		return 0
	}
	return *o.ReadCoalesce
}

// timeout is the whole-request timeout in force (0 = none).
func (o *Options) timeout() time.Duration {
	if o.Timeout == nil {
		return 0
	}
	return *o.Timeout
}
