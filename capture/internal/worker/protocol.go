package worker

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/wirebench/wirebench/schemas"
)

// message is one line a worker writes to its stdout for the coordinator.
type Message struct {
	Type     string          `json:"type"` // ready, progress, file, worker, done
	Worker   int             `json:"worker"`
	Planned  int64           `json:"planned,omitempty"`   // ready: requests this worker owns
	Warn     string          `json:"warn,omitempty"`      // ready: warm-up problem
	File     *FileDone       `json:"file,omitempty"`      // file: a finished part
	Row      *schemas.Worker `json:"row,omitempty"`       // worker: one workers.parquet row
	Progress *Progress       `json:"progress,omitempty"`  // progress: once a second
	Sent     int64           `json:"sent,omitempty"`      // done
	Unsent   int64           `json:"unsent,omitempty"`    // done: owned but never sent (stopped)
	Skipped  int64           `json:"skipped,omitempty"`   // done: closed-loop requests after their stage's end
	LateBody int64           `json:"late_body,omitempty"` // done: bodies built on the send path
	Error    string          `json:"error,omitempty"`     // done: why the worker stopped writing (a full disk), else empty
}

// progress is a worker's state, cumulative since the start.
type Progress struct {
	Stage       int32   `json:"stage"` // stage whose clock is running; -1 before the start
	Sent        []int64 `json:"sent"`  // per stage
	Done        []int64 `json:"done"`
	Errors      []int64 `json:"errors"`
	Inflight    int64   `json:"inflight"`
	CPUNs       int64   `json:"cpu_ns"` // user+sys since the process started
	NowNs       int64   `json:"now_ns"`
	TTFT        []byte  `json:"ttft,omitempty"` // HDR histogram (µs) of the current stage, V2 encoded
	FirstSent   int64   `json:"first_sent"`     // requests planned in the first second after the start ...
	FirstOK     int64   `json:"first_ok"`       // ... of those, finished without error
	FirstFailed int64   `json:"first_failed"`   // ... of those, failed
	FirstError  string  `json:"first_error,omitempty"`
	// Live (Config.Live): the stages whose live figures changed since the last progress line,
	// cumulative; ConnsOpen: connections open now.
	Live      map[int32]*LiveStage `json:"live,omitempty"`
	ConnsOpen int64                `json:"conns_open,omitempty"`
}

// control is one line the coordinator writes to a worker's stdin after the config.
type Control struct {
	StartNs int64 `json:"start_ns,omitempty"`
	Stop    bool  `json:"stop,omitempty"`
}

// LineWriter writes JSON lines from several goroutines.
type LineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{enc: json.NewEncoder(w)} }

func (l *LineWriter) send(v any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(v) // a gone coordinator is noticed on stdin
}
